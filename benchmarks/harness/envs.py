"""The suite's virtual environments, created under ``benchmarks/.work/`` (gitignored).

* ``venv-kernel-plugins``: torch, numpy, kernel-plugins (editable, this checkout) and every
  backend plugin under ``plugins/`` (so ``list-backends`` sees the five plugins).
* ``venv-kernels``: torch, numpy and the ``kernels`` package from PyPI at :data:`KERNELS_PIN`.
* ``venv-plot``: matplotlib, only when the running interpreter has none (for the chart).

The two measured environments get the same torch and numpy, so neither package is
advantaged by what else is installed. Creation is idempotent: an environment whose marker
file matches its requirements is reused.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import venv
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "KERNELS_PIN",
    "TORCH_PIN",
    "REPO_ROOT",
    "WORK",
    "Env",
    "ensure_envs",
    "ensure_kernels_env",
    "find_envs",
    "plot_python",
]

def _kernels_pin() -> str:
    """The ``kernels`` release pinned in the core's ``test`` extra (pyproject.toml): one pin
    for the test suite (which imports it from ``.venv``) and the benchmarks."""
    text = (Path(__file__).resolve().parents[2] / "pyproject.toml").read_text()
    found = re.search(r'"kernels==([^"]+)"', text)
    if found is None:
        raise RuntimeError("pyproject.toml's test extra pins no kernels release (kernels==X.Y.Z)")
    return found.group(1)


#: The ``kernels`` release compared against (PyPI), pinned once in pyproject.toml.
KERNELS_PIN = _kernels_pin()
#: The torch both environments get (a local wheel on this project's machines).
TORCH_PIN = "2.13.0"
REPO_ROOT = Path(__file__).resolve().parents[2]
WORK = REPO_ROOT / "benchmarks" / ".work"
_MARKER = "bench-env.json"


@dataclass(frozen=True)
class Env:
    """One measured environment.

    Attributes:
        package: ``kernel_plugins`` or ``kernels``. python: its interpreter.
        version: the package version. where: a short description for the report.
    """

    package: str
    python: Path
    version: str | None
    where: str

    def bin(self, name: str) -> Path:
        """A console script of this environment (``kernel-plugins``)."""
        return self.python.parent / name


def _python(venv_dir: Path) -> Path:
    return venv_dir / ("Scripts/python.exe" if os.name == "nt" else "bin/python")


def _pip(python: Path, *args: str, log: Path) -> None:
    with open(log, "ab") as out:
        done = subprocess.run(
            [str(python), "-m", "pip", "install", "--disable-pip-version-check", *args],
            stdout=out,
            stderr=subprocess.STDOUT,
            check=False,
        )
    if done.returncode != 0:
        raise RuntimeError(f"pip install {' '.join(args)} failed; see {log}")


def _version(python: Path, dist: str) -> str | None:
    code = f"from importlib.metadata import version; print(version({dist!r}))"
    done = subprocess.run([str(python), "-c", code], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        return None
    return done.stdout.strip() or None


def _plugins() -> list[Path]:
    return sorted(p for p in (REPO_ROOT / "plugins").glob("*") if (p / "pyproject.toml").is_file())


def _requirements(package: str) -> dict[str, object]:
    if package == "kernels":
        return {"torch": TORCH_PIN, "kernels": KERNELS_PIN}
    return {"torch": TORCH_PIN, "plugins": [p.name for p in _plugins()]}


def _create(venv_dir: Path, package: str, say: Callable[[str], object]) -> None:
    log = WORK / f"{venv_dir.name}.log"
    say(f"creating {venv_dir} (log: {log}); this takes a minute or two")
    venv.EnvBuilder(with_pip=True, clear=True).create(venv_dir)
    python = _python(venv_dir)
    _pip(python, f"torch=={TORCH_PIN}", "numpy", log=log)
    if package == "kernels":
        _pip(python, f"kernels=={KERNELS_PIN}", log=log)
    else:
        args = ["-e", str(REPO_ROOT)]
        for plugin in _plugins():
            args += ["-e", str(plugin)]
        _pip(python, *args, log=log)
    (venv_dir / _MARKER).write_text(json.dumps(_requirements(package)))


def _ready(venv_dir: Path, package: str) -> bool:
    marker = venv_dir / _MARKER
    if not marker.is_file() or not _python(venv_dir).is_file():
        return False
    try:
        return json.loads(marker.read_text()) == _requirements(package)
    except ValueError:
        return False


def _env(package: str, python: Path, where: str) -> Env:
    dist = "kernels" if package == "kernels" else "kernel-plugins"
    return Env(package, python, _version(python, dist), where)


def find_envs(*, current_for_kernel_plugins: bool) -> tuple[Env | None, Env | None]:
    """The environments that exist now, without creating anything.

    :param current_for_kernel_plugins: measure kernel-plugins with this interpreter (quick
        mode) instead of ``venv-kernel-plugins``.
    :return: ``(kernel_plugins_env, kernels_env)``; an entry is None when it is missing.
    """
    if current_for_kernel_plugins:
        kp: Env | None = _env("kernel_plugins", Path(sys.executable), "the running interpreter")
    else:
        d = WORK / "venv-kernel-plugins"
        kp = _env("kernel_plugins", _python(d), str(d)) if _ready(d, "kernel_plugins") else None
    d = WORK / "venv-kernels"
    kn = _env("kernels", _python(d), str(d)) if _ready(d, "kernels") else None
    if kn is not None and kn.version != KERNELS_PIN:
        kn = None
    return kp, kn


def ensure_envs(say: Callable[[str], object] = print) -> tuple[Env, Env]:
    """Create (or reuse) both measured environments; return ``(kernel_plugins, kernels)``."""
    WORK.mkdir(parents=True, exist_ok=True)
    for package, name in (("kernel_plugins", "venv-kernel-plugins"), ("kernels", "venv-kernels")):
        d = WORK / name
        if not _ready(d, package):
            _create(d, package, say)
    kp, kn = find_envs(current_for_kernel_plugins=False)
    assert kp is not None and kn is not None
    return kp, kn


def ensure_kernels_env(say: Callable[[str], object] = print) -> Env:
    """Create (or reuse) only ``venv-kernels`` (torch and ``kernels`` at :data:`KERNELS_PIN`)."""
    WORK.mkdir(parents=True, exist_ok=True)
    d = WORK / "venv-kernels"
    if not _ready(d, "kernels"):
        _create(d, "kernels", say)
    _, kn = find_envs(current_for_kernel_plugins=True)
    if kn is None:
        raise RuntimeError(f"{d} was created but does not hold kernels=={KERNELS_PIN}")
    return kn


def plot_python(*, create: bool, say: Callable[[str], object] = print) -> Path | None:
    """An interpreter with matplotlib: this one, else ``venv-plot`` (created when asked)."""
    import importlib.util

    if importlib.util.find_spec("matplotlib") is not None:
        return Path(sys.executable)
    d = WORK / "venv-plot"
    python = _python(d)
    if python.is_file() and _version(python, "matplotlib"):
        return python
    if not create:
        return None
    WORK.mkdir(parents=True, exist_ok=True)
    say(f"creating {d} for the chart (matplotlib)")
    venv.EnvBuilder(with_pip=True, clear=True).create(d)
    try:
        _pip(python, "matplotlib", log=WORK / "venv-plot.log")
    except RuntimeError as e:
        say(f"no chart: {e}")
        return None
    return python
