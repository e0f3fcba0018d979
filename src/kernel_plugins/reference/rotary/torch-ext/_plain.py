"""Rotary embeddings as plain PyTorch computes them (``kernel-plugins benchmark``'s reference):
op by op on whole tensors, every intermediate allocated."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._ops import apply_rotary_transformers_native

if TYPE_CHECKING:
    from torch import Tensor

__all__ = ["apply_rotary", "apply_rotary_transformers"]


def apply_rotary(x1: Tensor, x2: Tensor, cos: Tensor, sin: Tensor, out1: Tensor, out2: Tensor, conj: bool) -> None:
    """Write ``x1*cos - x2*sin`` / ``x2*cos + x1*sin`` (``sin`` negated when ``conj``)."""
    s = -sin if conj else sin
    r1, r2 = x1 * cos - x2 * s, x2 * cos + x1 * s
    out1.copy_(r1)
    out2.copy_(r2)


def apply_rotary_transformers(q: Tensor, k: Tensor, cos: Tensor, sin: Tensor,
                              unsqueeze_dim: int = 1) -> tuple[Tensor, Tensor]:
    """``transformers``' ``apply_rotary_pos_emb`` with plain native ops."""
    return apply_rotary_transformers_native(q, k, cos, sin, unsqueeze_dim)
