"""When a reference kernel may skip the plain formula's temporaries (same native ops, same bits).

For large inputs the kernels run the *same* native operations, in the same order and on
operands of the same layout, but write into the caller's ``out`` (``"direct"``) and, on
the CPU, work in cache-sized blocks of rows (``"blocked"``, for exactly rounded formulas
only): every element meets the same ATen code, so the results are bitwise equal. Small,
traced, subclassed or autograd-recorded calls take the plain formula. Shared by every
reference kernel (each variant folder holds a copy).
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import TYPE_CHECKING

import torch

if TYPE_CHECKING:
    from torch import Tensor

__all__ = ["BLOCKED_MIN_ELEMENTS", "BLOCK_BYTES", "MIN_ELEMENTS", "blocks", "may_alias", "route"]

MIN_ELEMENTS = 1 << 16
"""Inputs with fewer elements take the plain formula (per-call overhead dominates there)."""

BLOCKED_MIN_ELEMENTS = 1 << 22
"""Inputs with fewer elements are not worked in blocks (their temporaries stay in the cache)."""

BLOCK_BYTES = 1 << 21
"""Target size of one operand's block on the CPU (fits the per-core cache with its peers)."""


def route(*tensors: Tensor) -> str:
    """``"eager"`` (plain formula), ``"direct"`` (into ``out``) or ``"blocked"`` (CPU).

    Eager when the first tensor (the main input) is small, under ``torch.compile``, when any
    tensor is not a plain ``torch.Tensor`` (its memory cannot be inspected), or when autograd
    records the call.
    """
    if tensors[0].numel() < MIN_ELEMENTS or torch.compiler.is_compiling():
        return "eager"
    plain = all(type(t) is torch.Tensor for t in tensors)
    if not plain or (torch.is_grad_enabled() and any(t.requires_grad for t in tensors)):
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
    """``(dim, slice)`` pieces of ``shape`` along its outermost dimension larger than 1, each of
    about :data:`BLOCK_BYTES` bytes (at least one index); all dimensions 1: one piece."""
    if not shape:
        yield 0, slice(None)
        return
    dim = next((i for i, n in enumerate(shape) if n > 1), 0)
    inner = math.prod(shape[dim + 1 :]) * itemsize
    step = max(1, BLOCK_BYTES // max(inner, 1))
    for start in range(0, shape[dim], step):
        yield dim, slice(start, min(shape[dim], start + step))
