"""Register ``plugin_install``, the marker of the plugin-distribution tests, and build the
wheels of this checkout once per session (``wheels``).

Deselect them with ``-m "not plugin_install"``.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
#: The backend plugins under plugins/ built into wheels beside the core.
BACKENDS = ("mlu", "musa", "npu", "neuron", "tpu")


def pytest_configure(config: pytest.Config) -> None:
    """Declare ``plugin_install``."""
    config.addinivalue_line(
        "markers",
        "plugin_install: builds and installs the plugin distributions under plugins/ into "
        "throw-away folders (slower; runs by default, deselect with -m 'not plugin_install')",
    )


def run(cmd: list[object], **kwargs: object) -> subprocess.CompletedProcess[str]:
    """Run ``cmd`` as a user's shell would: none of this session's PYTHON* or
    KERNEL_PLUGINS* variables, no user site, torch's backend autoload off."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "KERNEL_PLUGINS"))}
    env.update(PYTHONNOUSERSITE="1", TORCH_DEVICE_BACKEND_AUTOLOAD="0")
    env.update(kwargs.pop("env", {}))  # type: ignore[call-overload]
    return subprocess.run([str(c) for c in cmd], capture_output=True, text=True, timeout=600,
                          check=False, env=env, **kwargs)  # type: ignore[call-overload]


@pytest.fixture(scope="session")
def wheels(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The wheels of the core and the backend plugins, by file name."""
    out = tmp_path_factory.mktemp("wheels")
    proc = run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps",
                "--no-build-isolation", "--no-index", "--wheel-dir", out, ROOT,
                *(ROOT / "plugins" / p for p in BACKENDS)])
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return {w.name: w for w in out.glob("*.whl")}


def core_and_mlu(wheels: dict[str, Path]) -> list[Path]:
    """The core's wheel and the mlu plugin's."""
    return [wheels["kernel_plugins-0.1.0-py3-none-any.whl"],
            wheels["kernel_plugins_mlu-0.1.0-py3-none-any.whl"]]


@pytest.fixture(scope="session")
def no_torch_venv(wheels: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh virtual environment without torch into which the core and the four backend
    plugins were installed from their wheels as a user would: with their dependencies, from
    the package index (``pip install kernel_plugins-*.whl kernel_plugins_mlu-*.whl ...``)."""
    venv = tmp_path_factory.mktemp("no-torch") / "venv"
    proc = run([sys.executable, "-m", "venv", "--without-pip", venv])
    assert proc.returncode == 0, proc.stderr
    proc = run([sys.executable, "-m", "pip", "--python", venv / "bin" / "python", "install",
                "--quiet", *wheels.values()])
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return venv
