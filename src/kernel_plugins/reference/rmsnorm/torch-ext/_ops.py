"""PyTorch custom operators of the reference RMSNorm kernel.

In the namespace named by this variant's metadata ``id``:

* ``rms_norm(Tensor input, Tensor weight, float eps) -> Tensor``: the normalised,
  weighted input (what ``LlamaRMSNorm`` returns).
* ``apply_rms_norm(Tensor input, Tensor weight, float eps) -> (Tensor, Tensor)``: the
  community kernel's op, returning ``(output, rstd)`` with ``rstd = rsqrt(mean(x**2) +
  eps)`` per row, in float32 (float64 for float64 input), shaped ``input.shape[:-1]``.
* ``apply_rms_norm_backward(Tensor grad_output, Tensor input, Tensor weight, Tensor
  output, Tensor rstd, float eps, bool input_requires_grad, bool weight_requires_grad)
  -> (Tensor, Tensor)``: ``(grad_input, grad_weight)``; a gradient that is not required
  is an empty tensor.

All kernels are ``CompositeImplicitAutograd`` compositions of native ops, so autograd,
fake tensors and ``torch.compile`` trace through them on every device. Registration is
idempotent per process.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch

from ._namespace import NAMESPACE, add_op_namespace_prefix, define_composite

if TYPE_CHECKING:
    from torch import Tensor

__all__ = [
    "NAMESPACE",
    "add_op_namespace_prefix",
    "apply_rms_norm_backward_native",
    "apply_rms_norm_native",
    "ops",
    "rms_norm_native",
]


def _normalize(input: Tensor, eps: float) -> tuple[Tensor, Tensor]:
    """``(input * rstd, rstd)`` in float32 or wider; ``rstd`` keeps the last dim (size 1)."""
    hidden = input.to(torch.promote_types(input.dtype, torch.float32))
    variance = hidden.pow(2).mean(-1, keepdim=True)
    rstd = torch.rsqrt(variance + eps)
    return hidden * rstd, rstd


def rms_norm_native(input: Tensor, weight: Tensor, eps: float) -> Tensor:
    """RMSNorm as ``LlamaRMSNorm`` computes it, with native ops.

    The input is normalised in float32 (float64 stays float64), cast back to its dtype
    and then multiplied by ``weight``; the result dtype is the promotion of the two.
    """
    hidden, _ = _normalize(input, eps)
    return weight * hidden.to(input.dtype)


def apply_rms_norm_native(input: Tensor, weight: Tensor, eps: float) -> tuple[Tensor, Tensor]:
    """``(rms_norm_native(input, weight, eps), rstd)``; see the module doc for ``rstd``."""
    hidden, rstd = _normalize(input, eps)
    return weight * hidden.to(input.dtype), rstd.squeeze(-1)


def apply_rms_norm_backward_native(
    grad_output: Tensor,
    input: Tensor,
    weight: Tensor,
    output: Tensor,
    rstd: Tensor,
    eps: float,
    input_requires_grad: bool,
    weight_requires_grad: bool,
) -> tuple[Tensor, Tensor]:
    """Gradients of ``apply_rms_norm`` with respect to ``input`` and ``weight``.

    Computed in float32 (or wider) from ``rstd``; ``output`` and ``eps`` are accepted for
    the community signature and not needed. A gradient not asked for is an empty tensor.
    """
    opmath = torch.promote_types(input.dtype, torch.float32)
    r = rstd.to(opmath).unsqueeze(-1)
    normed = input.to(opmath) * r
    empty = input.new_empty((0,))
    grad_weight = empty
    if weight_requires_grad:
        per_row = grad_output.to(opmath) * normed.to(input.dtype).to(opmath)
        grad_weight = per_row.reshape(-1, per_row.shape[-1]).sum(0).to(weight.dtype)
    grad_input = empty
    if input_requires_grad:
        g = grad_output.to(opmath) * weight.to(opmath)
        dot = (g * normed).mean(-1, keepdim=True)
        grad_input = (r * (g - normed * dot)).to(input.dtype)
    return grad_input, grad_weight


_OPERATORS = (
    ("rms_norm", "(Tensor input, Tensor weight, float eps) -> Tensor", rms_norm_native),
    (
        "apply_rms_norm",
        "(Tensor input, Tensor weight, float eps) -> (Tensor, Tensor)",
        apply_rms_norm_native,
    ),
    (
        "apply_rms_norm_backward",
        "(Tensor grad_output, Tensor input, Tensor weight, Tensor output, Tensor rstd, "
        "float eps, bool input_requires_grad, bool weight_requires_grad) "
        "-> (Tensor, Tensor)",
        apply_rms_norm_backward_native,
    ),
)

ops = define_composite(_OPERATORS)
"""The operator namespace ``torch.ops.<metadata id>``."""
