"""PyTorch custom operators of the reference rotary-embedding kernel.

In the namespace named by this variant's metadata ``id``:

* ``apply_rotary(Tensor x1, Tensor x2, Tensor cos, Tensor sin, Tensor(a!) out1,
  Tensor(b!) out2, bool conj) -> ()``: the Hub kernel's out-variant.
* ``apply_rotary_transformers(Tensor q, Tensor k, Tensor cos, Tensor sin,
  int unsqueeze_dim=1) -> (Tensor, Tensor)``: the ``transformers`` convention.

Both kernels are ``CompositeImplicitAutograd`` compositions of native ops, so
autograd, fake tensors and ``torch.compile`` trace through them on every device.
Registration is idempotent per process.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import torch

from . import _cloops, _fast
from ._compiled import compiled
from ._fast import blocks, compiling, may_alias, on_cpu, route, same_bits
from ._namespace import NAMESPACE, add_op_namespace_prefix, define_composite

if TYPE_CHECKING:
    from torch import Tensor

__all__ = [
    "NAMESPACE",
    "add_op_namespace_prefix",
    "apply_rotary_native",
    "apply_rotary_transformers_native",
    "ops",
    "rotate_half",
]


def apply_rotary_native(
    x1: Tensor,
    x2: Tensor,
    cos: Tensor,
    sin: Tensor,
    out1: Tensor,
    out2: Tensor,
    conj: bool,
) -> None:
    """Write ``x1*cos - x2*sin`` to ``out1`` and ``x2*cos + x1*sin`` to ``out2``.

    ``conj`` negates ``sin`` (the inverse rotation). Both results are computed before
    either output is written, so ``out1``/``out2`` may be ``x1``/``x2`` (in place).
    Large inputs outside autograd go through ``_fused`` or, on the CPU, ``_blocked``
    (bitwise the same).
    """
    if (
        _looped(x1, x2, cos, sin, out1, out2, conj)
        or _fused(x1, x2, cos, sin, out1, out2, conj)
        or _blocked(x1, x2, cos, sin, out1, out2, conj)
    ):
        return
    r1, r2 = _rotated(x1, x2, cos, sin, conj)
    for label, out, result in (("out1", out1, r1), ("out2", out2, r2)):
        torch._check(
            tuple(out.shape) == tuple(result.shape),
            lambda label=label, out=out, result=result: (
                f"apply_rotary: `{label}` has shape {tuple(out.shape)} but the rotated values "
                f"have shape {tuple(result.shape)}; allocate it with the broadcast shape of "
                "x1/x2 and cos/sin"
            ),
        )
    out1.copy_(r1)
    out2.copy_(r2)


def _rotated(x1: Tensor, x2: Tensor, cos: Tensor, sin: Tensor, conj: bool) -> tuple[Tensor, Tensor]:
    """The plain formula: ``(x1*cos - x2*s, x2*cos + x1*s)`` with ``s = -sin if conj``."""
    s = -sin if conj else sin
    return x1 * cos - x2 * s, x2 * cos + x1 * s


def _rotate_into(
    x1: Tensor, x2: Tensor, cos: Tensor, s: Tensor, out1: Tensor, out2: Tensor
) -> None:
    """The plain formula (``s`` already negated for ``conj``) written into the outputs:
    what the compiled tier fuses."""
    out1.copy_(x1 * cos - x2 * s)
    out2.copy_(x2 * cos + x1 * s)


def _probe(
    dtype: torch.dtype, device: torch.device, in_place: bool
) -> Callable[[Callable[..., Any]], str | None]:
    """A check that ``run(x1, x2, cos, sin, out1, out2, conj)`` gives bitwise the plain
    formula, rotating and un-rotating, into separate outputs and (``in_place``) into the
    inputs, on values that include the special ones."""

    def probe(run: Callable[..., Any]) -> str | None:
        gen = torch.Generator().manual_seed(99)
        q = (torch.randn(256, 4, 128, generator=gen) * 4).to(dtype)
        q.view(-1)[:5] = torch.tensor([0.0, -0.0, float("inf"), float("-inf"), float("nan")])
        cos = torch.randn(256, 1, 64, generator=gen).to(dtype)
        sin = torch.randn(256, 1, 64, generator=gen).to(dtype)
        # angles that make inf * 0, inf - inf and NaN products
        cos.view(-1)[:4] = torch.tensor([float("inf"), 0.0, float("nan"), float("-inf")])
        sin.view(-1)[:4] = torch.tensor([0.0, float("inf"), float("-inf"), float("nan")])
        q, cos, sin = q.to(device), cos.to(device), sin.to(device)
        x1, x2 = q[..., :64], q[..., 64:]
        for conj in (False, True):
            want = _rotated(x1, x2, cos, sin, conj)
            got = (torch.empty_like(x1), torch.empty_like(x2))
            if run(x1, x2, cos, sin, *got, conj) is False:
                return "the probe's layout was declined"
            results = [got]
            if in_place:
                p = q.clone()
                if run(p[..., :64], p[..., 64:], cos, sin, p[..., :64], p[..., 64:], conj) is False:
                    return "the probe's in-place layout was declined"
                results.append((p[..., :64], p[..., 64:]))
            for pair in results:
                for g, w in zip(pair, want, strict=True):
                    if not same_bits(g, w):
                        return f"the rotation differs from the plain formula (conj={conj})"
        return None

    return probe


def _looped(
    x1: Tensor, x2: Tensor, cos: Tensor, sin: Tensor, out1: Tensor, out2: Tensor, conj: bool
) -> bool:
    """The rotation by the C loop (``_cloops.rotate``, CPU, float32 and bfloat16), in place
    or not, once its probe passed; False when it does not apply."""
    # the size first: the other checks cost microseconds a small call should not pay
    if out1.numel() + out2.numel() < _fast.LOOPS_MIN_ELEMENTS:
        return False
    if not compiling() or x1.dtype not in _cloops.ROTATE_DTYPES:
        return False
    if route(x1, x2, cos, sin, out1, out2) == "eager" or not on_cpu(x1):
        return False

    def probe() -> str | None:
        return _probe(x1.dtype, x1.device, in_place=True)(_cloops.rotate)

    if not _cloops.admitted("apply_rotary", x1, "c-loops", probe):
        return False
    return _cloops.rotate(x1, x2, cos, sin, out1, out2, conj)


def _fused(
    x1: Tensor, x2: Tensor, cos: Tensor, sin: Tensor, out1: Tensor, out2: Tensor, conj: bool
) -> bool:
    """The rotation fused by ``torch.compile`` (``_compiled``); False when it does not apply.

    Products, sums and differences are exactly rounded on every code path, so the fused
    loop gives the plain formula's bits wherever its probe passed. Only for outputs that
    share no memory with the inputs or each other (rotating in place takes ``_blocked``:
    inductor's handling of outputs aliasing inputs fails on some layouts).
    """
    if out1.numel() + out2.numel() < _fast.COMPILED_MIN_ELEMENTS:
        return False
    if not compiling() or route(x1, x2, cos, sin, out1, out2) == "eager":
        return False
    if _common_shape(x1, x2, cos, sin, out1, out2) is None:
        return False
    if may_alias(out1, out2) or any(
        may_alias(o, t) for o in (out1, out2) for t in (x1, x2, cos, sin)
    ):
        return False
    fused = _compiled_rotation(x1)
    return fused is not None and fused(x1, x2, cos, -sin if conj else sin, out1, out2)


def _common_shape(
    x1: Tensor, x2: Tensor, cos: Tensor, sin: Tensor, out1: Tensor, out2: Tensor
) -> torch.Size | None:
    """The broadcast shape of the inputs when all six tensors share one dtype and device
    and both outputs have that shape (what the fast paths need), else ``None``."""
    tensors = (x1, x2, cos, sin, out1, out2)
    if len({t.dtype for t in tensors}) != 1 or len({t.device for t in tensors}) != 1:
        return None
    try:
        shape = torch.broadcast_shapes(x1.shape, x2.shape, cos.shape, sin.shape)
    except RuntimeError:
        return None
    if tuple(out1.shape) != tuple(shape) or tuple(out2.shape) != tuple(shape):
        return None
    return shape


def _compiled_rotation(x1: Tensor) -> Callable[..., bool] | None:
    """The compiled tier's ``_rotate_into`` for ``x1``'s device and dtype, or None."""
    if not compiling():
        return None
    check = _probe(x1.dtype, x1.device, in_place=False)

    def probe(fused: Callable[..., Any]) -> str | None:
        return check(lambda a, b, c, s, o1, o2, conj: fused(a, b, c, -s if conj else s, o1, o2))

    return compiled("apply_rotary", _rotate_into, x1.device.type, x1.dtype, probe)


def _rows_apart(views: list[Tensor], dim: int) -> bool:
    """Whether index ``k`` of ``dim`` of every view lies in its own stretch of memory.

    True when all views step by the same stride ``S`` along ``dim`` and, for each index,
    everything they hold lies within ``S`` elements of the lowest start: then the blocks
    along ``dim`` occupy disjoint memory, and writing one block never changes what
    another block reads.
    """
    strides = {v.stride(dim) for v in views}
    if len(strides) != 1:
        return False
    (step,) = strides
    starts, ends = [], []
    for v in views:
        extent = 1 + sum(
            (n - 1) * st
            for i, (n, st) in enumerate(zip(v.shape, v.stride(), strict=True))
            if i != dim
        )
        starts.append(v.storage_offset())
        ends.append(v.storage_offset() + extent)
    return step > 0 and max(ends) - min(starts) <= step


def _safe_outputs(
    outs: tuple[Tensor, Tensor], inputs: tuple[Tensor, ...], shape: torch.Size, dim: int
) -> bool:
    """Whether the outputs can be written block by block without corrupting later reads."""
    expanded = [t.expand(shape) for t in (*inputs, *outs)]
    for out in outs:
        sharing = [t for t in expanded if may_alias(t, out)]
        if len(sharing) > 1 and not _rows_apart(sharing, dim):
            return False
    return True


def _blocked(
    x1: Tensor, x2: Tensor, cos: Tensor, sin: Tensor, out1: Tensor, out2: Tensor, conj: bool
) -> bool:
    """The rotation done in blocks that stay in the CPU cache; False when it does not apply.

    Only exactly rounded products, sums and differences, each element computed by the same
    operations as the plain formula, so the results are bitwise the same; each operand is
    read from memory once and no full-size temporary is made. Where the compiled tier is
    available (outputs that alias the inputs, which ``_fused`` leaves alone) each block is
    rotated by the fused loop into cache-resident scratch and copied out.
    """
    if x1.numel() < _fast.BLOCKED_MIN_ELEMENTS:  # what route says, without its checks' cost
        return False
    if route(x1, x2, cos, sin, out1, out2) != "blocked":
        return False
    shape = _common_shape(x1, x2, cos, sin, out1, out2)
    if shape is None:
        return False  # the plain formula raises the usual error, if any
    inputs = (x1, x2, cos, sin)
    if any(o.dim() != len(shape) or 0 in o.stride() for o in (out1, out2)):
        return False
    itemsize = max(t.element_size() for t in (*inputs, out1, out2))
    big = out1.numel() + out2.numel() >= _fast.COMPILED_MIN_ELEMENTS
    fused = _compiled_rotation(x1) if big else None
    pieces = list(blocks(shape, itemsize))
    if not _safe_outputs((out1, out2), inputs, shape, pieces[0][0]):
        return False
    a_all, b_all, c_all, s_all = (t.expand(shape) for t in inputs)
    step = pieces[0][1].stop - pieces[0][1].start
    dim = pieces[0][0]
    scratch_shape = list(shape)
    scratch_shape[dim] = step
    t1_buf, t2_buf, r1_buf = (x1.new_empty(scratch_shape) for _ in range(3))
    s_buf = x1.new_empty(scratch_shape) if conj else None
    for dim, part in pieces:
        index = (slice(None),) * dim + (part,)
        head = (slice(None),) * dim + (slice(0, part.stop - part.start),)
        a, b, c, s = a_all[index], b_all[index], c_all[index], s_all[index]
        t1, t2, r1 = t1_buf[head], t2_buf[head], r1_buf[head]
        if s_buf is not None:
            s = torch.neg(s, out=s_buf[head])
        if fused is not None and fused(a, b, c, s, t1, r1):
            out1[index].copy_(t1)
            out2[index].copy_(r1)
            continue
        # r1 = a*c - b*s and r2 = b*c + a*s, each product rounded, as the plain formula
        torch.mul(a, c, out=t1)
        torch.mul(b, s, out=t2)
        torch.sub(t1, t2, out=r1)
        torch.mul(b, c, out=t1)
        torch.mul(a, s, out=t2)
        torch.add(t1, t2, out=out2[index])  # a and b are no longer read: out2 may be one
        out1[index].copy_(r1)
    return True


def rotate_half(x: Tensor) -> Tensor:
    """``cat(-x[..., d:], x[..., :d])`` with ``d`` half the last dimension."""
    d = x.shape[-1] // 2
    return torch.cat((-x[..., d:], x[..., :d]), dim=-1)


def apply_rotary_transformers_native(
    q: Tensor, k: Tensor, cos: Tensor, sin: Tensor, unsqueeze_dim: int = 1
) -> tuple[Tensor, Tensor]:
    """``transformers``' ``apply_rotary_pos_emb``: returns ``(q_embed, k_embed)``.

    ``cos``/``sin`` cover the whole head dimension (``transformers`` repeats the angles:
    ``q*cos + rotate_half(q)*sin``) or only its first half, as the community kernel also
    accepts; both give the same bits when the two halves of a full ``cos`` are equal.
    """
    cos = cos.unsqueeze(unsqueeze_dim)
    sin = sin.unsqueeze(unsqueeze_dim)
    head_dim = q.shape[-1]
    if cos.shape[-1] * 2 == head_dim:
        cos = torch.cat((cos, cos), dim=-1)
        sin = torch.cat((sin, sin), dim=-1)
    q_embed = (q * cos) + (rotate_half(q) * sin)
    k_embed = (k * cos) + (rotate_half(k) * sin)
    return q_embed, k_embed


_OPERATORS = (
    (
        "apply_rotary",
        "(Tensor x1, Tensor x2, Tensor cos, Tensor sin, Tensor(a!) out1, Tensor(b!) out2, "
        "bool conj) -> ()",
        apply_rotary_native,
    ),
    (
        "apply_rotary_transformers",
        "(Tensor q, Tensor k, Tensor cos, Tensor sin, int unsqueeze_dim=1) -> (Tensor, Tensor)",
        apply_rotary_transformers_native,
    ),
)

ops = define_composite(_OPERATORS)
"""The operator namespace ``torch.ops.<metadata id>``."""
