"""Reference rotary position embedding kernel in plain PyTorch.

``apply_rotary(x1, x2, cos, sin, out1, out2, conj)`` is the Hub kernel's API: it writes
``x1*cos - x2*sin`` to ``out1`` and ``x2*cos + x1*sin`` to ``out2`` (``conj`` flips the
sign of ``sin``); the outputs may be the inputs. ``apply_rotary_transformers(q, k, cos,
sin, unsqueeze_dim=1)`` follows ``transformers``' ``rotate_half`` convention and returns
``(q_embed, k_embed)``; ``layers.apply_rotary_transformers`` is the same as a layer.
Works on any device; supports autograd and ``torch.compile``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from . import _plain, layers
from ._ops import ops

if TYPE_CHECKING:
    from torch import Tensor

__all__ = ["apply_rotary", "apply_rotary_transformers", "layers", "ops"]

__kernel_properties__: dict[str, frozenset[str]] = {
    "apply_rotary": frozenset({"deterministic", "batch_invariant"}),
    "apply_rotary_transformers": frozenset({"deterministic", "batch_invariant"}),
}
"""Guarantees per function. Only exactly rounded element-wise multiplications,
additions and copies, so each element's result is independent of the others (eager
mode; a compiler that fuses into FMA changes the bits, uniformly)."""


def apply_rotary(
    x1: Tensor,
    x2: Tensor,
    cos: Tensor,
    sin: Tensor,
    out1: Tensor,
    out2: Tensor,
    conj: bool,
) -> None:
    """Rotate the pairs ``(x1, x2)`` by the angles given as ``cos``/``sin`` into ``out1/out2``.

    ``out1 = x1*cos - x2*sin`` and ``out2 = x2*cos + x1*sin``; with ``conj=True`` the
    sign of ``sin`` is flipped. ``cos``/``sin`` broadcast against ``x1``/``x2``.
    """
    ops.apply_rotary(x1, x2, cos, sin, out1, out2, bool(conj))


def apply_rotary_transformers(
    q: Tensor, k: Tensor, cos: Tensor, sin: Tensor, unsqueeze_dim: int = 1
) -> tuple[Tensor, Tensor]:
    """Apply rotary embeddings to ``q`` and ``k`` the way ``transformers`` does.

    ``cos``/``sin`` are unsqueezed at ``unsqueeze_dim`` to broadcast against ``q``/``k``;
    returns ``(q*cos + rotate_half(q)*sin, k*cos + rotate_half(k)*sin)``. ``cos``/``sin``
    may also hold only the first half of the head dimension (the angles once).
    """
    q_embed, k_embed = ops.apply_rotary_transformers(q, k, cos, sin, int(unsqueeze_dim))
    return q_embed, k_embed


for _name in __kernel_properties__:
    # the flags kernel loaders read on functions (as on layer classes)
    globals()[_name].has_backward = True
    globals()[_name].can_torch_compile = True

__benchmark__ = {"reference": _plain}
"""``kernel-plugins benchmark`` times this kernel against the plain native formulas
(``_plain``: op by op, every intermediate allocated), not against itself."""

del annotations, TYPE_CHECKING  # not the kernel's API
