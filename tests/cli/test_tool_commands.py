"""``check`` and ``benchmark`` ship in tool distributions: with them the commands run, without
them the command line still lists the commands and says which distribution to install."""

from __future__ import annotations

import subprocess
import sys

import pytest

from kernel_plugins.cli.main import TOOL_COMMANDS

_CLI = """
import contextlib, io, sys
sys.modules[{hidden!r}] = None  # as if the distribution were not installed
from kernel_plugins.cli.main import main
err, out = io.StringIO(), io.StringIO()
with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
    try:
        code = main({argv!r})
    except SystemExit as e:
        code = e.code
print(code)
print(out.getvalue())
print(err.getvalue())
"""


def _run(hidden: str, argv: list[str]) -> tuple[int, str]:
    proc = subprocess.run(
        [sys.executable, "-c", _CLI.format(hidden=hidden, argv=argv)],
        capture_output=True, text=True, timeout=120, check=False,
    )
    assert proc.returncode == 0, proc.stderr
    code, _, rest = proc.stdout.partition("\n")
    return int(code), rest


@pytest.mark.parametrize("command", sorted(TOOL_COMMANDS))
def test_a_missing_tool_names_its_distribution(command: str) -> None:
    module, distribution, _ = TOOL_COMMANDS[command]
    code, text = _run(module.partition(".")[0], [command, "./examples/relu", "--json"])
    assert code == 1, text
    assert f"pip install {distribution}" in text and "Traceback" not in text
    code, text = _run(module.partition(".")[0], [command, "--help"])  # said before --help
    assert code == 1 and f"pip install ./plugins/{command}" in text, text
    code, text = _run(module.partition(".")[0], ["--help"])
    assert code == 0 and f"(needs {distribution})" in " ".join(text.split())


def test_an_installed_tool_runs_its_command() -> None:
    code, text = _run("not_a_tool", ["check", "./examples/relu"])
    assert code == 0 and "ok: no problems" in text, text
