"""Operator contracts: properties a kernel declares and a caller can require.

A caller states what it needs with ``require={"deterministic"}`` (:func:`kernel_plugins.load`,
:func:`kernel_plugins.layers.kernelize`); a kernel, or a fallback, that does not declare a
required property is never used for that call, and when nothing qualifies a
:class:`~kernel_plugins.errors.ContractError` says which property is missing where.

Kernels declare properties in ``__kernel_properties__ = {"name": frozenset({...})}`` tables:
the kernel module's, keyed by the exported name of each function, and its ``layers``
module's, keyed by class name (the form HF ``kernels`` accepts; a layer class's own
``kernel_properties`` attribute is still read and wins). Nothing is inherited or assumed.

A kernel module satisfies ``require`` (:func:`check_module`) when it has members and each
declares every required property. Its members: the routines its ``__all__`` names (without
``__all__``: the public Python functions defined in the module or its submodules), and
likewise the classes of its ``layers`` submodule.
"""

from __future__ import annotations

import inspect
import sys
from collections.abc import Callable, Iterable, Mapping
from types import ModuleType

from .errors import ContractError

__all__ = ["PROPERTIES", "register_property", "known_properties", "normalize_require", "validate_properties",
           "declared_properties", "public_members", "check_module", "format_properties"]

#: The property vocabulary: name -> what a kernel promises by declaring it.
PROPERTIES: dict[str, str] = {
    "deterministic": "bitwise identical results for identical inputs (same device, shapes, dtypes and "
                     "kernel build), run after run",
    "batch_invariant": "a row's result does not depend on the other rows of the batch (nor on the batch size)",
}


def register_property(name: str, description: str) -> None:
    """Add ``name`` (a lowercase identifier) to the vocabulary, with the promise a kernel makes by
    declaring it. :raises ContractError: a malformed name or a conflicting description."""
    if not isinstance(name, str) or not name.isidentifier() or name.lower() != name:
        raise ContractError(f"property name {name!r} must be a lowercase identifier")
    old = PROPERTIES.get(name)
    if old is not None and old != description:
        raise ContractError(f"property {name!r} is already registered as: {old}")
    PROPERTIES[name] = description


def known_properties() -> frozenset[str]:
    """The names in the vocabulary."""
    return frozenset(PROPERTIES)


def format_properties(props: Iterable[str]) -> str:
    """``"batch_invariant, deterministic"`` (sorted), or ``"none"``."""
    return ", ".join(sorted(props)) or "none"


def normalize_require(require: Iterable[str] | str | None) -> frozenset[str]:
    """The property names a caller requires (None: none; a string: one name).
    :raises ContractError: an unknown name (listing the known ones)."""
    if require is None:
        return frozenset()
    return validate_properties((require,) if isinstance(require, str) else require)


def validate_properties(names: Iterable[str]) -> frozenset[str]:
    """``names`` as a frozenset. :raises ContractError: a string instead of a collection, a
    non-string or an unknown name (listing the known ones)."""
    if isinstance(names, str):
        raise ContractError(f"expected a collection of property names, got the string {names!r}; write {{{names!r}}}")
    names = tuple(names)
    if bad := [n for n in names if not isinstance(n, str)]:
        raise ContractError(f"required properties must be strings, got {bad[0]!r}")
    if unknown := sorted(set(names) - set(PROPERTIES)):
        raise ContractError(f"unknown kernel propert{'y' if len(unknown) == 1 else 'ies'} "
                            f"{', '.join(repr(u) for u in unknown)} in require; known properties: "
                            f"{format_properties(PROPERTIES)}")
    return frozenset(names)


def _as_property_set(value: object, where: str) -> frozenset[str]:
    if value is None:
        return frozenset()
    if isinstance(value, str) or not isinstance(value, Iterable):
        raise ContractError(f"{where} must be a set of property names such as frozenset({{'deterministic'}}), "
                            f"got {value!r}")
    items = tuple(value)
    if bad := [v for v in items if not isinstance(v, str)]:
        raise ContractError(f"{where} holds non-string entries {bad!r}")
    return frozenset(items)


def declared_properties(obj: object, *, module: ModuleType | None = None, name: str | None = None) -> frozenset[str]:
    """The properties (unknown names kept) a layer class declares (its ``kernel_properties``,
    else its module's ``__kernel_properties__[<class name>]``) or a function exported as ``name``
    (default: its ``__name__``) from ``module`` (default: where it is defined) declares.
    :raises ContractError: a malformed declaration (e.g. a bare string)."""
    own = getattr(obj, "kernel_properties", None) if inspect.isclass(obj) else None
    if own is not None:
        return _as_property_set(own, f"{getattr(obj, '__name__', obj)}.kernel_properties")
    if module is None or inspect.isclass(obj):
        module = sys.modules.get(getattr(obj, "__module__", "") or "")
    key = name or getattr(obj, "__name__", None)
    table = getattr(module, "__kernel_properties__", None) if module is not None else None
    if table is None or key is None:
        return frozenset()
    mod_name = getattr(module, "__name__", "?")
    if not isinstance(table, Mapping):
        raise ContractError(f"{mod_name}.__kernel_properties__ must be a dict of function name -> set of "
                            f"properties, got {type(table).__name__}")
    return _as_property_set(table.get(key), f"{mod_name}.__kernel_properties__[{key!r}]")


def _public(module: ModuleType, want: str, prefix: str) -> list[tuple[str, object]]:
    """The classes or routines ``module.__all__`` names, else its public classes or functions
    defined in the package ``prefix``."""
    pick: Callable[[object], bool] = inspect.isclass if want == "class" else inspect.isroutine
    if (explicit := getattr(module, "__all__", None)) is not None:
        return [(n, obj) for n in explicit if pick(obj := getattr(module, n, None))]
    pick = inspect.isclass if want == "class" else inspect.isfunction
    return [(n, obj) for n, obj in sorted(vars(module).items()) if not n.startswith("_") and pick(obj)
            and f"{getattr(obj, '__module__', None) or ''}.".startswith(f"{prefix}.")]


def public_members(module: ModuleType) -> list[tuple[str, str, object]]:
    """The members :func:`check_module` checks: ``(kind, name, obj)`` with kind
    ``"function"`` or ``"layer"``, functions first (see the module doc for the rules)."""
    prefix = module.__name__
    members = [("function", n, o) for n, o in _public(module, "function", prefix)]
    layers = getattr(module, "layers", None)
    if isinstance(layers, ModuleType):
        members += [("layer", n, o) for n, o in _public(layers, "class", prefix)]
    return members


def check_module(module: ModuleType, require: Iterable[str] | str | None, *, where: str) -> None:
    """Check that a kernel module satisfies ``require`` (``load(require=...)``; ``where`` names the
    kernel). :raises ContractError: naming each member and what it lacks, or that it has none."""
    required = normalize_require(require)
    if not required:
        return
    members = public_members(module)
    if not members:
        raise ContractError(f"kernel {where} declares nothing: it has no public functions or layer classes, "
                            f"so it cannot provide the required {format_properties(required)}")
    problems = []
    for kind, n, obj in members:
        declared = declared_properties(obj, module=module, name=n)
        if missing := required - declared:
            problems.append(f"  - {kind} `{n}` does not declare {format_properties(missing)} "
                            f"(declares: {format_properties(declared)})")
    if problems:
        raise ContractError(
            f"kernel {where} does not satisfy require={{{format_properties(required)}}}:\n" + "\n".join(problems)
            + "\nKernel authors declare properties with the table `__kernel_properties__ = {'name': "
            "frozenset({...})}` in the kernel module (for functions) and in its `layers` module (for layer "
            "classes); callers can drop the requirement or choose a kernel that declares it.")
