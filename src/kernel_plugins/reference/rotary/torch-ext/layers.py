"""Kernel layer of the reference rotary kernel: ``apply_rotary_transformers`` (lower-case, as in
the community kernel), ``transformers``' ``apply_rotary_pos_emb`` as a stateless layer."""

from __future__ import annotations

from typing import TYPE_CHECKING

from torch import nn

from ._ops import ops

if TYPE_CHECKING:
    from torch import Tensor

__all__ = ["apply_rotary_transformers"]

__kernel_properties__: dict[str, frozenset[str]] = {
    "apply_rotary_transformers": frozenset({"deterministic", "batch_invariant"}),
}
"""Guarantees per layer class (see the package's ``__kernel_properties__``)."""


class apply_rotary_transformers(nn.Module):  # noqa: N801 - the community kernel's name
    """Rotary embeddings for ``q`` and ``k`` in the ``transformers`` convention."""

    has_backward = True
    can_torch_compile = True

    def forward(self, q: Tensor, k: Tensor, cos: Tensor, sin: Tensor,
                unsqueeze_dim: int = 1) -> tuple[Tensor, Tensor]:
        """Return ``(q*cos + rotate_half(q)*sin, k*cos + rotate_half(k)*sin)``."""
        q_embed, k_embed = ops.apply_rotary_transformers(q, k, cos, sin, int(unsqueeze_dim))
        return q_embed, k_embed
