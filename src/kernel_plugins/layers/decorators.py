"""Marking model layers and functions whose forward a kernel may replace.

* On an ``nn.Module`` class, :func:`use_kernel_forward_from_hub` records the name on the
  class (``kernel_layer_name``) and returns the class unchanged: instances behave exactly
  as before until :func:`~kernel_plugins.layers.kernelize` replaces their forward.
* On a plain function it returns a small ``nn.Module`` instance that calls the function
  (its class ``forward`` *is* the function, so a call costs one ``nn.Module.__call__``).
  Keep it as an attribute of a model, or kernelize it directly; kernelize then makes the
  mapped kernel function (a :class:`~kernel_plugins.layers.FuncRepository` entry) its
  forward. The instance carries the function's ``__name__``, ``__doc__`` and
  ``__wrapped__``, so ``inspect.signature`` shows the original signature. There is one
  instance per decorated function: kernelizing any model that holds it changes it for
  every caller (as for any module shared between models).
* :func:`use_kernelized_func` attaches marked functions to every instance of a module
  class (in the instance's ``_kernel_funcs`` dict, not as submodules), so kernelizing a
  model that holds the class also serves the functions its ``forward`` calls.

The marks are the ones the Hub ``kernels`` package places (``kernel_layer_name`` and an
optional ``kernel_condition`` on the class, ``_kernel_funcs`` on instances), so
:func:`~kernel_plugins.layers.kernelize` serves layers marked by either package.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

from ..errors import LayerError

__all__ = [
    "use_kernel_forward_from_hub",
    "use_kernel_func_from_hub",
    "replace_kernel_forward_from_hub",
    "use_kernelized_func",
    "kernel_funcs",
    "marked_name",
    "original_function",
]

T = TypeVar("T")

_function_base: type | None = None


def _check_name(name: object) -> str:
    if not isinstance(name, str) or not name.strip():
        raise LayerError(f"a kernel layer name must be a non-empty string, got {name!r}")
    return name


Condition = Callable[[Any], bool]


def _check_condition(condition: object) -> None:
    if condition is not None and not callable(condition):
        raise LayerError(
            f"condition must be a callable taking the module instance and returning a bool, "
            f"got {condition!r}"
        )


def replace_kernel_forward_from_hub(
    cls: type, layer_name: str, condition: Condition | None = None
) -> None:
    """Mark an existing layer class (e.g. a third-party one) as kernelizable in place.

    Prefer :func:`use_kernel_forward_from_hub` on your own classes: marking a class you do
    not own depends on its attributes and forward signature staying the same.

    :param condition: called with each module instance at kernelize time; an instance
        for which it returns False keeps its original forward.
    """
    _check_name(layer_name)
    _check_condition(condition)
    if not inspect.isclass(cls) or not callable(getattr(cls, "forward", None)):
        raise LayerError(
            f"{cls!r} cannot be marked as kernel layer `{layer_name}`: it is not a class "
            f"with a forward method"
        )
    cls.kernel_layer_name = layer_name  # type: ignore[attr-defined]
    if condition is not None:
        cls.kernel_condition = staticmethod(condition)  # type: ignore[attr-defined]
    elif "kernel_condition" in cls.__dict__:
        del cls.kernel_condition  # type: ignore[attr-defined]


def _base() -> type:
    global _function_base
    if _function_base is None:
        import torch.nn as nn

        class KernelFunction(nn.Module):
            """A marked function as a module; ``forward`` is the function itself."""

            kernel_layer_name: str
            kernel_function: Callable[..., Any]

            def extra_repr(self) -> str:
                return f"{self.kernel_layer_name!r}"

        _function_base = KernelFunction
    return _function_base


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


def use_kernel_forward_from_hub(
    layer_name: str, condition: Condition | None = None
) -> Callable[[T], T]:
    """Mark a layer class or a function as replaceable by the kernel mapped to ``layer_name``.

    :param layer_name: the name mappings use (e.g. ``"SiluAndMul"``).
    :param condition: optional; called with each module instance at kernelize time, and
        an instance for which it returns False keeps its original forward.
    :return: a decorator; for a class it returns the class, for a function a module
        instance calling the function (see the module doc).

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
        raise LayerError(
            f"use_kernel_forward_from_hub({layer_name!r}) decorates an nn.Module class or a "
            f"function, got {obj!r}"
        )

    return decorator


def use_kernel_func_from_hub(func_name: str) -> Callable[[Callable[..., Any]], Any]:
    """Mark a function (the name the ``kernels`` package uses for the function case)."""
    _check_name(func_name)

    def decorator(func: Callable[..., Any]) -> Any:
        if inspect.isclass(func) or not callable(func):
            raise LayerError(
                f"use_kernel_func_from_hub({func_name!r}) decorates a function, got {func!r}; "
                f"use use_kernel_forward_from_hub for layer classes"
            )
        return _wrap_function(func, func_name)

    return decorator


def use_kernelized_func(*funcs: Any) -> Callable[[type[T]], type[T]]:
    """Attach marked functions to every instance of a module class, for kernelize.

    Decorate the class whose ``forward`` calls the functions: each instance gets an
    ``_kernel_funcs`` dict (name -> marked-function module) in its ``__dict__``, not as
    submodules (state dicts and ``named_modules`` are unchanged). kernelize visits these
    functions for every module that holds them. A list of functions is accepted too
    (transformers passes one).

    :param funcs: functions marked with :func:`use_kernel_forward_from_hub`.
    :return: a class decorator returning the class (its ``__init__`` is wrapped).

    Example::

        @use_kernel_forward_from_hub("rotary_pos_emb")
        def apply_rotary_pos_emb(q, k, cos, sin, unsqueeze_dim=1): ...

        @use_kernelized_func(apply_rotary_pos_emb)
        class Attention(nn.Module):
            def forward(self, q, k, cos, sin):
                return apply_rotary_pos_emb(q, k, cos, sin)
    """
    flat: list[Any] = []
    for f in funcs:
        flat.extend(f if isinstance(f, (list, tuple)) else [f])
    for f in flat:
        if marked_name(f) is None:
            raise LayerError(
                f"Function `{getattr(f, '__name__', f)}` is not decorated with "
                f"@use_kernel_forward_from_hub and cannot be used with @use_kernelized_func; "
                f"decorate it with @use_kernel_forward_from_hub(name) first"
            )
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
