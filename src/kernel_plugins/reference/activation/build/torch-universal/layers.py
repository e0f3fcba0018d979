"""Kernel layers of the reference activation kernel.

Each class replaces the ``forward`` of a model layer of the same name (see
``kernelize``): it defines no ``__init__`` and no members, only ``forward(self, x)``,
which allocates the output and calls the operator. ``FatreluAndMul`` reads
``self.threshold`` from the layer it replaces.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch
from torch import nn

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

_DETERMINISTIC = frozenset({"deterministic"})
_BATCH_INVARIANT = frozenset({"deterministic", "batch_invariant"})


def _half_out(x: Tensor) -> Tensor:
    """An uninitialised tensor shaped like ``x`` with the last dimension halved."""
    return torch.empty((*x.shape[:-1], x.shape[-1] // 2), dtype=x.dtype, device=x.device)


def _same_out(x: Tensor) -> Tensor:
    """An uninitialised tensor with the shape, dtype and device of ``x``."""
    return torch.empty(x.shape, dtype=x.dtype, device=x.device)


class SiluAndMul(nn.Module):
    """``silu(x[..., :d]) * x[..., d:]``."""

    has_backward = True
    can_torch_compile = True
    kernel_properties = _DETERMINISTIC

    def forward(self, x: Tensor) -> Tensor:
        """Apply the activation to ``x``."""
        out = _half_out(x)
        ops.silu_and_mul(out, x)
        return out


class MulAndSilu(nn.Module):
    """``x[..., :d] * silu(x[..., d:])``."""

    has_backward = True
    can_torch_compile = True
    kernel_properties = _DETERMINISTIC

    def forward(self, x: Tensor) -> Tensor:
        """Apply the activation to ``x``."""
        out = _half_out(x)
        ops.mul_and_silu(out, x)
        return out


class GeluAndMul(nn.Module):
    """``gelu(x[..., :d]) * x[..., d:]`` (erf GELU)."""

    has_backward = True
    can_torch_compile = True
    kernel_properties = _DETERMINISTIC

    def forward(self, x: Tensor) -> Tensor:
        """Apply the activation to ``x``."""
        out = _half_out(x)
        ops.gelu_and_mul(out, x)
        return out


class GeluTanhAndMul(nn.Module):
    """``gelu_tanh(x[..., :d]) * x[..., d:]``."""

    has_backward = True
    can_torch_compile = True
    kernel_properties = _DETERMINISTIC

    def forward(self, x: Tensor) -> Tensor:
        """Apply the activation to ``x``."""
        out = _half_out(x)
        ops.gelu_tanh_and_mul(out, x)
        return out


class FatreluAndMul(nn.Module):
    """``fatrelu(x[..., :d], self.threshold) * x[..., d:]``."""

    has_backward = True
    can_torch_compile = True
    kernel_properties = _BATCH_INVARIANT

    def forward(self, x: Tensor) -> Tensor:
        """Apply the activation to ``x`` with the replaced layer's ``threshold``."""
        out = _half_out(x)
        ops.fatrelu_and_mul(out, x, float(self.threshold))
        return out


class Silu(nn.Module):
    """``x * sigmoid(x)``."""

    has_backward = True
    can_torch_compile = True
    kernel_properties = _DETERMINISTIC

    def forward(self, x: Tensor) -> Tensor:
        """Apply the activation to ``x``."""
        out = _same_out(x)
        ops.silu(out, x)
        return out


class Gelu(nn.Module):
    """Exact (erf) GELU."""

    has_backward = True
    can_torch_compile = True
    kernel_properties = _DETERMINISTIC

    def forward(self, x: Tensor) -> Tensor:
        """Apply the activation to ``x``."""
        out = _same_out(x)
        ops.gelu(out, x)
        return out


class GeluTanh(nn.Module):
    """Tanh-approximated GELU."""

    has_backward = True
    can_torch_compile = True
    kernel_properties = _DETERMINISTIC

    def forward(self, x: Tensor) -> Tensor:
        """Apply the activation to ``x``."""
        out = _same_out(x)
        ops.gelu_tanh(out, x)
        return out


class FastGELU(nn.Module):
    """``0.5*x*(1+tanh(0.7978845608*x*(1+0.044715*x*x)))``."""

    has_backward = True
    can_torch_compile = True
    kernel_properties = _DETERMINISTIC

    def forward(self, x: Tensor) -> Tensor:
        """Apply the activation to ``x``."""
        out = _same_out(x)
        ops.gelu_fast(out, x)
        return out


class NewGELU(nn.Module):
    """``0.5*x*(1+tanh(sqrt(2/pi)*(x+0.044715*x**3)))``."""

    has_backward = True
    can_torch_compile = True
    kernel_properties = _DETERMINISTIC

    def forward(self, x: Tensor) -> Tensor:
        """Apply the activation to ``x``."""
        out = _same_out(x)
        ops.gelu_new(out, x)
        return out


class QuickGELU(nn.Module):
    """``x * sigmoid(1.702 * x)``."""

    has_backward = True
    can_torch_compile = True
    kernel_properties = _DETERMINISTIC

    def forward(self, x: Tensor) -> Tensor:
        """Apply the activation to ``x``."""
        out = _same_out(x)
        ops.gelu_quick(out, x)
        return out
