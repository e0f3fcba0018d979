"""PyTorch custom operators of the reference rotary-embedding kernel (namespace: this
variant's metadata ``id``; ``CompositeImplicitAutograd``, registered once per process):
``apply_rotary`` (the Hub kernel's out-variant) and ``apply_rotary_transformers`` (the
``transformers`` convention); schemas in ``_OPERATORS``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch

from . import _fast
from ._namespace import NAMESPACE, add_op_namespace_prefix, define_composite

if TYPE_CHECKING:
    from torch import Tensor

__all__ = ["NAMESPACE", "add_op_namespace_prefix", "apply_rotary_native", "apply_rotary_transformers_native",
           "ops", "rotate_half"]


def apply_rotary_native(x1: Tensor, x2: Tensor, cos: Tensor, sin: Tensor, out1: Tensor, out2: Tensor,
                        conj: bool) -> None:
    """Write ``x1*cos - x2*sin`` to ``out1`` and ``x2*cos + x1*sin`` to ``out2``.

    ``conj`` negates ``sin`` (the inverse rotation). Both results are computed before
    either output is written, so ``out1``/``out2`` may be ``x1``/``x2`` (in place).
    Large inputs outside autograd on the CPU go through ``_blocked`` (bitwise the same).
    """
    if _blocked(x1, x2, cos, sin, out1, out2, conj):
        return
    s = -sin if conj else sin
    r1, r2 = x1 * cos - x2 * s, x2 * cos + x1 * s
    for label, out, result in (("out1", out1, r1), ("out2", out2, r2)):
        torch._check(tuple(out.shape) == tuple(result.shape), lambda label=label, out=out, result=result: (
            f"apply_rotary: `{label}` has shape {tuple(out.shape)} but the rotated values have shape "
            f"{tuple(result.shape)}; allocate it with the broadcast shape of x1/x2 and cos/sin"))
    out1.copy_(r1)
    out2.copy_(r2)


def _common_shape(x1: Tensor, x2: Tensor, cos: Tensor, sin: Tensor, out1: Tensor, out2: Tensor) -> torch.Size | None:
    """The broadcast shape of the inputs when all six tensors share one dtype and device
    and both outputs have that shape (what the blocked path needs), else ``None``."""
    tensors = (x1, x2, cos, sin, out1, out2)
    if len({t.dtype for t in tensors}) != 1 or len({t.device for t in tensors}) != 1:
        return None
    try:
        shape = torch.broadcast_shapes(x1.shape, x2.shape, cos.shape, sin.shape)
    except RuntimeError:
        return None
    return shape if tuple(out1.shape) == tuple(shape) == tuple(out2.shape) else None


def _no_self_overlap(t: Tensor) -> bool:
    """Whether no two elements of ``t`` share memory (each stride, smallest first, steps
    past everything the smaller dimensions span)."""
    span = 0
    for stride, size in sorted((st, n) for n, st in zip(t.shape, t.stride(), strict=True) if n > 1):
        if stride <= span:
            return False
        span += (size - 1) * stride
    return True


def _rows_apart(views: list[Tensor], dim: int) -> bool:
    """Whether index ``k`` of ``dim`` of every view lies in its own stretch of memory: all step
    by the same stride ``S`` along ``dim`` and hold nothing beyond ``S`` elements of the lowest
    start, so writing one block never changes what another block reads."""
    strides = {v.stride(dim) for v in views}
    if len(strides) != 1:
        return False
    (step,) = strides
    starts, ends = [], []
    for v in views:
        extent = 1 + sum((n - 1) * st for i, (n, st) in enumerate(zip(v.shape, v.stride(), strict=True)) if i != dim)
        starts.append(v.storage_offset())
        ends.append(v.storage_offset() + extent)
    return step > 0 and max(ends) - min(starts) <= step


def _blocked(x1: Tensor, x2: Tensor, cos: Tensor, sin: Tensor, out1: Tensor, out2: Tensor, conj: bool) -> bool:
    """The rotation in blocks that stay in the CPU cache (the same exactly rounded operations,
    both results of a block computed before either is written: the same bits); False (the
    plain formula runs) unless no output overlaps itself and each block of the outputs shares
    memory only with the same block of the operands."""
    if x1.numel() < _fast.BLOCKED_MIN_ELEMENTS:  # the size first: the checks cost more
        return False
    if _fast.route(x1, x2, cos, sin, out1, out2) != "blocked":
        return False
    shape = _common_shape(x1, x2, cos, sin, out1, out2)
    if shape is None or any(not _no_self_overlap(o) for o in (out1, out2)):
        return False  # the plain formula raises the usual error, if any
    pieces = list(_fast.blocks(shape, x1.element_size()))
    dim, step = pieces[0][0], pieces[0][1].stop - pieces[0][1].start
    views = [t.expand(shape) for t in (x1, x2, cos, sin, out1, out2)]
    for out in views[4:]:
        sharing = [t for t in views if _fast.may_alias(t, out)]
        if len(sharing) > 1 and not _rows_apart(sharing, dim):
            return False
    scratch_shape = list(shape)
    scratch_shape[dim] = step
    t1_buf, t2_buf, r1_buf = (x1.new_empty(scratch_shape) for _ in range(3))
    s_buf = x1.new_empty(scratch_shape) if conj else None
    for _, part in pieces:
        index = (slice(None),) * dim + (part,)
        head = (slice(None),) * dim + (slice(0, part.stop - part.start),)
        a, b, c, s, o1, o2 = (t[index] for t in views)
        t1, t2, r1 = t1_buf[head], t2_buf[head], r1_buf[head]
        if s_buf is not None:
            s = torch.neg(s, out=s_buf[head])
        torch.mul(a, c, out=t1)  # r1 = a*c - b*s and r2 = b*c + a*s, each product rounded
        torch.mul(b, s, out=t2)
        torch.sub(t1, t2, out=r1)
        torch.mul(b, c, out=t1)
        torch.mul(a, s, out=t2)
        t1.add_(t2)
        o1.copy_(r1)
        o2.copy_(t1)
    return True


def rotate_half(x: Tensor) -> Tensor:
    """``cat(-x[..., d:], x[..., :d])`` with ``d`` half the last dimension."""
    d = x.shape[-1] // 2
    return torch.cat((-x[..., d:], x[..., :d]), dim=-1)


def apply_rotary_transformers_native(q: Tensor, k: Tensor, cos: Tensor, sin: Tensor,
                                     unsqueeze_dim: int = 1) -> tuple[Tensor, Tensor]:
    """``transformers``' ``apply_rotary_pos_emb``: ``(q_embed, k_embed)``; ``cos``/``sin`` cover the
    whole head dimension (the angles repeated) or, as the community kernel accepts, its first half."""
    cos, sin = cos.unsqueeze(unsqueeze_dim), sin.unsqueeze(unsqueeze_dim)
    if cos.shape[-1] * 2 == q.shape[-1]:
        cos, sin = torch.cat((cos, cos), dim=-1), torch.cat((sin, sin), dim=-1)
    return (q * cos) + (rotate_half(q) * sin), (k * cos) + (rotate_half(k) * sin)


_OPERATORS = (
    ("apply_rotary", "(Tensor x1, Tensor x2, Tensor cos, Tensor sin, Tensor(a!) out1, Tensor(b!) out2, "
     "bool conj) -> ()", apply_rotary_native),
    ("apply_rotary_transformers", "(Tensor q, Tensor k, Tensor cos, Tensor sin, int unsqueeze_dim=1) -> "
     "(Tensor, Tensor)", apply_rotary_transformers_native),
)

ops = define_composite(_OPERATORS)
"""The operator namespace ``torch.ops.<metadata id>``."""
