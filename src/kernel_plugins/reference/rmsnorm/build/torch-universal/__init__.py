"""Reference RMSNorm kernel in plain PyTorch.

``apply_rms_norm(input, weight, eps)`` returns ``weight * normalised(input)`` where the
normalisation runs in float32 and is cast back to the input dtype before the weight is
applied (bitwise equal to ``transformers``' ``LlamaRMSNorm``). ``layers.RMSNorm``
replaces the ``forward`` of such a layer, reading its ``weight`` and
``variance_epsilon``. Works on any device; supports autograd and ``torch.compile``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from . import layers
from ._ops import ops

if TYPE_CHECKING:
    from torch import Tensor

__all__ = ["apply_rms_norm", "layers", "ops"]

__kernel_properties__: dict[str, frozenset[str]] = {
    "apply_rms_norm": frozenset({"deterministic"}),
}
"""Guarantees per function. Deterministic for a fixed device, shape and thread count.
Not batch invariant: the reduction over the last dimension may be split differently
depending on how many rows are normalised together."""


def apply_rms_norm(input: Tensor, weight: Tensor, eps: float) -> Tensor:
    """Return ``weight * (input * rsqrt(mean(input**2, -1) + eps))``, normalised in float32."""
    return ops.rms_norm(input, weight, float(eps))
