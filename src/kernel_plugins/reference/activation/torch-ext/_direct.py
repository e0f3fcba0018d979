"""The activations written straight into ``out``: the ops of each ``_native`` formula, in the
same order on operands of the same layout (bitwise equal), into ``out`` and at most one
scratch buffer. IEEE multiplication is commutative, so ``b * act(a)`` is ``act(a)``, ``*= b``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import torch

from . import _native as N

if TYPE_CHECKING:
    from torch import Tensor

__all__ = ["INTO", "WIDE_ONLY", "act_into"]

aten = torch.ops.aten


def _fatrelu(x: Tensor, out: Tensor, params: tuple[float, ...]) -> None:
    # where(x > t, x, 0.0) compares with t rounded to x's dtype; threshold gives the same
    # for that t except that it keeps NaN, which the formula maps to 0 (NaN > t is false);
    # infinities must stay as they are
    t = torch.tensor(params[0], dtype=torch.float64).to(x.dtype).item()
    aten.threshold.out(x, t, 0.0, out=out)
    out.nan_to_num_(0.0, posinf=float("inf"), neginf=float("-inf"))


def _gelu_fast(x: Tensor, out: Tensor, params: tuple[float, ...]) -> None:
    # 0.5*x*(1+tanh(C*x*(1+K*x*x)))
    tmp = torch.mul(x, N._TANH_CUBIC)
    tmp.mul_(x).add_(1)
    torch.mul(x, N._GELU_FAST_COEF, out=out)
    out.mul_(tmp).tanh_().add_(1)
    torch.mul(x, 0.5, out=tmp)
    out.mul_(tmp)


def _gelu_new(x: Tensor, out: Tensor, params: tuple[float, ...]) -> None:
    # 0.5*x*(1+tanh(S*(x+K*x**3)))
    tmp = torch.pow(x, 3)
    tmp.mul_(N._TANH_CUBIC).add_(x).mul_(N._SQRT_2_OVER_PI).tanh_().add_(1)
    torch.mul(x, 0.5, out=out)
    out.mul_(tmp)


def _gelu_quick(x: Tensor, out: Tensor, params: tuple[float, ...]) -> None:
    # x*sigmoid(Q*x)
    torch.mul(x, N._QUICK_COEF, out=out)
    out.sigmoid_().mul_(x)


INTO: dict[Callable[..., Tensor], Callable[[Tensor, Tensor, tuple[float, ...]], None]] = {
    N.silu: lambda x, out, params: aten.silu.out(x, out=out),
    N.gelu: lambda x, out, params: aten.gelu.out(x, approximate="none", out=out),
    N.gelu_tanh: lambda x, out, params: aten.gelu.out(x, approximate="tanh", out=out),
    N.fatrelu: _fatrelu,
    N.gelu_fast: _gelu_fast,
    N.gelu_new: _gelu_new,
    N.gelu_quick: _gelu_quick,
}
"""Native activation formula -> the same formula written into ``out``."""

WIDE_ONLY = frozenset({N.gelu_fast, N.gelu_new})
"""Formulas of many element-wise ops that take the plain formula in 16-bit types: there each op
converts to float32 and back, which costs more than the direct path saves
(``benchmarks/reference_speed.py``)."""


def act_into(spec: N.Activation, out: Tensor, x: Tensor, params: tuple[float, ...]) -> None:
    """Fill ``out`` with ``spec``'s activation of ``x`` (bitwise as ``_ops._forward``)."""
    into = INTO[spec.act]
    if spec.kind == "unary":
        into(x, out, params)
        return
    d = x.shape[-1] // 2
    a, b = x[..., :d], x[..., d:]
    if spec.kind == "act_and_mul":
        into(a, out, params)
        out.mul_(b)
    else:
        into(b, out, params)
        out.mul_(a)
