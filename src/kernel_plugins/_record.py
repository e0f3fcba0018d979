"""Dataclasses that compile nothing when defined: :func:`record`.

Before Python 3.13, ``@dataclass`` compiles every method it writes (``__init__``, ``__repr__``,
``__eq__``, ``__hash__``, and ``__setattr__``/``__delattr__`` when frozen) from source text, one
compile each: about 0.7 ms a class, which over the fifty classes that a first load defines was half
of its time. A record is still a dataclass (``dataclasses.fields``, ``replace`` and ``asdict`` work
on it), but its methods are functions shared by every record that read the class's fields. An
instance takes about a microsecond longer to build.
"""

from __future__ import annotations

import dataclasses
from dataclasses import KW_ONLY, field, replace
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from typing_extensions import dataclass_transform
else:
    def dataclass_transform(**_: object) -> Any:
        return lambda decorator: decorator

__all__ = ["KW_ONLY", "field", "record", "replace"]  # with dataclasses' helpers, one import

_NONE = dataclasses.MISSING


def _init(self: Any, *args: Any, **kwargs: Any) -> None:
    cls = type(self)
    positional, plan = cls._record_init
    if args:
        if len(args) > len(positional):
            raise TypeError(f"{cls.__qualname__}() takes {len(positional)} positional arguments, "
                            f"{len(args)} were given")
        for name, value in zip(positional, args, strict=False):
            if name in kwargs:
                raise TypeError(f"{cls.__qualname__}() got multiple values for argument {name!r}")
            kwargs[name] = value
    values = self.__dict__  # frozen or not, as a dataclass's __init__ sets them
    for name, default, factory, init in plan:
        if init and name in kwargs:
            values[name] = kwargs.pop(name)
        elif default is not _NONE:
            values[name] = default
        elif factory is not _NONE:
            values[name] = factory()
        elif init:
            raise TypeError(f"{cls.__qualname__}() missing required argument {name!r}")
    if kwargs:
        raise TypeError(f"{cls.__qualname__}() got an unexpected keyword argument {next(iter(kwargs))!r}")
    if hasattr(cls, "__post_init__"):
        self.__post_init__()


def _frozen(self: Any, name: str, *_: object) -> None:
    raise dataclasses.FrozenInstanceError(f"cannot assign to field {name!r}")


def _values(self: Any, names: tuple[str, ...]) -> tuple[Any, ...]:
    return tuple(getattr(self, name) for name in names)


def _eq(self: Any, other: Any) -> Any:
    names = self._record_compare
    if other.__class__ is not self.__class__:
        return NotImplemented
    return _values(self, names) == _values(other, names)


def _hash(self: Any) -> int:
    return hash(_values(self, self._record_hash))


def _repr(self: Any) -> str:
    shown = ", ".join(f"{name}={getattr(self, name)!r}" for name in self._record_repr)
    return f"{type(self).__qualname__}({shown})"


class _Signature:
    """A record class's ``__signature__``: its ``__init__`` parameters, as a dataclass has them."""

    def __get__(self, instance: object, owner: type) -> Any:
        import inspect

        P = inspect.Parameter
        fields = sorted((f for f in dataclasses.fields(owner) if f.init), key=lambda f: bool(f.kw_only))
        return inspect.Signature([P(
            f.name, P.KEYWORD_ONLY if f.kw_only else P.POSITIONAL_OR_KEYWORD, annotation=f.type,
            default=f.default if f.default is not _NONE else P.empty if f.default_factory is _NONE
            else _FACTORY) for f in fields], return_annotation=None)


_FACTORY = type("_Factory", (), {"__repr__": lambda self: "<factory>"})()


@dataclass_transform(frozen_default=True, field_specifiers=(dataclasses.field,))
def record(cls: Any = None, /, *, frozen: bool = True, eq: bool = True, kw_only: bool = False) -> Any:
    """Make ``cls`` a dataclass with shared methods (frozen unless ``frozen=False``; ``eq`` and
    ``kw_only`` as for ``dataclass``). Methods the class defines itself are kept."""

    def wrap(cls: type) -> type:
        # dataclass refuses to mix frozen and mutable classes: it reads each base's params, so a
        # record's say what it is (and a record below a frozen one lets dataclass freeze it)
        below_frozen = any(getattr(b.__dict__.get("__dataclass_params__"), "frozen", False)
                           for b in cls.__mro__[1:])
        dataclasses.dataclass(cls, init=False, repr=False, eq=False, kw_only=kw_only, frozen=below_frozen)
        cls.__dataclass_params__.frozen = frozen  # type: ignore[attr-defined]
        fields = dataclasses.fields(cls)
        cls._record_init = (  # type: ignore[attr-defined]
            tuple(f.name for f in fields if f.init and not f.kw_only),
            tuple((f.name, f.default, f.default_factory, f.init) for f in fields))
        cls._record_compare = tuple(f.name for f in fields if f.compare)  # type: ignore[attr-defined]
        cls._record_hash = tuple(  # type: ignore[attr-defined]
            f.name for f in fields if (f.compare if f.hash is None else f.hash))
        cls._record_repr = tuple(f.name for f in fields if f.repr)  # type: ignore[attr-defined]
        own = vars(cls)
        methods: dict[str, Any] = {"__repr__": _repr}
        if "__init__" not in own:
            methods.update(__init__=_init, __signature__=_Signature())
        if frozen:
            methods.update(__setattr__=_frozen, __delattr__=_frozen)
        if eq:
            methods.update(__eq__=_eq, __hash__=_hash if frozen else None)
        for name, method in methods.items():
            if own.get(name) is None:  # absent, or the __hash__ = None that a class __eq__ implies
                setattr(cls, name, method)
        return cls

    return wrap if cls is None else wrap(cls)
