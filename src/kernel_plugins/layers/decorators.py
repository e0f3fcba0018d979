"""Marking model layers and functions whose forward a kernel may replace.

:func:`use_kernel_forward_from_hub` records the name on a layer class (``kernel_layer_name``,
the class is otherwise unchanged) or turns a function into one shared ``nn.Module`` instance
whose class ``forward`` *is* the function (it keeps ``__name__``, ``__doc__``, ``__wrapped__``;
kernelizing it changes it for every caller). :func:`use_kernelized_func` attaches marked
functions to every instance of a class (``_kernel_funcs``, not submodules), so kernelize also
serves what its ``forward`` calls. These are the Hub ``kernels`` package's marks (with
``kernel_condition``), so kernelize serves layers marked by either package.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

from ..errors import LayerError

__all__ = ["use_kernel_forward_from_hub", "use_kernel_func_from_hub", "replace_kernel_forward_from_hub",
           "use_kernelized_func", "kernel_funcs", "marked_name", "original_function"]

T = TypeVar("T")


def _check_name(name: object) -> str:
    if not isinstance(name, str) or not name.strip():
        raise LayerError(f"a kernel layer name must be a non-empty string, got {name!r}")
    return name


Condition = Callable[[Any], bool]


def _check_condition(condition: object) -> None:
    if condition is not None and not callable(condition):
        raise LayerError(f"condition must be a callable taking the module instance and returning a bool, "
                         f"got {condition!r}")


def replace_kernel_forward_from_hub(cls: type, layer_name: str, condition: Condition | None = None) -> None:
    """Mark an existing (e.g. third-party) layer class as kernelizable in place; ``condition``
    as for :func:`use_kernel_forward_from_hub`."""
    _check_name(layer_name)
    _check_condition(condition)
    if not inspect.isclass(cls) or not callable(getattr(cls, "forward", None)):
        raise LayerError(f"{cls!r} cannot be marked as kernel layer `{layer_name}`: it is not a class "
                         "with a forward method")
    cls.kernel_layer_name = layer_name  # type: ignore[attr-defined]
    if condition is not None:
        cls.kernel_condition = staticmethod(condition)  # type: ignore[attr-defined]
    elif "kernel_condition" in cls.__dict__:
        del cls.kernel_condition  # type: ignore[attr-defined]


@functools.cache
def _base() -> type:
    import torch.nn as nn

    class KernelFunction(nn.Module):
        """A marked function as a module; ``forward`` is the function itself."""

        kernel_layer_name: str
        kernel_function: Callable[..., Any]

        def extra_repr(self) -> str:
            return f"{self.kernel_layer_name!r}"

    return KernelFunction


def _wrap_function(func: Callable[..., Any], name: str, condition: Condition | None = None) -> Any:
    members: dict[str, Any] = {
        "kernel_layer_name": name,
        "kernel_function": staticmethod(func),
        "forward": staticmethod(func),
        "__module__": getattr(func, "__module__", __name__),
    }
    if condition is not None:
        members["kernel_condition"] = staticmethod(condition)
    cls = type(f"KernelFunction_{getattr(func, '__name__', 'function')}", (_base(),), members)
    inst = cls()
    for attr in ("__name__", "__qualname__", "__doc__"):
        if hasattr(func, attr):
            object.__setattr__(inst, attr, getattr(func, attr))
    object.__setattr__(inst, "__wrapped__", func)
    return inst


def use_kernel_forward_from_hub(layer_name: str, condition: Condition | None = None) -> Callable[[T], T]:
    """Mark a layer class (returned as it is) or a function (returned as a module instance)
    as replaceable by the kernel mapped to ``layer_name``; an instance for which
    ``condition(instance)`` is False at kernelize time keeps its original forward.

    Example::

        @use_kernel_forward_from_hub("SiluAndMul")
        class SiluAndMul(nn.Module):
            def forward(self, x):
                d = x.shape[-1] // 2
                return F.silu(x[..., :d]) * x[..., d:]

        @use_kernel_forward_from_hub("silu_and_mul")
        def silu_and_mul(x):
            ...
    """
    _check_name(layer_name)
    _check_condition(condition)

    def decorator(obj: T) -> T:
        if inspect.isclass(obj):
            replace_kernel_forward_from_hub(obj, layer_name, condition)
            return obj
        if callable(obj):
            return _wrap_function(obj, layer_name, condition)  # type: ignore[no-any-return]
        raise LayerError(f"use_kernel_forward_from_hub({layer_name!r}) decorates an nn.Module class or a "
                         f"function, got {obj!r}")

    return decorator


def use_kernel_func_from_hub(func_name: str) -> Callable[[Callable[..., Any]], Any]:
    """Mark a function (the name the ``kernels`` package uses for the function case)."""
    _check_name(func_name)

    def decorator(func: Callable[..., Any]) -> Any:
        if inspect.isclass(func) or not callable(func):
            raise LayerError(f"use_kernel_func_from_hub({func_name!r}) decorates a function, got {func!r}; "
                             "use use_kernel_forward_from_hub for layer classes")
        return _wrap_function(func, func_name)

    return decorator


def use_kernelized_func(*funcs: Any) -> Callable[[type[T]], type[T]]:
    """A class decorator giving each instance of the class whose ``forward`` calls ``funcs``
    (marked functions, or lists of them) an ``_kernel_funcs`` dict in its ``__dict__`` (state
    dicts and ``named_modules`` unchanged), which kernelize visits.

    Example::

        @use_kernel_forward_from_hub("rotary_pos_emb")
        def apply_rotary_pos_emb(q, k, cos, sin, unsqueeze_dim=1): ...

        @use_kernelized_func(apply_rotary_pos_emb)
        class Attention(nn.Module):
            def forward(self, q, k, cos, sin):
                return apply_rotary_pos_emb(q, k, cos, sin)
    """
    flat = [g for f in funcs for g in (f if isinstance(f, (list, tuple)) else [f])]
    for f in flat:
        if marked_name(f) is None:
            raise LayerError(f"Function `{getattr(f, '__name__', f)}` is not decorated with "
                             "@use_kernel_forward_from_hub and cannot be used with @use_kernelized_func; "
                             "decorate it with @use_kernel_forward_from_hub(name) first")
    named = {getattr(f, "__name__", None) or marked_name(f): f for f in flat}

    def decorator(cls: type[T]) -> type[T]:
        if not inspect.isclass(cls):
            raise LayerError(f"use_kernelized_func decorates a module class, got {cls!r}")
        original_init = cls.__init__

        @functools.wraps(original_init)
        def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
            original_init(self, *args, **kwargs)
            self.__dict__.setdefault("_kernel_funcs", {}).update(named)

        cls.__init__ = __init__  # type: ignore[misc,method-assign]
        return cls

    return decorator


def kernel_funcs(module: object) -> Iterable[Any]:
    """The marked functions attached to a module instance by :func:`use_kernelized_func`
    (a view, nothing copied: kernelize asks this of every module)."""
    funcs = getattr(module, "__dict__", {}).get("_kernel_funcs")
    return funcs.values() if isinstance(funcs, dict) else ()


def marked_name(obj: object) -> str | None:
    """The layer name a module instance (or class) is marked with, or None."""
    cls = obj if inspect.isclass(obj) else type(obj)
    name = getattr(cls, "kernel_layer_name", None)
    return name if isinstance(name, str) else None


def original_function(obj: object) -> Callable[..., Any] | None:
    """For a marked-function module, the original function; else None."""
    func = getattr(type(obj), "kernel_function", None)
    return func if callable(func) else None
