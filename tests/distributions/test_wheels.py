"""The six wheels, built from this checkout, and installed the README's way.

Builds the core and the five plugins with ``pip wheel``, creates a fresh virtual
environment, and installs the core and one plugin from the wheels into it. torch and the
core's other dependencies are reused from this environment through a path file that
points at a mirror of its site-packages without any kernel-plugins distribution (so
nothing of the checkout leaks in); everything kernel-plugins itself comes from the wheels.
"""

from __future__ import annotations

import json
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from .conftest import run
from .test_plugin_distributions import PLUGINS, ROOT, _clean_site

pytestmark = pytest.mark.plugin_install

CORE_WHEEL = "kernel_plugins-0.1.0-py3-none-any.whl"


def _run(cmd: list[object], **kwargs: object) -> subprocess.CompletedProcess[str]:
    return run(cmd, env={"HF_HUB_OFFLINE": "1"}, **kwargs)


@pytest.fixture(scope="module")
def venv(wheels: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh venv with the core and the mlu plugin installed from their wheels."""
    root = tmp_path_factory.mktemp("fresh")
    venv = root / "venv"
    proc = _run([sys.executable, "-m", "venv", "--without-pip", venv])
    assert proc.returncode == 0, proc.stderr
    python = venv / "bin" / "python"
    purelib = _run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"])
    mirror = _clean_site(root / "deps")
    (Path(purelib.stdout.strip()) / "kp_test_dependencies.pth").write_text(f"{mirror}\n")
    proc = _run([sys.executable, "-m", "pip", "--python", python, "install", "--quiet",
                 "--no-deps", "--no-index", wheels[CORE_WHEEL],
                 wheels["kernel_plugins_mlu-0.1.0-py3-none-any.whl"]])
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return venv


def test_six_wheels_with_their_entry_points(wheels: dict[str, Path]) -> None:
    assert set(wheels) == {CORE_WHEEL, *(f"kernel_plugins_{p}-0.1.0-py3-none-any.whl"
                                         for p in PLUGINS)}
    for plugin in PLUGINS:
        with zipfile.ZipFile(wheels[f"kernel_plugins_{plugin}-0.1.0-py3-none-any.whl"]) as z:
            info = f"kernel_plugins_{plugin}-0.1.0.dist-info"
            entry_points = z.read(f"{info}/entry_points.txt").decode()
            metadata = z.read(f"{info}/METADATA").decode()
            names = z.namelist()
        assert f"{plugin} = kernel_plugins_{plugin}.hooks" in entry_points
        assert "Requires-Dist: kernel-plugins<0.2,>=0.1" in metadata  # the README's pinning
        assert f"kernel_plugins_{plugin}/hooks.py" in names
        assert not [n for n in names if n.startswith("tests/")]


def test_core_and_one_plugin_from_wheels(venv: Path) -> None:
    bin_dir = venv / "bin"
    version = _run([bin_dir / "kernel-plugins", "--version"])
    assert version.returncode == 0 and version.stdout.strip() == "kernel-plugins 0.1.0"
    where = _run([bin_dir / "python", "-c",
                  "import kernel_plugins, kernel_plugins_mlu;"
                  "print(kernel_plugins.__file__); print(kernel_plugins_mlu.__file__)"])
    assert where.returncode == 0, where.stderr
    for path in where.stdout.split():
        assert Path(path).is_relative_to(venv) and not Path(path).is_relative_to(ROOT), path
    listing = _run([bin_dir / "kernel-plugins", "list-backends", "--json"], cwd=venv)
    assert listing.returncode == 0, listing.stderr
    rows = {r["name"]: r for r in json.loads(listing.stdout)["backends"]}
    assert set(PLUGINS) & set(rows) == {"mlu"}
    assert (rows["mlu"]["distribution"], rows["mlu"]["status"]) == ("kernel-plugins-mlu",
                                                                    "no device")
    assert rows["mlu"]["reason"] == "torch_mlu (the Cambricon MLU extension) is not installed"
    check = _run([sys.executable, "-m", "pip", "--python", bin_dir / "python", "check"])
    assert check.returncode == 0, check.stdout + check.stderr
