"""Activation formulas and their derivatives, written with native PyTorch ops only.

The forward formulas are the definitions: the operators in ``_ops`` return exactly what
they return (bitwise). The derivatives compute ``grad * act'(x)`` with PyTorch's native
backward op where there is one, else in at least float32, cast back to the input dtype.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import torch
import torch.nn.functional as F

if TYPE_CHECKING:
    from torch import Tensor

__all__ = ["Activation", "ACTIVATIONS"]

_GELU_FAST_COEF = 0.7978845608
_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)
_TANH_CUBIC = 0.044715
_QUICK_COEF = 1.702


def _opmath(x: Tensor) -> Tensor:
    """Return ``x`` in float32 when it is a lower-precision float, else unchanged."""
    return x.to(torch.promote_types(x.dtype, torch.float32))


def silu(x: Tensor) -> Tensor:
    """``x * sigmoid(x)``."""
    return F.silu(x)


def silu_grad(x: Tensor, grad: Tensor) -> Tensor:
    """``grad * silu'(x)`` (native ``silu_backward``)."""
    return torch.ops.aten.silu_backward(grad, x)


def gelu(x: Tensor) -> Tensor:
    """Exact (erf) GELU."""
    return F.gelu(x)


def gelu_grad(x: Tensor, grad: Tensor) -> Tensor:
    """``grad * gelu'(x)`` (native ``gelu_backward``)."""
    return torch.ops.aten.gelu_backward(grad, x, approximate="none")


def gelu_tanh(x: Tensor) -> Tensor:
    """Tanh-approximated GELU as PyTorch defines it (``approximate="tanh"``)."""
    return F.gelu(x, approximate="tanh")


def gelu_tanh_grad(x: Tensor, grad: Tensor) -> Tensor:
    """``grad * gelu_tanh'(x)`` (native ``gelu_backward``)."""
    return torch.ops.aten.gelu_backward(grad, x, approximate="tanh")


def gelu_fast(x: Tensor) -> Tensor:
    """``0.5*x*(1+tanh(0.7978845608*x*(1+0.044715*x*x)))``."""
    return 0.5 * x * (1 + torch.tanh(_GELU_FAST_COEF * x * (1 + _TANH_CUBIC * x * x)))


def _tanh_gelu_grad(x: Tensor, grad: Tensor, coef: float) -> Tensor:
    """``grad * d/dx [0.5*x*(1+tanh(coef*(x+0.044715*x**3)))]`` in float32 or wider."""
    xf = _opmath(x)
    t = torch.tanh(coef * xf * (1 + _TANH_CUBIC * xf * xf))
    inner_grad = coef * (1 + 3 * _TANH_CUBIC * xf * xf)
    derivative = 0.5 * (1 + t) + 0.5 * xf * (1 - t * t) * inner_grad
    return (_opmath(grad) * derivative).to(x.dtype)


def gelu_fast_grad(x: Tensor, grad: Tensor) -> Tensor:
    """``grad * gelu_fast'(x)``."""
    return _tanh_gelu_grad(x, grad, _GELU_FAST_COEF)


def gelu_new(x: Tensor) -> Tensor:
    """``0.5*x*(1+tanh(sqrt(2/pi)*(x+0.044715*x**3)))``."""
    return 0.5 * x * (1 + torch.tanh(_SQRT_2_OVER_PI * (x + _TANH_CUBIC * x**3)))


def gelu_new_grad(x: Tensor, grad: Tensor) -> Tensor:
    """``grad * gelu_new'(x)``."""
    return _tanh_gelu_grad(x, grad, _SQRT_2_OVER_PI)


def gelu_quick(x: Tensor) -> Tensor:
    """``x*sigmoid(1.702*x)``."""
    return x * torch.sigmoid(_QUICK_COEF * x)


def gelu_quick_grad(x: Tensor, grad: Tensor) -> Tensor:
    """``grad * gelu_quick'(x)`` in float32 or wider."""
    xf = _opmath(x)
    s = torch.sigmoid(_QUICK_COEF * xf)
    derivative = s + _QUICK_COEF * xf * s * (1 - s)
    return (_opmath(grad) * derivative).to(x.dtype)


def fatrelu(x: Tensor, threshold: float) -> Tensor:
    """``x`` where ``x > threshold``, else 0 (NaN maps to 0, like the CUDA kernel)."""
    return torch.where(x > threshold, x, 0.0)


def fatrelu_grad(x: Tensor, grad: Tensor, threshold: float) -> Tensor:
    """``grad`` where ``x > threshold``, else 0."""
    return torch.where(x > threshold, grad, 0.0)


@dataclass(frozen=True)
class Activation:
    """One activation kernel: name, layer class, ``kind`` (``"unary"``: ``act(x)``,
    ``"act_and_mul"``: ``act(x[..., :d]) * x[..., d:]``, ``"mul_and_act"``: ``x[..., :d] *
    act(x[..., d:])``), formula and derivative; ``params``: the float arguments after ``x``
    (with defaults); ``formula``: the description the function and the layer class show."""

    name: str
    layer: str
    kind: str
    act: Callable[..., Tensor]
    grad: Callable[..., Tensor]
    formula: str
    params: tuple[tuple[str, float], ...] = ()
    batch_invariant: bool = False


ACTIVATIONS: tuple[Activation, ...] = (
    Activation("silu_and_mul", "SiluAndMul", "act_and_mul", silu, silu_grad,
               "silu(x[..., :d]) * x[..., d:] (SwiGLU)"),
    Activation("mul_and_silu", "MulAndSilu", "mul_and_act", silu, silu_grad,
               "x[..., :d] * silu(x[..., d:])"),
    Activation("gelu_and_mul", "GeluAndMul", "act_and_mul", gelu, gelu_grad,
               "gelu(x[..., :d]) * x[..., d:] (erf GELU; GeGLU)"),
    Activation("gelu_tanh_and_mul", "GeluTanhAndMul", "act_and_mul", gelu_tanh, gelu_tanh_grad,
               "gelu_tanh(x[..., :d]) * x[..., d:]"),
    # Only comparisons and one multiplication: each element is exactly rounded, so the
    # result for a row never depends on the other rows.
    Activation("fatrelu_and_mul", "FatreluAndMul", "act_and_mul", fatrelu, fatrelu_grad,
               "fatrelu(x[..., :d], threshold) * x[..., d:] (0 where not above the threshold)",
               params=(("threshold", 0.0),), batch_invariant=True),
    Activation("silu", "Silu", "unary", silu, silu_grad, "x * sigmoid(x)"),
    Activation("gelu", "Gelu", "unary", gelu, gelu_grad, "exact (erf) GELU of x"),
    Activation("gelu_tanh", "GeluTanh", "unary", gelu_tanh, gelu_tanh_grad,
               "tanh-approximated GELU of x"),
    Activation("gelu_fast", "FastGELU", "unary", gelu_fast, gelu_fast_grad,
               "0.5*x*(1+tanh(0.7978845608*x*(1+0.044715*x*x)))"),
    Activation("gelu_new", "NewGELU", "unary", gelu_new, gelu_new_grad,
               "0.5*x*(1+tanh(sqrt(2/pi)*(x+0.044715*x**3)))"),
    Activation("gelu_quick", "QuickGELU", "unary", gelu_quick, gelu_quick_grad,
               "x * sigmoid(1.702 * x)"),
)
"""Every activation this kernel provides, in the order of the Hub kernel's API."""
