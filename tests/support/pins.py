"""The releases the test setup pins, read from pyproject.toml (one place to bump them)."""

from __future__ import annotations

import re
from pathlib import Path

PYPROJECT = Path(__file__).resolve().parents[2] / "pyproject.toml"


def pinned(dist: str) -> str:
    """The version the core's ``test`` extra pins ``dist`` at (``dist==X.Y.Z``)."""
    found = re.search(rf'"{re.escape(dist)}==([^"]+)"', PYPROJECT.read_text())
    assert found, f"pyproject.toml's test extra pins no {dist} release ({dist}==X.Y.Z)"
    return found.group(1)


def kernels_pin() -> str:
    """The HF ``kernels`` release the differential tests compare against."""
    return pinned("kernels")
