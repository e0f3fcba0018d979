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
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any, TypeVar

from ..errors import LayerError

__all__ = [
    "use_kernel_forward_from_hub",
    "use_kernel_func_from_hub",
    "replace_kernel_forward_from_hub",
    "is_marked",
    "marked_name",
    "original_function",
]

T = TypeVar("T")

_function_base: type | None = None


def _check_name(name: object) -> str:
    if not isinstance(name, str) or not name.strip():
        raise LayerError(f"a kernel layer name must be a non-empty string, got {name!r}")
    return name


def replace_kernel_forward_from_hub(cls: type, layer_name: str) -> None:
    """Mark an existing layer class (e.g. a third-party one) as kernelizable in place.

    Prefer :func:`use_kernel_forward_from_hub` on your own classes: marking a class you do
    not own depends on its attributes and forward signature staying the same.
    """
    _check_name(layer_name)
    if not inspect.isclass(cls) or not callable(getattr(cls, "forward", None)):
        raise LayerError(
            f"{cls!r} cannot be marked as kernel layer `{layer_name}`: it is not a class "
            f"with a forward method"
        )
    cls.kernel_layer_name = layer_name  # type: ignore[attr-defined]


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


def _wrap_function(func: Callable[..., Any], name: str) -> Any:
    cls = type(
        f"KernelFunction_{getattr(func, '__name__', 'function')}",
        (_base(),),
        {
            "kernel_layer_name": name,
            "kernel_function": staticmethod(func),
            "forward": staticmethod(func),
            "__module__": getattr(func, "__module__", __name__),
        },
    )
    inst = cls()
    for attr in ("__name__", "__qualname__", "__doc__"):
        if hasattr(func, attr):
            object.__setattr__(inst, attr, getattr(func, attr))
    object.__setattr__(inst, "__wrapped__", func)
    return inst


def use_kernel_forward_from_hub(layer_name: str) -> Callable[[T], T]:
    """Mark a layer class or a function as replaceable by the kernel mapped to ``layer_name``.

    :param layer_name: the name mappings use (e.g. ``"SiluAndMul"``).
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

    def decorator(obj: T) -> T:
        if inspect.isclass(obj):
            replace_kernel_forward_from_hub(obj, layer_name)
            return obj
        if callable(obj):
            return _wrap_function(obj, layer_name)  # type: ignore[no-any-return]
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


def is_marked(obj: object) -> bool:
    """Whether a module instance (or class) is marked for kernelize."""
    cls = obj if inspect.isclass(obj) else type(obj)
    return isinstance(getattr(cls, "kernel_layer_name", None), str)


def marked_name(obj: object) -> str | None:
    """The layer name a module instance (or class) is marked with, or None."""
    cls = obj if inspect.isclass(obj) else type(obj)
    name = getattr(cls, "kernel_layer_name", None)
    return name if isinstance(name, str) else None


def original_function(obj: object) -> Callable[..., Any] | None:
    """For a marked-function module, the original function; else None."""
    func = getattr(type(obj), "kernel_function", None)
    return func if callable(func) else None
