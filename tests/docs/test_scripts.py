"""scripts/: the demo reads as a tour and installs nothing test-only."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = ROOT / "scripts"
TEST_ONLY = ("olah", "mypy", "ruff", "pytest", "hypothesis", "[test]", "setup.sh")


def _code_lines(path: Path) -> list[str]:
    return [line.strip() for line in path.read_text(encoding="utf-8").splitlines()
            if line.strip() and not line.strip().startswith("#")]


def test_the_demo_installs_only_runtime_needs() -> None:
    for script in ("demo.sh", "install.sh"):
        code = "\n".join(_code_lines(SCRIPTS / script))
        assert not [word for word in TEST_ONLY if word in code], script
    assert "bash scripts/install.sh" in _code_lines(SCRIPTS / "demo.sh")
    assert "bash scripts/install.sh" in _code_lines(SCRIPTS / "setup.sh")  # tests: runtime + test


def test_every_demo_step_has_a_heading() -> None:
    lines = _code_lines(SCRIPTS / "demo.sh")
    commands = [i for i, line in enumerate(lines) if line.startswith(("kernel-plugins", "bash "))]
    assert len(commands) >= 6
    for i in commands:
        assert lines[i - 1].startswith('step "'), f"no heading before {lines[i]!r}"


def test_the_demo_runs_as_a_tour() -> None:
    bindir = Path(sys.executable).parent
    if not (ROOT / ".venv" / "bin" / "activate").is_file() and not shutil.which(
        "kernel-plugins", path=str(bindir)
    ):
        need = (f"the demo runs in ./.venv (bash scripts/install.sh) or with the kernel-plugins "
                f"command installed beside {sys.executable} (pip install -e '.[test]')")
        if os.environ.get("CI"):
            pytest.fail(f"CI is set, so it must not be skipped: {need}", pytrace=False)
        pytest.skip(need)
    env = {**os.environ, "DEMO_SKIP_INSTALL": "1",
           "PATH": os.pathsep.join([str(bindir), os.environ["PATH"]])}
    proc = subprocess.run(["bash", str(SCRIPTS / "demo.sh")], capture_output=True, text=True,
                          env=env, timeout=600, check=False)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    headings = re.findall(r"^== (\d)\. ", proc.stdout, re.M)
    assert headings == ["2", "3", "4", "5", "6"]
    assert "Traceback" not in proc.stdout + proc.stderr
    tour = proc.stdout.split("\n== ")
    assert "available (EMULATED)" in tour[-1] and "chosen: torch-cpu" in tour[2]
