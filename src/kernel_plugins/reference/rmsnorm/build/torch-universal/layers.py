"""Kernel layer of the reference RMSNorm kernel.

``RMSNorm`` defines no ``__init__`` and no members: it replaces the ``forward`` of an
RMSNorm layer and reads that layer's ``weight`` and ``variance_epsilon``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from torch import nn

from ._ops import ops

if TYPE_CHECKING:
    from torch import Tensor

__all__ = ["RMSNorm"]


class RMSNorm(nn.Module):
    """RMSNorm computed in float32 and cast back, as ``LlamaRMSNorm`` does."""

    has_backward = True
    can_torch_compile = True
    kernel_properties = frozenset({"deterministic"})

    def forward(self, x: Tensor) -> Tensor:
        """Normalise ``x`` with the replaced layer's ``weight`` and ``variance_epsilon``."""
        return ops.rms_norm(x, self.weight, float(self.variance_epsilon))
