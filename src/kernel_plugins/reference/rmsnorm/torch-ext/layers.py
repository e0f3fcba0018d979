"""Kernel layer of the reference RMSNorm kernel.

``RMSNorm`` defines no ``__init__`` and no members besides ``forward`` and the flags: it
replaces the ``forward`` of an RMSNorm layer and reads that layer's ``weight`` and
``variance_epsilon`` (set them yourself when using the class directly). Its gradients
are those of native autograd through the same formula. ``RMSNormFunction`` is the
community kernel's autograd function over ``apply_rms_norm`` and
``apply_rms_norm_backward``. Guarantees are declared in ``__kernel_properties__``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import torch
from torch import nn

from ._ops import ops

if TYPE_CHECKING:
    from torch import Tensor

__all__ = ["RMSNorm"]

__kernel_properties__: dict[str, frozenset[str]] = {"RMSNorm": frozenset({"deterministic"})}
"""Guarantees per layer class (see the package's ``__kernel_properties__``)."""


class RMSNormFunction(torch.autograd.Function):
    """Autograd function: forward ``ops.apply_rms_norm``, backward ``ops.apply_rms_norm_backward``."""

    @staticmethod
    def forward(ctx: Any, hidden_states: Tensor, weight: Tensor, variance_epsilon: float) -> Tensor:
        """Normalise ``hidden_states``; saves what the backward needs."""
        output, rstd = ops.apply_rms_norm(hidden_states, weight, float(variance_epsilon))
        ctx.variance_epsilon = float(variance_epsilon)
        ctx.save_for_backward(hidden_states, weight, output, rstd)
        return output

    @staticmethod
    def backward(ctx: Any, grad_output: Tensor) -> tuple[Tensor | None, Tensor | None, None]:
        """Gradients for ``hidden_states`` and ``weight`` (none for the epsilon)."""
        hidden_states, weight, output, rstd = ctx.saved_tensors
        need_input, need_weight = ctx.needs_input_grad[0], ctx.needs_input_grad[1]
        grad_input, grad_weight = ops.apply_rms_norm_backward(
            grad_output,
            hidden_states,
            weight,
            output,
            rstd,
            ctx.variance_epsilon,
            need_input,
            need_weight,
        )
        return (grad_input if need_input else None, grad_weight if need_weight else None, None)


class RMSNorm(nn.Module):
    """RMSNorm computed in float32 and cast back, as ``LlamaRMSNorm`` does."""

    has_backward = True
    can_torch_compile = True

    def forward(self, hidden_states: Tensor) -> Tensor:
        """Normalise ``hidden_states`` with this layer's ``weight`` and ``variance_epsilon``."""
        return ops.rms_norm(hidden_states, self.weight, float(self.variance_epsilon))



__kernel_samples__ = {"RMSNorm": lambda device: [((torch.randn(2, 8, device=device, requires_grad=True),), {}, {
    "weight": nn.Parameter(torch.rand(8, device=device) + 0.5), "variance_epsilon": 1e-6})]}
"""Sample calls for ``kernel-plugins check --ops``: (args, kwargs, the layer's attributes)."""
