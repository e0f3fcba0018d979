"""Kernel layers of the reference activation kernel.

Each class replaces the ``forward`` of a model layer of the same name (see
``kernelize``) or is used as a layer directly. The classes define only ``forward`` and
the flags ``has_backward`` / ``can_torch_compile``: no ``__init__`` and no other
members, which is what kernel loaders (kernel-plugins and HF ``kernels``) check.
``FatreluAndMul(threshold)`` still takes the community kernel's constructor argument:
its metaclass stores it as ``self.threshold``, the attribute ``forward`` reads (a model's
own ``FatreluAndMul`` has the same attribute). Guarantees are declared in the module
table ``__kernel_properties__`` keyed by class name.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import torch
from torch import nn

from ._native import ACTIVATIONS
from ._ops import ops

if TYPE_CHECKING:
    from torch import Tensor

__all__ = [
    "FastGELU",
    "FatreluAndMul",
    "Gelu",
    "GeluAndMul",
    "GeluTanh",
    "GeluTanhAndMul",
    "MulAndSilu",
    "NewGELU",
    "QuickGELU",
    "Silu",
    "SiluAndMul",
]

# layer class -> the function it computes
_FUNCTION_OF = {
    "SiluAndMul": "silu_and_mul",
    "MulAndSilu": "mul_and_silu",
    "GeluAndMul": "gelu_and_mul",
    "GeluTanhAndMul": "gelu_tanh_and_mul",
    "FatreluAndMul": "fatrelu_and_mul",
    "Silu": "silu",
    "Gelu": "gelu",
    "GeluTanh": "gelu_tanh",
    "FastGELU": "gelu_fast",
    "NewGELU": "gelu_new",
    "QuickGELU": "gelu_quick",
}

_SPECS = {spec.name: spec for spec in ACTIVATIONS}

__kernel_properties__: dict[str, frozenset[str]] = {
    cls: frozenset({"deterministic", "batch_invariant"})
    if _SPECS[fn].batch_invariant
    else frozenset({"deterministic"})
    for cls, fn in _FUNCTION_OF.items()
}
"""Guarantees per layer class: those of the function the layer computes."""


def _half_out(x: Tensor) -> Tensor:
    """An uninitialised tensor shaped like ``x`` with the last dimension halved."""
    return torch.empty((*x.shape[:-1], x.shape[-1] // 2), dtype=x.dtype, device=x.device)


def _same_out(x: Tensor) -> Tensor:
    """An uninitialised tensor with the shape, dtype and device of ``x``."""
    return torch.empty(x.shape, dtype=x.dtype, device=x.device)


class SiluAndMul(nn.Module):
    """``silu(x[..., :d]) * x[..., d:]`` with ``d = x.shape[-1] // 2`` (SwiGLU)."""

    has_backward = True
    can_torch_compile = True

    def forward(self, x: Tensor) -> Tensor:
        """Apply the activation to ``x``."""
        out = _half_out(x)
        ops.silu_and_mul(out, x)
        return out


class MulAndSilu(nn.Module):
    """``x[..., :d] * silu(x[..., d:])``."""

    has_backward = True
    can_torch_compile = True

    def forward(self, x: Tensor) -> Tensor:
        """Apply the activation to ``x``."""
        out = _half_out(x)
        ops.mul_and_silu(out, x)
        return out


class GeluAndMul(nn.Module):
    """``gelu(x[..., :d]) * x[..., d:]`` (erf GELU; GeGLU)."""

    has_backward = True
    can_torch_compile = True

    def forward(self, x: Tensor) -> Tensor:
        """Apply the activation to ``x``."""
        out = _half_out(x)
        ops.gelu_and_mul(out, x)
        return out


class GeluTanhAndMul(nn.Module):
    """``gelu_tanh(x[..., :d]) * x[..., d:]``."""

    has_backward = True
    can_torch_compile = True

    def forward(self, x: Tensor) -> Tensor:
        """Apply the activation to ``x``."""
        out = _half_out(x)
        ops.gelu_tanh_and_mul(out, x)
        return out


class _ThresholdConstructor(type):
    """Metaclass giving ``FatreluAndMul`` the constructor ``FatreluAndMul(threshold=0.0)``.

    The class itself keeps ``nn.Module.__init__`` (kernel layers must not define one);
    calling the class builds the module and stores ``threshold`` on the instance.
    """

    def __call__(cls, threshold: float = 0.0, *args: Any, **kwargs: Any) -> Any:
        if args or kwargs:
            raise TypeError(
                f"{cls.__name__}() takes one optional argument, threshold (a float); got "
                f"extra arguments {args!r} {kwargs!r}"
            )
        layer = super().__call__()
        layer.threshold = threshold
        return layer


class FatreluAndMul(nn.Module, metaclass=_ThresholdConstructor):
    """``fatrelu(x[..., :d], self.threshold) * x[..., d:]`` (FATReLU: 0 below the threshold).

    ``FatreluAndMul(threshold=0.0)`` constructs it; as a kernel layer it reads the
    ``threshold`` of the layer it replaces.
    """

    has_backward = True
    can_torch_compile = True

    def forward(self, x: Tensor) -> Tensor:
        """Apply the activation to ``x`` with ``self.threshold``."""
        out = _half_out(x)
        ops.fatrelu_and_mul(out, x, float(self.threshold))
        return out


class Silu(nn.Module):
    """``x * sigmoid(x)``."""

    has_backward = True
    can_torch_compile = True

    def forward(self, x: Tensor) -> Tensor:
        """Apply the activation to ``x``."""
        out = _same_out(x)
        ops.silu(out, x)
        return out


class Gelu(nn.Module):
    """Exact (erf) GELU."""

    has_backward = True
    can_torch_compile = True

    def forward(self, x: Tensor) -> Tensor:
        """Apply the activation to ``x``."""
        out = _same_out(x)
        ops.gelu(out, x)
        return out


class GeluTanh(nn.Module):
    """Tanh-approximated GELU."""

    has_backward = True
    can_torch_compile = True

    def forward(self, x: Tensor) -> Tensor:
        """Apply the activation to ``x``."""
        out = _same_out(x)
        ops.gelu_tanh(out, x)
        return out


class FastGELU(nn.Module):
    """``0.5*x*(1+tanh(0.7978845608*x*(1+0.044715*x*x)))``."""

    has_backward = True
    can_torch_compile = True

    def forward(self, x: Tensor) -> Tensor:
        """Apply the activation to ``x``."""
        out = _same_out(x)
        ops.gelu_fast(out, x)
        return out


class NewGELU(nn.Module):
    """``0.5*x*(1+tanh(sqrt(2/pi)*(x+0.044715*x**3)))``."""

    has_backward = True
    can_torch_compile = True

    def forward(self, x: Tensor) -> Tensor:
        """Apply the activation to ``x``."""
        out = _same_out(x)
        ops.gelu_new(out, x)
        return out


class QuickGELU(nn.Module):
    """``x * sigmoid(1.702 * x)``."""

    has_backward = True
    can_torch_compile = True

    def forward(self, x: Tensor) -> Tensor:
        """Apply the activation to ``x``."""
        out = _same_out(x)
        ops.gelu_quick(out, x)
        return out
