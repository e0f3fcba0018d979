"""Other releases of a Python package for a child interpreter's path: installed once (without
dependencies) under ``benchmarks/.work/<dist>-<version>`` and reused by every later run."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

WORK = Path(__file__).resolve().parents[2] / "benchmarks" / ".work"


def release(dist: str, version: str) -> Path:
    """The folder holding ``dist==version`` (its package and its ``.dist-info``), for
    ``PYTHONPATH``. A failed install skips the test (fails it under ``CI``)."""
    folder = WORK / f"{dist}-{version}"
    if (folder / f"{dist}-{version}.dist-info").is_dir():
        return folder
    staging = folder.with_name(f"{folder.name}.{os.getpid()}.partial")  # complete before it is named
    shutil.rmtree(staging, ignore_errors=True)
    uv = Path(sys.executable).with_name("uv")  # scripts/setup.sh installs it: a fifth of pip's CPU time
    installer = [str(uv), "pip", "install", "--python", sys.executable] if uv.is_file() else [
        sys.executable, "-m", "pip", "install", "--no-compile", "--disable-pip-version-check"]
    proc = subprocess.run(
        [*installer, "-q", "--no-deps", "--target", str(staging), f"{dist}=={version}"],
        capture_output=True, text=True, timeout=600, check=False,
    )
    if proc.returncode != 0:
        shutil.rmtree(staging, ignore_errors=True)
        problem = f"could not install {dist}=={version} into {folder}: {proc.stderr[-500:]}"
        if os.environ.get("CI"):
            pytest.fail(problem)
        pytest.skip(problem)
    try:
        staging.rename(folder)
    except OSError:  # another worker named its copy first (or a broken one is in the way)
        shutil.rmtree(staging, ignore_errors=True)
    assert (folder / f"{dist}-{version}.dist-info").is_dir(), f"{folder} is incomplete: remove it"
    return folder
