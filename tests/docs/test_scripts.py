"""scripts/: the demo reads as a tour and installs nothing test-only."""

from __future__ import annotations

import inspect
import os
import re
import shutil
import socket
import subprocess
import sys
import threading
import time
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
    # tests: the runtime install plus the core's test and docs extras, in the same pip run
    assert "KP_CORE_EXTRAS=test,docs bash scripts/install.sh" in _code_lines(SCRIPTS / "setup.sh")


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


def _fake_checkout(tmp_path: Path) -> Path:
    """scripts/test.sh in a folder whose setup.sh, ruff, mypy and python only log calls."""
    root = tmp_path / "checkout"
    (root / "scripts").mkdir(parents=True)
    shutil.copy(SCRIPTS / "test.sh", root / "scripts" / "test.sh")
    log = root / "calls.log"
    (root / "scripts" / "setup.sh").write_text(f'echo setup >> "{log}"\n', encoding="utf-8")
    bindir = root / ".venv" / "bin"
    bindir.mkdir(parents=True)
    for tool in ("ruff", "mypy", "python"):
        (bindir / tool).write_text(f'#!/bin/sh\necho "{tool} $*" >> "{log}"\n', encoding="utf-8")
        (bindir / tool).chmod(0o755)
    (bindir / "activate").write_text(f'PATH="{bindir}:$PATH"\n', encoding="utf-8")
    return root


@pytest.mark.parametrize(("env", "installs"), [({}, True), ({"KP_SKIP_SETUP": "1"}, False),
                                                ({"KP_SKIP_SETUP": "1", "CI": "true"}, True)])
def test_test_sh_reruns_without_installing_only_when_asked_and_never_in_ci(
    tmp_path: Path, env: dict[str, str], installs: bool
) -> None:
    root = _fake_checkout(tmp_path)
    base = {k: v for k, v in os.environ.items() if k not in ("CI", "KP_SKIP_SETUP")}
    proc = subprocess.run(["bash", str(root / "scripts" / "test.sh"), "-x", "-k", "cli"],
                          env={**base, **env}, capture_output=True, text=True, timeout=60,
                          check=False)
    assert proc.returncode == 0, proc.stderr
    calls = (root / "calls.log").read_text(encoding="utf-8").splitlines()
    assert ("setup" in calls) is installs
    assert calls[-1] == "python -m pytest -n 2 --dist worksteal --durations=20 tests plugins/*/tests -x -k cli"
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "KP_SKIP_SETUP=1 bash scripts/test.sh" in readme


def test_test_sh_says_each_step_with_what_it_installs(tmp_path: Path) -> None:
    root = _fake_checkout(tmp_path)
    shutil.copy(SCRIPTS / "setup.sh", root / "scripts" / "setup.sh")
    for name in ("install.sh", "install-olah.sh"):
        (root / "scripts" / name).write_text(f'echo "{name}" >> "{root / "calls.log"}"\n')
    apt = root / ".venv" / "bin" / "apt-get"  # the compiler step finds no headers: install nothing
    apt.write_text(f'#!/bin/sh\necho "apt-get $*" >> "{root / "calls.log"}"\n')
    apt.chmod(0o755)
    base = {k: v for k, v in os.environ.items() if k not in ("CI", "KP_SKIP_SETUP")}
    proc = subprocess.run(["bash", str(root / "scripts" / "test.sh")], env=base,
                          capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == 0, proc.stderr
    steps = [line.split("] ", 1)[1] for line in proc.stdout.splitlines()
             if re.match(r"\[\d+m\d+s\] ", line)]
    words = ["torch, the core", "olah", "compilers", "ruff", "mypy", "docs site", "pytest on 2 workers"]
    assert "pinned HF kernels" in steps[0]  # the test extra comes in the same pip run
    assert len(steps) == len(words) and all(w in s for w, s in zip(words, steps, strict=True)), steps


def test_demo_step_5_names_what_its_reference_column_measures() -> None:
    from kernel_plugins_benchmark.report import BenchmarkReport

    heading = next(line for line in _code_lines(SCRIPTS / "demo.sh") if line.startswith('step "5.'))
    assert "torch.relu" in heading and "ref median" in heading
    assert "torch.relu(x)" in (ROOT / "examples" / "relu" / "build" / "torch-cpu" / "__init__.py").read_text()
    assert "ref median" in inspect.getsource(BenchmarkReport.format_table)


def _torch_step(tmp_path: Path, *, torch_installed: bool, index: str) -> tuple[list[str], str]:
    """scripts/install-torch.sh with a ``python`` that logs its pip calls and answers whether
    torch is installed; the index probe runs in the real interpreter."""
    log = tmp_path / "calls.log"
    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "python").write_text(
        "#!/bin/sh\n"
        f'case "$*" in *find_spec*) exit {0 if torch_installed else 1};; '
        f"*'import torch'*) echo 2.4.0; exit 0;; "
        f'-m*) echo "$*" >> "{log}"; exit 0;; esac\n'
        f'exec "{sys.executable}" "$@"\n', encoding="utf-8")
    (bindir / "python").chmod(0o755)
    env = {**os.environ, "PATH": os.pathsep.join([str(bindir), os.environ["PATH"]]),
           "KP_TORCH_CPU_INDEX": index}
    proc = subprocess.run(["bash", str(SCRIPTS / "install-torch.sh")], env=env, text=True,
                          capture_output=True, timeout=60, check=False)
    assert proc.returncode == 0, proc.stderr
    calls = log.read_text(encoding="utf-8").splitlines() if log.exists() else []
    return calls, proc.stdout


def test_the_scripts_keep_an_installed_torch(tmp_path: Path) -> None:
    calls, out = _torch_step(tmp_path, torch_installed=True, index="http://127.0.0.1:9/whl/cpu")
    assert calls == [] and "torch 2.4.0 is installed: kept as it is" in out
    assert "bash scripts/install-torch.sh" in _code_lines(SCRIPTS / "install.sh")
    assert "torch" not in "\n".join(_code_lines(SCRIPTS / "install.sh")).replace(
        "install-torch.sh", "")  # nothing else there installs torch


def test_the_scripts_install_the_cpu_build_from_the_pytorch_index(tmp_path: Path) -> None:
    from functools import partial
    from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer

    (tmp_path / "whl" / "cpu" / "torch").mkdir(parents=True)
    (tmp_path / "whl" / "cpu" / "torch" / "index.html").write_text("<html></html>")
    quiet = type("Quiet", (SimpleHTTPRequestHandler,), {"log_message": lambda *a: None})
    with ThreadingHTTPServer(("127.0.0.1", 0), partial(quiet, directory=str(tmp_path))) as server:
        threading.Thread(target=server.serve_forever, daemon=True).start()
        index = f"http://127.0.0.1:{server.server_address[1]}/whl/cpu"
        calls, _ = _torch_step(tmp_path, torch_installed=False, index=index)
        server.shutdown()
    assert calls == [f"-m pip install -q torch==2.13.0 --index-url {index}"]
    text = (SCRIPTS / "install-torch.sh").read_text(encoding="utf-8")
    assert "INDEX=${KP_TORCH_CPU_INDEX:-https://download.pytorch.org/whl/cpu}" in text


def test_an_unreachable_pytorch_index_falls_back_quickly(tmp_path: Path) -> None:
    with socket.socket() as silent:  # accepts connections, never answers
        silent.bind(("127.0.0.1", 0))
        silent.listen(4)
        start = time.monotonic()
        calls, out = _torch_step(tmp_path, torch_installed=False,
                                 index=f"http://127.0.0.1:{silent.getsockname()[1]}/whl/cpu")
        waited = time.monotonic() - start
    assert calls == ["-m pip install -q torch==2.13.0"]  # the configured package index
    assert "cannot be reached" in out
    assert waited < 15, waited  # the probe gives up after 3 seconds
