"""Every hookspec is documented in one fixed order and listed in docs/writing-a-backend.md."""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import pytest

from kernel_plugins import hookspecs

GUIDE = (Path(__file__).resolve().parents[2] / "docs" / "writing-a-backend.md").read_text()
SPECS = [
    (name, fn)
    for name, fn in vars(hookspecs).items()
    if callable(fn) and hasattr(fn, f"{hookspecs.PROJECT_NAME}_spec")
]


def test_there_are_hookspecs():
    assert {"backend_spec", "detect_device", "list_variants", "load_kernel"} <= {n for n, _ in SPECS}


@pytest.mark.parametrize("name,fn", SPECS, ids=[n for n, _ in SPECS])
def test_docstring_sections_in_order(name, fn):
    doc = inspect.getdoc(fn) or ""
    summary = doc.split("\n", 1)[0]
    assert summary and summary.endswith("."), f"{name}: first line must be a one-line summary"
    markers = ["**When:**", "**Calling convention:**"]
    markers += [f":param {p}:" for p in inspect.signature(fn).parameters]
    markers += [":return:", "Example::"]
    positions = [doc.find(m) for m in markers]
    missing = [m for m, p in zip(markers, positions, strict=True) if p < 0]
    assert not missing, f"{name}: docstring lacks {missing}"
    assert positions == sorted(positions), f"{name}: sections out of order {markers}"


@pytest.mark.parametrize("name,fn", SPECS, ids=[n for n, _ in SPECS])
def test_hook_is_in_readme_table(name, fn):
    assert re.search(rf"^\| `{name}\(", GUIDE, re.M), f"the guide's hook table lacks {name}"
