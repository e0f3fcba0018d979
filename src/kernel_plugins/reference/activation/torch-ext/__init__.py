"""Reference activation kernel: the API of ``kernels-community/activation`` in plain PyTorch.

Every function takes a preallocated ``out`` and the input ``x``, fills ``out`` and
returns it. The ``*_and_mul`` / ``mul_and_*`` functions split the last dimension of
``x`` in half (``d = x.shape[-1] // 2``)::

    silu_and_mul(out, x)       out = silu(x[..., :d]) * x[..., d:]
    mul_and_silu(out, x)       out = x[..., :d] * silu(x[..., d:])
    gelu_and_mul(out, x)       out = gelu(x[..., :d]) * x[..., d:]
    gelu_tanh_and_mul(out, x)  out = gelu_tanh(x[..., :d]) * x[..., d:]
    fatrelu_and_mul(out, x, threshold=0.0)
                               out = where(a > threshold, a, 0) * x[..., d:], a = x[..., :d]

The others are element-wise: ``silu``, ``gelu`` (erf), ``gelu_tanh``, ``gelu_fast``,
``gelu_new`` and ``gelu_quick``. Results are bitwise equal to the same formula written
with native PyTorch ops in the input dtype, on any device. ``ops`` is the
``torch.ops`` namespace of this build (the metadata ``id``); ``layers`` holds the
``nn.Module`` kernel layers.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from . import _plain, layers
from ._native import ACTIVATIONS
from ._ops import ops

if TYPE_CHECKING:
    from torch import Tensor

__all__ = [
    "fatrelu_and_mul",
    "gelu",
    "gelu_and_mul",
    "gelu_fast",
    "gelu_new",
    "gelu_quick",
    "gelu_tanh",
    "gelu_tanh_and_mul",
    "layers",
    "mul_and_silu",
    "ops",
    "silu",
    "silu_and_mul",
]

__kernel_properties__: dict[str, frozenset[str]] = {
    spec.name: frozenset({"deterministic", "batch_invariant"})
    if spec.batch_invariant
    else frozenset({"deterministic"})
    for spec in ACTIVATIONS
}
"""Guarantees per function. All are deterministic (same inputs, device and thread count
give the same bits). Only ``fatrelu_and_mul`` is batch invariant: the others use
transcendental functions whose vectorised and scalar CPU code paths can differ in the
last bit, so a row's result can change with the number of rows around it."""


def silu_and_mul(out: Tensor, x: Tensor) -> Tensor:
    """Fill ``out`` with ``silu(x[..., :d]) * x[..., d:]`` and return it."""
    ops.silu_and_mul(out, x)
    return out


def mul_and_silu(out: Tensor, x: Tensor) -> Tensor:
    """Fill ``out`` with ``x[..., :d] * silu(x[..., d:])`` and return it."""
    ops.mul_and_silu(out, x)
    return out


def gelu_and_mul(out: Tensor, x: Tensor) -> Tensor:
    """Fill ``out`` with ``gelu(x[..., :d]) * x[..., d:]`` (erf GELU) and return it."""
    ops.gelu_and_mul(out, x)
    return out


def gelu_tanh_and_mul(out: Tensor, x: Tensor) -> Tensor:
    """Fill ``out`` with ``gelu_tanh(x[..., :d]) * x[..., d:]`` and return it."""
    ops.gelu_tanh_and_mul(out, x)
    return out


def fatrelu_and_mul(out: Tensor, x: Tensor, threshold: float = 0.0) -> Tensor:
    """Fill ``out`` with ``fatrelu(x[..., :d], threshold) * x[..., d:]`` and return it.

    ``fatrelu(a, t)`` is ``a`` where ``a > t`` and 0 elsewhere.
    """
    ops.fatrelu_and_mul(out, x, float(threshold))
    return out


def silu(out: Tensor, x: Tensor) -> Tensor:
    """Fill ``out`` with ``x * sigmoid(x)`` and return it."""
    ops.silu(out, x)
    return out


def gelu(out: Tensor, x: Tensor) -> Tensor:
    """Fill ``out`` with the exact (erf) GELU of ``x`` and return it."""
    ops.gelu(out, x)
    return out


def gelu_tanh(out: Tensor, x: Tensor) -> Tensor:
    """Fill ``out`` with the tanh-approximated GELU of ``x`` and return it."""
    ops.gelu_tanh(out, x)
    return out


def gelu_fast(out: Tensor, x: Tensor) -> Tensor:
    """Fill ``out`` with ``0.5*x*(1+tanh(0.7978845608*x*(1+0.044715*x*x)))``; return it."""
    ops.gelu_fast(out, x)
    return out


def gelu_new(out: Tensor, x: Tensor) -> Tensor:
    """Fill ``out`` with ``0.5*x*(1+tanh(sqrt(2/pi)*(x+0.044715*x**3)))``; return it."""
    ops.gelu_new(out, x)
    return out


def gelu_quick(out: Tensor, x: Tensor) -> Tensor:
    """Fill ``out`` with ``x*sigmoid(1.702*x)`` and return it."""
    ops.gelu_quick(out, x)
    return out


for _name in __kernel_properties__:
    # the flags kernel loaders read on functions (as on layer classes)
    globals()[_name].has_backward = True
    globals()[_name].can_torch_compile = True

__benchmark__ = {"reference": _plain}
"""``kernel-plugins benchmark`` times this kernel against the plain native formulas
(``_plain``: op by op, every intermediate allocated), not against itself."""
