"""RMSNorm as plain PyTorch computes it: the benchmark reference of this kernel.

``apply_rms_norm`` evaluates the formula op by op on the whole input (every intermediate
allocated), as the kernel's operator does too (RMSNorm has no fast path: working in
blocks would reduce rows in another order and change the bits), so ``kernel-plugins
benchmark`` measures the operator's own cost (see ``__benchmark__`` in the package).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._ops import _normalize

if TYPE_CHECKING:
    from torch import Tensor

__all__ = ["apply_rms_norm"]


def apply_rms_norm(input: Tensor, weight: Tensor, eps: float) -> Tensor:
    """``weight * normalised(input)``, normalised in float32, with plain native ops."""
    hidden, _ = _normalize(input, float(eps))
    return weight * hidden.to(input.dtype)
