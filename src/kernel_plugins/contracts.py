"""Operator contracts: properties a kernel declares and a caller can require.

Beyond backward and ``torch.compile`` support, a kernel may promise properties such as
``deterministic``. A caller states what it needs with ``require={"deterministic"}`` on
:func:`kernel_plugins.load` or :func:`kernel_plugins.layers.kernelize`; a kernel that does
not declare a required property is never used for that call, and neither is a fallback
that does not declare it. When nothing qualifies the call fails with a
:class:`~kernel_plugins.errors.ContractError` saying which property is missing where.

How kernels declare properties
------------------------------

* A layer class (in the kernel's ``layers`` module): an entry keyed by the class name in
  the ``layers`` module's table, ``__kernel_properties__ = {"SiluAndMul":
  frozenset({"deterministic"}), ...}``. This is the form HF ``kernels`` accepts (it
  refuses layer classes with members other than ``forward``, ``has_backward`` and
  ``can_torch_compile``). The class attribute ``kernel_properties = frozenset({...})``
  is still read, and wins when both are present.
* A function of a kernel module: the module attribute
  ``__kernel_properties__ = {"silu_and_mul": frozenset({"deterministic"}), ...}``, keyed by
  the name under which the function is exported.

Nothing is inherited or assumed: a member that declares nothing has no properties.

When a kernel module satisfies ``require`` (:func:`check_module`)
------------------------------------------------------------------

The module's *members* are its public functions and its public layer classes:

* public functions: the names in the module's ``__all__`` that are routines; without
  ``__all__``, every attribute not starting with ``_`` that is a Python function defined
  in the module or one of its submodules (imported helpers such as ``torch`` functions
  are not members);
* public layer classes: likewise for the classes of the ``layers`` submodule, when the
  module has one.

The module satisfies ``require`` when it has at least one member and every member
declares every required property. A module with no members declares nothing and fails.
"""

from __future__ import annotations

import inspect
import sys
from collections.abc import Iterable, Mapping
from types import ModuleType

from .errors import ContractError

__all__ = [
    "PROPERTIES",
    "register_property",
    "known_properties",
    "normalize_require",
    "validate_properties",
    "declared_properties",
    "public_members",
    "check_module",
    "format_properties",
]

#: The property vocabulary: name -> what a kernel promises by declaring it.
PROPERTIES: dict[str, str] = {
    "deterministic": (
        "bitwise identical results for identical inputs (same device, shapes, dtypes and "
        "kernel build), run after run"
    ),
    "batch_invariant": (
        "a row's result does not depend on the other rows of the batch (nor on the batch size)"
    ),
}


def register_property(name: str, description: str) -> None:
    """Add a property to the vocabulary (e.g. from a backend plugin).

    :param name: lowercase identifier, e.g. ``"fp32_accumulate"``.
    :param description: the promise a kernel makes by declaring it.
    Raises :class:`ContractError` for a malformed name or a conflicting description.
    """
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
    items = sorted(props)
    return ", ".join(items) if items else "none"


def normalize_require(require: Iterable[str] | str | None) -> frozenset[str]:
    """Validate what a caller requires; returns the set of property names.

    None means nothing; a single string is one property name. An unknown name raises
    :class:`ContractError` listing the known ones.
    """
    if require is None:
        return frozenset()
    return validate_properties((require,) if isinstance(require, str) else require)


def validate_properties(names: Iterable[str]) -> frozenset[str]:
    """Check that every name is a known property; returns them as a frozenset.

    Raises :class:`ContractError` for a non-string or an unknown name, listing the known ones.
    """
    if isinstance(names, str):
        raise ContractError(
            f"expected a collection of property names, got the string {names!r}; "
            f"write {{{names!r}}}"
        )
    names = tuple(names)
    for n in names:
        if not isinstance(n, str):
            raise ContractError(f"required properties must be strings, got {n!r}")
    unknown = sorted(set(names) - set(PROPERTIES))
    if unknown:
        raise ContractError(
            f"unknown kernel propert{'y' if len(unknown) == 1 else 'ies'} "
            f"{', '.join(repr(u) for u in unknown)} in require; known properties: "
            f"{format_properties(PROPERTIES)}"
        )
    return frozenset(names)


def _as_property_set(value: object, where: str) -> frozenset[str]:
    if value is None:
        return frozenset()
    if isinstance(value, str) or not isinstance(value, Iterable):
        raise ContractError(
            f"{where} must be a set of property names such as "
            f"frozenset({{'deterministic'}}), got {value!r}"
        )
    items = tuple(value)
    bad = [v for v in items if not isinstance(v, str)]
    if bad:
        raise ContractError(f"{where} holds non-string entries {bad!r}")
    return frozenset(items)


def declared_properties(
    obj: object, *, module: ModuleType | None = None, name: str | None = None
) -> frozenset[str]:
    """The properties a layer class or a kernel function declares.

    :param obj: a layer class (reads its ``kernel_properties`` attribute, else the
        ``__kernel_properties__[<class name>]`` entry of the module defining it) or a
        function (reads ``module.__kernel_properties__[name]``).
    :param module: the kernel module exporting the function; default: the module the
        function was defined in.
    :param name: the name the function is exported under; default: its ``__name__``.
    :return: the declared names (unknown names are kept, so newer vocabularies still work).
    Raises :class:`ContractError` when a declaration is malformed (e.g. a bare string).
    """
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
        raise ContractError(
            f"{mod_name}.__kernel_properties__ must be a dict of function name -> set of "
            f"properties, got {type(table).__name__}"
        )
    return _as_property_set(table.get(key), f"{mod_name}.__kernel_properties__[{key!r}]")


def _defined_under(obj: object, prefix: str) -> bool:
    mod = getattr(obj, "__module__", None) or ""
    return mod == prefix or mod.startswith(prefix + ".")


def _public(module: ModuleType, want: str, prefix: str) -> list[tuple[str, object]]:
    explicit = getattr(module, "__all__", None)
    out: list[tuple[str, object]] = []
    if explicit is not None:
        for n in explicit:
            obj = getattr(module, n, None)
            if want == "class" and inspect.isclass(obj):
                out.append((n, obj))
            elif want == "function" and inspect.isroutine(obj):
                out.append((n, obj))
        return out
    for n, obj in sorted(vars(module).items()):
        if n.startswith("_") or not _defined_under(obj, prefix):
            continue
        if (want == "class" and inspect.isclass(obj)) or (
            want == "function" and inspect.isfunction(obj)
        ):
            out.append((n, obj))
    return out


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
    """Check that a kernel module satisfies ``require`` (used by ``load(require=...)``).

    :param module: the imported kernel module.
    :param require: required property names (validated with :func:`normalize_require`).
    :param where: how to name the kernel in messages, e.g. ``"kernels-community/activation
        (variant torch-cpu)"``.
    Raises :class:`ContractError` naming each member and the properties it lacks, or
    saying that the module declares nothing.
    """
    required = normalize_require(require)
    if not required:
        return
    members = public_members(module)
    if not members:
        raise ContractError(
            f"kernel {where} declares nothing: it has no public functions or layer classes, "
            f"so it cannot provide the required {format_properties(required)}"
        )
    problems = []
    for kind, n, obj in members:
        declared = declared_properties(obj, module=module, name=n)
        missing = required - declared
        if missing:
            problems.append(
                f"  - {kind} `{n}` does not declare {format_properties(missing)} "
                f"(declares: {format_properties(declared)})"
            )
    if problems:
        raise ContractError(
            f"kernel {where} does not satisfy require={{{format_properties(required)}}}:\n"
            + "\n".join(problems)
            + "\nKernel authors declare properties with the table "
            "`__kernel_properties__ = {'name': frozenset({...})}` in the kernel module (for "
            "functions) and in its `layers` module (for layer classes); callers can "
            "drop the requirement or choose a kernel that declares it."
        )
