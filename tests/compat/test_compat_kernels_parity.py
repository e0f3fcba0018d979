"""The compat module against the installed HF ``kernels`` release (the pinned one): the same
public names, and the same signatures (parameter names, kinds and defaults) for every public
function, class and public method, except the intended differences that
``docs/differences.md`` lists in its section on the kernels API. A new parameter in the next
release, or a difference nobody documented, fails here; so does a documented one that is gone.
"""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import pytest

import kernel_plugins.compat.kernels as ours
from tests.support.pins import kernels_pin

kernels = pytest.importorskip("kernels", reason=f"needs HF kernels=={kernels_pin()} (the test extra)")

DOC = Path(__file__).resolve().parents[2] / "docs" / "differences.md"
SECTION = "## The kernels API (`kernel_plugins.compat.kernels`)"


def documented() -> set[tuple[str, str]]:
    """``(name, parameter)`` for each row of the docs table (a cell may name several)."""
    text = DOC.read_text()
    assert SECTION in text, f"{DOC} lost its section {SECTION!r}"
    rows = text.split(SECTION, 1)[1].split("\n## ", 1)[0].splitlines()
    out = set()
    for row in rows:
        cells = [c.strip() for c in row.strip().strip("|").split("|")]
        if len(cells) < 2 or not cells[0].startswith("`"):
            continue
        for name in re.findall(r"`([^`]+)`", cells[0]):
            out |= {(name, p) for p in re.findall(r"`([^`]+)`|(\(\w+\))", cells[1]) for p in p if p}
    return out


def _params(obj: object) -> tuple[list[str], dict[str, tuple[str, object]]] | None:
    try:
        sig = inspect.signature(obj)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None
    params = [p for p in sig.parameters.values() if p.name != "self"]
    positional = [p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return positional, {p.name: (p.kind.name, p.default) for p in params}


def _compare(name: str, theirs: object, mine: object) -> set[tuple[str, str]]:
    """The parameters of ``mine`` that differ from ``theirs`` (kind, default, presence), and
    ``(positions)`` when the positional ones come in another order."""
    t, m = _params(theirs), _params(mine)
    if t is None or m is None:
        return set() if (t is None) == (m is None) else {(name, "(signature)")}
    out = {(name, "(positions)")} if [p for p in t[0] if p in m[0]] != [p for p in m[0] if p in t[0]] else set()
    for p in t[1].keys() | m[1].keys():
        a, b = t[1].get(p), m[1].get(p)
        if a is None or b is None or a[0] != b[0] or not (a[1] is b[1] or a[1] == b[1] or repr(a[1]) == repr(b[1])):
            out.add((name, p))
    return out


def _public_methods(cls: type) -> set[str]:
    """Public attributes ``cls`` gets from kernels itself (not from object, Enum, nn.Module...)."""
    inherited = set().union(*(dir(b) for b in cls.__mro__[1:] if not b.__module__.startswith("kernels")))
    return {n for n in dir(cls) if not n.startswith("_") and n not in inherited}


_NO = object()


def differences() -> set[tuple[str, str]]:
    out = set()
    theirs_all, ours_all = set(kernels.__all__), set(ours.__all__)
    out |= {(n, "(missing)") for n in theirs_all - ours_all} | {(n, "(extra)") for n in ours_all - theirs_all}
    for name in sorted(theirs_all & ours_all - {"__version__"}):
        theirs, mine = getattr(kernels, name), getattr(ours, name)
        if not callable(theirs) or isinstance(theirs, type) and issubclass(theirs, __import__("enum").Enum):
            continue
        out |= _compare(name, theirs, mine)
        if isinstance(theirs, type):
            for meth in _public_methods(theirs):
                t_attr, m_attr = inspect.getattr_static(theirs, meth), inspect.getattr_static(mine, meth, _NO)
                if m_attr is _NO:
                    out.add((f"{name}.{meth}", "(missing)"))
                elif callable(getattr(theirs, meth)) and not isinstance(t_attr, property):
                    out |= _compare(f"{name}.{meth}", getattr(theirs, meth), getattr(mine, meth))
    return out


def test_the_installed_kernels_is_the_pinned_release_and_our_api_level():
    assert kernels.__version__ == kernels_pin() == ours.__version__


def test_every_public_name_and_signature_matches_kernels_but_the_documented_differences():
    found, listed = differences(), documented()
    assert found - listed == set(), f"differences from kernels {kernels.__version__} not in {DOC.name}"
    assert listed - found == set(), f"{DOC.name} lists differences that are gone"


def test_the_comparison_sees_what_it_must():
    """The comparison itself: a renamed, a new, a re-defaulted and a re-kinded parameter,
    reordered positions, a missing method."""

    def f(a, b=1, *, c=True):  # noqa: ANN001, ANN202
        ...

    def g(b, a=1, *, c=False, d=None):  # noqa: ANN001, ANN202
        ...

    assert _compare("f", f, g) == {("f", "(positions)"), ("f", "a"), ("f", "b"), ("f", "c"), ("f", "d")}
    assert _compare("f", f, f) == set()
    rows = documented()
    assert ("get_locked_kernel", "backend") in rows and ("CUDAProperties.validate", "(missing)") in rows
