"""When a reference kernel may skip the plain formula's temporaries (same native ops, same bits).

The plain formulas allocate a full-size temporary per operation, so a large input crosses
memory many times. For large inputs the kernels run the *same* native PyTorch operations,
in the same order and on operands of the same layout, but write into the caller's ``out``
(``"direct"``, any device) and, on the CPU, through the input in blocks of rows that stay
in the cache (``"blocked"``; only for formulas made of exactly rounded operations). Every
element therefore goes through the same ATen code as in the plain formula: the results
are bitwise equal. Nothing is compiled or built; this is plain PyTorch.

Calls that are small, traced (``torch.compile``, fake or functional tensors, any tensor
subclass such as an emulated device's) or recorded by autograd take the plain formula, so
gradients, fake tensors and compilers see it unchanged.

This file is shared by every reference kernel: each variant folder holds a copy of it.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import torch

if TYPE_CHECKING:
    from torch import Tensor

__all__ = ["BLOCKED_MIN_ELEMENTS", "BLOCK_BYTES", "MIN_ELEMENTS", "blocks", "may_alias", "route"]

MIN_ELEMENTS = 1 << 16
"""Inputs with fewer elements take the plain formula (per-call overhead dominates there)."""

BLOCKED_MIN_ELEMENTS = 1 << 22
"""Inputs with fewer elements are not worked through in blocks: their temporaries stay in
the cache anyway, and the per-block calls cost more than they save."""

BLOCK_BYTES = 1 << 21
"""Target size of one operand's block on the CPU (fits the per-core cache with its peers)."""


def route(*tensors: Tensor) -> str:
    """``"eager"`` (plain formula), ``"direct"`` (into ``out``) or ``"blocked"`` (CPU).

    The first tensor is the main input. Eager when it is small, when ``torch.compile`` is
    tracing, when any tensor is not a plain ``torch.Tensor`` (fake, functional, meta-like
    wrappers, emulated devices: their memory cannot be inspected), or when autograd
    records the call.
    """
    if tensors[0].numel() < MIN_ELEMENTS or torch.compiler.is_compiling():
        return "eager"
    if any(type(t) is not torch.Tensor for t in tensors):
        return "eager"
    if torch.is_grad_enabled() and any(t.requires_grad for t in tensors):
        return "eager"
    if tensors[0].device.type == "cpu" and tensors[0].numel() >= BLOCKED_MIN_ELEMENTS:
        return "blocked"
    return "direct"


def may_alias(a: Tensor, b: Tensor) -> bool:
    """Whether ``a`` and ``b`` may share memory (True when it cannot be inspected)."""
    try:
        return bool(a.untyped_storage().data_ptr() == b.untyped_storage().data_ptr())
    except (RuntimeError, NotImplementedError):
        return True


def blocks(shape: torch.Size | tuple[int, ...], itemsize: int) -> Iterator[tuple[int, slice]]:
    """``(dim, slice)`` pieces of ``shape`` along its outermost dimension larger than 1.

    Each piece holds about :data:`BLOCK_BYTES` bytes (at least one index of that
    dimension). A shape whose dimensions are all 1 yields one piece.
    """
    if not shape:
        yield 0, slice(None)
        return
    dim = next((i for i, n in enumerate(shape) if n > 1), 0)
    inner = itemsize
    for n in shape[dim + 1 :]:
        inner *= n
    step = max(1, BLOCK_BYTES // max(inner, 1))
    for start in range(0, shape[dim], step):
        yield dim, slice(start, min(shape[dim], start + step))
