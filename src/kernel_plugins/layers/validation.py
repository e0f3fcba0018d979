"""Checks on kernel layers and kernel functions before they replace a forward.

A kernel layer class is a stateless ``torch.nn.Module`` subclass (no ``__init__``: its forward
runs on the original instance) with no members beyond ``forward`` and :data:`ALLOWED_MEMBERS`
(``has_backward``, default True; ``can_torch_compile``, default False; ``kernel_properties``).
Its ``forward``, like a kernel function, must match the original's signature: as many
parameters, of the same kinds in the same order, keyword-only ones of the same names
(positional names may differ, as in the Hub ``kernels`` package). A kernel function declares
the flags as attributes and its properties in ``__kernel_properties__`` (:mod:`..contracts`).
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from types import ModuleType
from typing import TYPE_CHECKING

from .._record import record
from ..contracts import declared_properties, format_properties
from ..errors import LayerError
from .mode import Mode, describe_mode

if TYPE_CHECKING:
    from torch import nn

__all__ = ["KernelTraits", "ALLOWED_MEMBERS", "validate_layer", "validate_function", "check_signature",
           "missing_for", "check_registered_mode"]

#: Class attributes a kernel layer may declare besides ``forward``.
ALLOWED_MEMBERS = frozenset({"has_backward", "can_torch_compile", "kernel_properties"})


@record
class KernelTraits:
    """What a validated kernel layer or function declares: the two flags and its properties."""

    has_backward: bool
    can_torch_compile: bool
    properties: frozenset[str]


def _traits(obj: object, where: str, properties: frozenset[str]) -> KernelTraits:
    """``obj``'s ``has_backward`` (default True) and ``can_torch_compile`` (default False), with ``properties``."""
    flags = {a: getattr(obj, a, default) for a, default in (("has_backward", True), ("can_torch_compile", False))}
    for attr, value in flags.items():
        if not isinstance(value, bool):
            raise LayerError(f"{where}: {attr} must be True or False, got {value!r}")
    return KernelTraits(**flags, properties=properties)


def _signature(fn: Callable[..., object], where: str) -> inspect.Signature:
    try:
        return inspect.signature(fn)
    except (TypeError, ValueError) as e:
        raise LayerError(f"{where}: cannot read the signature of {fn!r}: {e}") from e


def check_signature(kernel_fn: Callable[..., object], original_fn: Callable[..., object], *, where: str,
                    original: str) -> None:
    """Raise :class:`~kernel_plugins.errors.LayerError` unless the signatures match (``where``
    and ``original`` name the two sides in the message)."""
    got = list(_signature(kernel_fn, where).parameters.values())
    want = list(_signature(original_fn, original).parameters.values())

    def show(params: list[inspect.Parameter]) -> str:
        return "(" + ", ".join(str(p) for p in params) + ")"

    problem = None
    if len(got) != len(want):
        problem = f"{len(got)} parameters instead of {len(want)}"
    else:
        for g, w in zip(got, want, strict=True):
            if g.kind != w.kind:
                problem = f"parameter `{g.name}` is {g.kind.description}, `{w.name}` is {w.kind.description}"
                break
            if w.kind is inspect.Parameter.KEYWORD_ONLY and g.name != w.name:
                problem = f"keyword-only parameter `{g.name}` should be `{w.name}`"
                break
    if problem:
        raise LayerError(f"{where}: forward signature {show(got)} does not match {original} {show(want)}: {problem}")


def validate_layer(kernel_cls: object, original_cls: type[nn.Module], *, where: str,
                   original_forward: Callable[..., object] | None = None) -> KernelTraits:
    """The :class:`KernelTraits` of a kernel layer class (``where`` names it) checked against the
    marked model class, or for a marked function against ``original_forward`` (the kernel's
    ``forward`` without ``self``). :raises LayerError: naming the rule that is broken."""
    import torch.nn as nn

    if not inspect.isclass(kernel_cls) or not issubclass(kernel_cls, nn.Module):
        raise LayerError(f"{where} is not a torch.nn.Module subclass (got {kernel_cls!r})")
    if kernel_cls.__init__ is not nn.Module.__init__:
        raise LayerError(f"{where} defines __init__; kernel layers must be stateless: their forward runs "
                         f"on the original `{original_cls.__name__}` instance and reads its attributes")
    extra = sorted(n for n in set(dir(kernel_cls)) - set(dir(nn.Module)) - ALLOWED_MEMBERS
                   if not (n.startswith("__") and n.endswith("__")))
    if extra:
        raise LayerError(f"{where} adds members {', '.join(extra)}; a kernel layer may only define "
                         f"forward and the class attributes {', '.join(sorted(ALLOWED_MEMBERS))}")
    forward = kernel_cls.forward  # type: ignore[attr-defined]
    if original_forward is None:
        check_signature(forward, original_cls.forward, where=where, original=f"`{original_cls.__name__}.forward`")
    else:
        check_signature(functools.partial(forward, None), original_forward, where=where,
                        original=f"`{_name_of(original_forward)}`")
    return _traits(kernel_cls, where, declared_properties(kernel_cls))


def validate_function(func: object, original: Callable[..., object], *, where: str, module: ModuleType,
                      name: str) -> KernelTraits:
    """The :class:`KernelTraits` of ``func`` (attribute ``name`` of the kernel ``module``) checked
    against the marked function ``original``."""
    if not callable(func) or inspect.isclass(func):
        raise LayerError(f"{where} is not a function (got {func!r})")
    check_signature(func, original, where=where, original=f"`{_name_of(original)}`")
    return _traits(func, where, declared_properties(func, module=module, name=name))


def _name_of(fn: object) -> str:
    """A function's name for messages (a ``partial`` names the function it wraps)."""
    inner = getattr(fn, "func", fn)
    return str(getattr(inner, "__qualname__", None) or getattr(inner, "__name__", None) or fn)


def missing_for(traits: KernelTraits, mode: Mode, require: frozenset[str]) -> list[str]:
    """What a kernel lacks for ``mode`` and ``require`` (empty when it fits)."""
    lacks = []
    if Mode.TRAINING in mode and not traits.has_backward:
        lacks.append("backward support (has_backward is False), needed for TRAINING")
    if Mode.TORCH_COMPILE in mode and not traits.can_torch_compile:
        lacks.append("torch.compile support (can_torch_compile is False), needed for TORCH_COMPILE")
    if missing := require - traits.properties:
        lacks.append(f"required propert{'y' if len(missing) == 1 else 'ies'} {format_properties(missing)} "
                     f"(declares: {format_properties(traits.properties)})")
    return lacks


def check_registered_mode(traits: KernelTraits, registered: Mode, *, where: str) -> None:
    """Refuse (:class:`~kernel_plugins.errors.LayerError`: the mapping is wrong) an entry
    registered under ``Mode.TRAINING`` without backward support, or under ``Mode.TORCH_COMPILE``
    without ``can_torch_compile``."""
    if Mode.TRAINING in registered and not traits.has_backward:
        problem = "has no backward (has_backward is False)"
    elif Mode.TORCH_COMPILE in registered and not traits.can_torch_compile:
        problem = "does not support torch.compile (can_torch_compile is False)"
    else:
        return
    raise LayerError(f"{where} is registered for mode {describe_mode(registered)} but {problem}; "
                     "register it under a mode it supports (e.g. Mode.INFERENCE or Mode.FALLBACK)")
