"""Records (``kernel_plugins._record``) behave as the dataclasses they replace, and compile nothing."""

from __future__ import annotations

import builtins
import copy
import dataclasses
import inspect
import pickle
import re
from pathlib import Path

import pytest

from kernel_plugins._record import KW_ONLY, field, record


def _define(decorate):  # the same class body under either decorator
    @decorate
    class Point:
        """A point."""

        x: int
        y: int = 0
        tags: list[str] = field(default_factory=list, hash=False)
        note: str = field(default="", compare=False, repr=False)
        _: KW_ONLY
        label: str = "p"

    return Point


DATACLASS = _define(dataclasses.dataclass(frozen=True))
RECORD = _define(record)


@pytest.fixture(params=[DATACLASS, RECORD], ids=["dataclass", "record"])
def both(request):
    return request.param


def test_a_record_builds_compares_hashes_and_shows_itself_as_the_dataclass_does() -> None:
    for args, kwargs in [((1,), {}), ((1, 2), {"label": "q", "note": "n"}), ((), {"x": 3, "tags": ["a"]})]:
        want, got = DATACLASS(*args, **kwargs), RECORD(*args, **kwargs)
        assert dataclasses.asdict(got) == dataclasses.asdict(want)
        assert repr(got) == repr(want)  # note is not shown
    assert RECORD(1, 2) == RECORD(1, 2, note="other")  # note is not compared
    assert RECORD(1, 2) != RECORD(1, 3) and RECORD(1) != DATACLASS(1)
    assert hash(RECORD(1, 2, note="a")) == hash(RECORD(1, 2, note="b"))
    assert len({RECORD(5), RECORD(5)}) == 1


def test_an_instance_never_equals_one_of_a_subclass_with_the_same_fields(both) -> None:
    sub = type("Sub", (both,), {"__doc__": "The same fields."})
    assert both(1) != sub(1) and sub(1) != both(1) and not both(1) == sub(1)  # noqa: SIM201
    assert sub(1) == sub(1) and both(1) == both(1)


def test_a_record_has_the_dataclass_signature() -> None:
    assert str(inspect.signature(RECORD)) == str(inspect.signature(DATACLASS))
    assert list(inspect.signature(RECORD).parameters) == ["x", "y", "tags", "note", "label"]
    assert inspect.signature(RECORD).parameters["label"].kind is inspect.Parameter.KEYWORD_ONLY


def test_defaults_are_fresh_and_helpers_of_dataclasses_work(both) -> None:
    a, b = both(1), both(1)
    assert a.tags == [] and a.tags is not b.tags
    moved = dataclasses.replace(a, y=7)
    assert (moved.x, moved.y, type(moved)) == (1, 7, both)
    assert [f.name for f in dataclasses.fields(both)] == ["x", "y", "tags", "note", "label"]
    assert dataclasses.is_dataclass(both(1))
    assert copy.deepcopy(both(1, tags=["t"])) == both(1, tags=["t"])


def test_a_record_of_the_core_pickles() -> None:
    from kernel_plugins.device import PyDepend

    dep = PyDepend("apache-tvm-ffi", "tvm_ffi")
    assert pickle.loads(pickle.dumps(dep)) == dep and dep == copy.copy(dep)


@pytest.mark.parametrize("args, kwargs, error", [
    ((), {}, "missing .*'x'"),
    ((1, 2, [], "n", "extra"), {}, "positional argument"),
    ((1,), {"x": 2}, "multiple values for argument 'x'"),
    ((1,), {"z": 2}, "unexpected keyword argument 'z'"),
    ((1, 2, [], "n"), {"label": 1, "lable": 2}, "unexpected keyword argument 'lable'"),
])
def test_wrong_arguments_are_refused_as_a_dataclass_refuses_them(both, args, kwargs, error) -> None:
    with pytest.raises(TypeError, match=error):
        both(*args, **kwargs)


def test_a_frozen_record_cannot_be_changed(both) -> None:
    p = both(1)
    with pytest.raises(dataclasses.FrozenInstanceError):
        p.x = 2
    with pytest.raises(dataclasses.FrozenInstanceError):
        del p.y
    assert p.x == 1


def test_post_init_own_methods_mutable_records_and_identity_records() -> None:
    @record
    class Checked:
        """Runs a check after init, keeps its own repr."""

        n: int

        def __post_init__(self) -> None:
            if self.n < 0:
                raise ValueError("n must not be negative")

        def __repr__(self) -> str:
            return f"<{self.n}>"

    with pytest.raises(ValueError, match="negative"):
        Checked(-1)
    assert repr(Checked(2)) == "<2>"

    @record(frozen=False)
    class Counter:
        """Mutable: assignable and, as a dataclass with eq, unhashable."""

        n: int = 0

    c = Counter()
    c.n += 1
    assert c == Counter(1)
    with pytest.raises(TypeError, match="unhashable"):
        hash(c)

    @record(eq=False, kw_only=True)
    class Plugin:
        """Compared by identity."""

        name: str

    with pytest.raises(TypeError, match="positional"):
        Plugin("a")  # type: ignore[misc]
    first = Plugin(name="a")
    assert first != Plugin(name="a") and first == first
    assert hash(first) == object.__hash__(first)


def test_dataclasses_and_records_subclass_records_as_a_frozen_dataclass() -> None:
    @dataclasses.dataclass(frozen=True)
    class Labelled(RECORD):
        """A frozen dataclass below a record."""

        colour: str = "red"

    @record
    class Deeper(Labelled):
        """A record below both."""

        size: int = 1

    item = Deeper(1, label="x", colour="blue")
    assert (item.x, item.label, item.colour, item.size) == (1, "x", "blue", 1)
    with pytest.raises(dataclasses.FrozenInstanceError):
        item.size = 2
    with pytest.raises(TypeError, match="non-frozen dataclass from a frozen one"):
        dataclasses.dataclass(type("Loose", (RECORD,), {"__annotations__": {"z": "int"}, "z": 0}))


def test_defining_a_record_compiles_no_code(monkeypatch) -> None:
    calls: list[object] = []
    for name in ("exec", "compile", "eval"):
        real = getattr(builtins, name)
        monkeypatch.setattr(builtins, name, lambda *a, _real=real, **k: calls.append(a) or _real(*a, **k))
    _define(record)
    assert calls == []
    _define(dataclasses.dataclass(frozen=True))  # the check sees what a dataclass compiles
    assert calls


def test_the_core_defines_its_dataclasses_as_records() -> None:
    src = Path(__file__).resolve().parents[2] / "src" / "kernel_plugins"
    plain = [str(p.relative_to(src)) for p in src.rglob("*.py")
             if "reference" not in p.parts and re.search(r"^@dataclass(es\.dataclass)?\b(?!_)", p.read_text(), re.M)]
    assert plain == [], "use kernel_plugins._record.record: a dataclass costs ~0.7 ms at import"
