"""docs/writing-a-backend.md, followed literally: a sixth backend that passes the suite.

Every code block of the guide that starts with ``# file: <path>`` is written to a
temporary folder; the package is installed with pip into a separate target folder
(a real install, so the core discovers it through its entry point, and nothing is
left in the running environment), then its own tests (the conformance suite) run in
a child pytest with that folder on the path.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.forks import python_c

pytestmark = pytest.mark.plugin_install

GUIDE = Path(__file__).resolve().parents[2] / "docs" / "writing-a-backend.md"
_BLOCK_RE = re.compile(r"^```[a-z]*\n# file: (?P<path>\S+)\n(?P<body>.*?)^```", re.M | re.S)


def guide_files() -> dict[str, str]:
    """The files the guide writes, by relative path."""
    text = GUIDE.read_text(encoding="utf-8")
    return {m.group("path"): m.group("body") for m in _BLOCK_RE.finditer(text)}


def test_the_guide_writes_a_whole_plugin() -> None:
    assert set(guide_files()) == {
        "pyproject.toml",
        "src/kernel_plugins_acme/__init__.py",
        "src/kernel_plugins_acme/hooks.py",
        "tests/test_acme_plugin.py",
        "tests/acme_scenario.py",
        "tests/test_acme_emulated.py",
    }


def test_the_hooks_module_is_about_fifty_lines() -> None:
    """Facts and emulation data together, with no hand-written hook and no test code."""
    text = guide_files()["src/kernel_plugins_acme/hooks.py"]
    assert len(text.splitlines()) <= 50
    assert "kernel_plugins_testing" not in text and "@hookimpl" not in text


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """The guide's plugin built and installed into a target folder; the child env."""
    root = tmp_path_factory.mktemp("guide")
    project = root / "kernel-plugins-acme"
    for rel, body in guide_files().items():
        path = project / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(body, encoding="utf-8")
    site = root / "site"
    proc = subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation",
         "--no-index", "--target", str(site), str(project)],
        capture_output=True, text=True, timeout=300, check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (site / "kernel_plugins_acme" / "hooks.py").is_file()
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(site), env.get("PYTHONPATH")]))
    env["root"] = str(root)
    return env


def test_the_installed_plugin_is_discovered(installed: dict[str, str]) -> None:
    proc = python_c(  # python -m kernel_plugins.cli list-backends --json
        "import runpy; runpy.run_module('kernel_plugins.cli', run_name='__main__')", "list-backends", "--json",
        env={**installed, "KERNEL_PLUGINS_STRICT": "1"},  # a broken plugin is an error
        cwd=installed["root"], timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    rows = {row["name"]: row for row in json.loads(proc.stdout)["backends"]}
    assert rows["acme"]["display_name"] == "Acme AX"
    assert rows["acme"]["distribution"] == "kernel-plugins-acme"


def test_the_plugin_passes_the_conformance_suite(installed: dict[str, str]) -> None:
    project = Path(installed["root"]) / "kernel-plugins-acme"
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "tests", "-q", "-p", "no:cacheprovider", "-rfE"],
        capture_output=True, text=True, timeout=600, env=installed, check=False, cwd=project,
    )
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    passed = re.search(r"(\d+) passed", proc.stdout)
    assert passed is not None and int(passed.group(1)) >= 17, proc.stdout[-2000:]
    assert "skipped" not in proc.stdout.splitlines()[-1], proc.stdout[-2000:]


def _setup_commands() -> list[str]:
    """The commands of the guide's section 1 (What you need), one per line."""
    section = GUIDE.read_text(encoding="utf-8").split("## 1.", 1)[1].split("\n## ", 1)[0]
    block = re.search(r"```bash\n(.*?)```", section, re.S)
    assert block is not None
    return [line.split("#", 1)[0].strip() for line in block.group(1).splitlines()]


def test_the_guide_installs_the_cpu_torch_and_pytest_before_the_tests_run() -> None:
    commands = _setup_commands()
    torch = [c for c in commands if re.search(r"pip install torch\b", c)]
    # from PyPI a plain torch on Linux is the multi-GB CUDA build
    assert torch == ["pip install torch==2.13.0 --index-url https://download.pytorch.org/whl/cpu"]
    testing = next(c for c in commands if "plugins/testing" in c)
    extra = re.search(r"plugins/testing\[(\w+)\]", testing)
    assert extra is not None, testing  # section 7 runs python -m pytest
    import tomllib

    project = tomllib.loads((GUIDE.parents[1] / "plugins" / "testing" / "pyproject.toml").read_text())
    assert any(r.startswith("pytest") for r in project["project"]["optional-dependencies"][extra.group(1)])
