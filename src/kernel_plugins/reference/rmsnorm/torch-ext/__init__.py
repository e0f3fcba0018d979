"""Reference RMSNorm kernel in plain PyTorch, with the API of ``kernels-community/rmsnorm``.

``apply_rms_norm(input, weight, eps)`` returns ``weight * normalised(input)`` where the
normalisation runs in float32 and is cast back to the input dtype before the weight is
applied (bitwise equal to ``transformers``' ``LlamaRMSNorm``).
``apply_rms_norm_backward(grad_output, input, weight, output, rstd, eps, ...)`` returns
``(grad_input, grad_weight)``. ``layers.RMSNorm`` replaces the ``forward`` of such a layer,
reading its ``weight`` and ``variance_epsilon``; ``layers.RMSNormFunction`` is the
autograd function built on the two ops. Works on any device; supports autograd and
``torch.compile``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from . import _plain, layers
from ._ops import ops

if TYPE_CHECKING:
    from torch import Tensor

__all__ = ["apply_rms_norm", "apply_rms_norm_backward", "layers", "ops"]

__kernel_properties__: dict[str, frozenset[str]] = {
    "apply_rms_norm": frozenset({"deterministic"}),
    "apply_rms_norm_backward": frozenset({"deterministic"}),
}
"""Guarantees per function. Deterministic for a fixed device, shape and thread count.
Not batch invariant: the reduction over the last dimension may be split differently
depending on how many rows are normalised together."""


def apply_rms_norm(input: Tensor, weight: Tensor, eps: float) -> Tensor:
    """Return ``weight * (input * rsqrt(mean(input**2, -1) + eps))``, normalised in float32."""
    return ops.rms_norm(input, weight, float(eps))  # the first result of ops.apply_rms_norm


def apply_rms_norm_backward(
    grad_output: Tensor,
    input: Tensor,
    weight: Tensor,
    output: Tensor,
    rstd: Tensor,
    eps: float,
    input_requires_grad: bool = True,
    weight_requires_grad: bool = True,
) -> tuple[Tensor | None, Tensor | None]:
    """``(grad_input, grad_weight)`` of :func:`apply_rms_norm`; ``None`` where not required.

    ``rstd`` is the second result of ``ops.apply_rms_norm``.
    """
    grad_input, grad_weight = ops.apply_rms_norm_backward(
        grad_output,
        input,
        weight,
        output,
        rstd,
        float(eps),
        bool(input_requires_grad),
        bool(weight_requires_grad),
    )
    return (
        grad_input if input_requires_grad else None,
        grad_weight if weight_requires_grad else None,
    )


for _name in __kernel_properties__:
    # the flags kernel loaders read on functions (as on layer classes)
    globals()[_name].has_backward = True
    globals()[_name].can_torch_compile = True

__benchmark__ = {"reference": _plain}
"""``kernel-plugins benchmark`` times this kernel against the plain native formulas
(``_plain``: op by op, every intermediate allocated), not against itself."""

del annotations, TYPE_CHECKING  # not the kernel's API
