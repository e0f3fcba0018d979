"""PyTorch custom operators of the reference RMSNorm kernel.

In the namespace named by this variant's metadata ``id``:

* ``rms_norm(Tensor input, Tensor weight, float eps) -> Tensor``: the normalised,
  weighted input (what ``LlamaRMSNorm`` returns).
* ``apply_rms_norm(Tensor input, Tensor weight, float eps) -> (Tensor, Tensor)``: the
  community kernel's op, returning ``(output, rstd)`` with ``rstd = rsqrt(mean(x**2) +
  eps)`` per row, in float32 (float64 for float64 input), shaped ``input.shape[:-1]``.
* ``apply_rms_norm_backward(Tensor grad_output, Tensor input, Tensor weight, Tensor
  output, Tensor rstd, float eps, bool input_requires_grad, bool weight_requires_grad)
  -> (Tensor, Tensor)``: ``(grad_input, grad_weight)``; a gradient that is not required
  is an empty tensor.

All kernels are ``CompositeImplicitAutograd`` compositions of native ops, so autograd,
fake tensors and ``torch.compile`` trace through them on every device. Registration is
idempotent per process.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import torch

from . import _fast
from ._compiled import compiled
from ._fast import blocks, compiling, route
from ._namespace import NAMESPACE, add_op_namespace_prefix, define_composite

if TYPE_CHECKING:
    from torch import Tensor

__all__ = [
    "NAMESPACE",
    "add_op_namespace_prefix",
    "apply_rms_norm_backward_native",
    "apply_rms_norm_native",
    "ops",
    "rms_norm_native",
]


def _normalize(input: Tensor, eps: float) -> tuple[Tensor, Tensor]:
    """``(input * rstd, rstd)`` in float32 or wider; ``rstd`` keeps the last dim (size 1)."""
    hidden = input.to(torch.promote_types(input.dtype, torch.float32))
    variance = hidden.pow(2).mean(-1, keepdim=True)
    rstd = torch.rsqrt(variance + eps)
    return hidden * rstd, rstd


def _blocked(input: Tensor, weight: Tensor, eps: float) -> tuple[Tensor, Tensor] | None:
    """The formula applied to blocks of rows that stay in the CPU cache, or ``None``.

    Each row goes through the same native operations as in ``_normalize`` (``x*x`` is
    what ``pow(x, 2)`` computes), fewer rows at a time, with scratch buffers allocated
    once per call: the input is read from memory once and no full-size temporary is made.
    ``None`` when the fast path does not apply (``_fast.route``) or the layout is unusual.
    """
    if input.numel() < _fast.BLOCKED_MIN_ELEMENTS:  # what route says, without its checks' cost
        return None
    if route(input, weight) != "blocked" or input.dim() < 1 or not input.is_contiguous():
        return None
    d = input.shape[-1]
    if d == 0 or weight.dim() > 1 or weight.device != input.device:
        return None
    opmath = torch.promote_types(input.dtype, torch.float32)
    out = torch.empty(
        input.shape, dtype=torch.promote_types(weight.dtype, input.dtype), device=input.device
    )
    rstd = torch.empty(input.shape[:-1], dtype=opmath, device=input.device)
    rows, out_rows, rstd_rows = input.view(-1, d), out.view(-1, d), rstd.view(-1, 1)
    pieces = list(blocks(rows.shape, torch.finfo(opmath).bits // 8))
    step = pieces[0][1].stop - pieces[0][1].start
    widen = input.dtype != opmath
    hidden_buf = rows.new_empty((step, d), dtype=opmath) if widen else None
    work_buf = rows.new_empty((step, d), dtype=opmath)
    narrow_buf = rows.new_empty((step, d)) if widen else None
    var_buf = rows.new_empty((step, 1), dtype=opmath)
    for _, part in pieces:
        n = part.stop - part.start
        if hidden_buf is not None:
            hidden = hidden_buf[:n].copy_(rows[part])
        else:
            hidden = rows[part]
        work, var = work_buf[:n], var_buf[:n]
        torch.mul(hidden, hidden, out=work)
        torch.mean(work, -1, keepdim=True, out=var)
        var.add_(eps).rsqrt_()
        torch.mul(hidden, var, out=work)
        normed = narrow_buf[:n].copy_(work) if narrow_buf is not None else work
        torch.mul(weight, normed, out=out_rows[part])
        rstd_rows[part].copy_(var)
    return out, rstd


FUSED_OUTPUT_ULPS = 2
"""The compiled tier's bound on the output: units in the last place of the input dtype."""


def _rms_into(input: Tensor, weight: Tensor, eps: float, out: Tensor, rstd: Tensor) -> None:
    """The plain formula on rows, written into ``out`` and ``rstd``: what the compiled tier
    fuses (one pass per row: the sum of squares, then the scaled row)."""
    hidden, r = _normalize(input, eps)
    out.copy_(weight * hidden.to(input.dtype))
    rstd.copy_(r.squeeze(-1))


def _ulps(a: Tensor, b: Tensor) -> float:
    """Largest ``|a - b|`` in units of the spacing of ``b``'s dtype at ``|b|``."""
    spacing = torch.nextafter(b.abs(), torch.full_like(b, float("inf"))) - b.abs()
    return float(((a.double() - b.double()).abs() / spacing.double()).max())


def within_bound(out: Tensor, rstd: Tensor, plain_out: Tensor, plain_rstd: Tensor, d: int) -> bool:
    """Whether a fused result keeps the documented bound against the plain formula: output
    within :data:`FUSED_OUTPUT_ULPS` units in the last place, ``rstd`` within a relative
    ``d * 2**-24`` (the worst-case error of summing ``d`` squares in another order)."""
    if _ulps(out, plain_out) > FUSED_OUTPUT_ULPS:
        return False
    rel = ((rstd.double() - plain_rstd.double()).abs() / plain_rstd.double().abs()).max()
    return bool(rel <= d * 2.0**-24)


def _probe(dtype: torch.dtype, device: torch.device) -> Callable[[Callable[..., Any]], str | None]:
    """The compiled tier's check: rows of very different scales, within the bound."""

    def probe(fused: Callable[..., Any]) -> str | None:
        gen = torch.Generator().manual_seed(7)
        scale = torch.logspace(-3, 3, 512).unsqueeze(-1)
        x = (torch.randn(512, 2048, generator=gen) * scale).to(dtype).to(device)
        w = torch.randn(2048, generator=gen).to(dtype).to(device)
        hidden, r = _normalize(x, 1e-6)
        want_out, want_rstd = w * hidden.to(dtype), r.squeeze(-1)
        out, rstd = torch.empty_like(want_out), torch.empty_like(want_rstd)
        fused(x, w, 1e-6, out, rstd)
        if not within_bound(out, rstd, want_out, want_rstd, x.shape[-1]):
            return "the fused RMSNorm exceeds the documented error bound"
        return None

    return probe


def _fused(input: Tensor, weight: Tensor, eps: float) -> tuple[Tensor, Tensor] | None:
    """The compiled tier for 16-bit inputs (where the blocked path converts every block
    back and forth), or ``None``; within the bound of :func:`within_bound`."""
    if input.numel() < _fast.COMPILED_MIN_ELEMENTS:  # the size first: the rest costs more
        return None
    if input.dtype not in (torch.bfloat16, torch.float16) or not compiling():
        return None
    if route(input, weight) == "eager" or not input.is_contiguous() or input.dim() < 1:
        return None
    d = input.shape[-1]
    if (
        d == 0
        or weight.dtype != input.dtype
        or weight.shape != (d,)
        or weight.device != input.device
    ):
        return None
    fused = compiled(
        "apply_rms_norm",
        _rms_into,
        input.device.type,
        input.dtype,
        _probe(input.dtype, input.device),
    )
    if fused is None:
        return None
    out = torch.empty_like(input)
    rstd = torch.empty(input.shape[:-1], dtype=torch.float32, device=input.device)
    if not fused(input.view(-1, d), weight, float(eps), out.view(-1, d), rstd.view(-1)):
        return None
    return out, rstd


def rms_norm_native(input: Tensor, weight: Tensor, eps: float) -> Tensor:
    """RMSNorm as ``LlamaRMSNorm`` computes it, with native ops.

    The input is normalised in float32 (float64 stays float64), cast back to its dtype
    and then multiplied by ``weight``; the result dtype is the promotion of the two. Large
    inputs outside autograd go through ``_fused`` (16-bit) or, on the CPU, ``_blocked``
    (see the kernel's README for the error bounds).
    """
    fast = _fused(input, weight, eps) or _blocked(input, weight, eps)
    if fast is not None:
        return fast[0]
    hidden, _ = _normalize(input, eps)
    return weight * hidden.to(input.dtype)


def apply_rms_norm_native(input: Tensor, weight: Tensor, eps: float) -> tuple[Tensor, Tensor]:
    """``(rms_norm_native(input, weight, eps), rstd)``; see the module doc for ``rstd``."""
    fast = _fused(input, weight, eps) or _blocked(input, weight, eps)
    if fast is not None:
        return fast
    hidden, rstd = _normalize(input, eps)
    return weight * hidden.to(input.dtype), rstd.squeeze(-1)


def apply_rms_norm_backward_native(
    grad_output: Tensor,
    input: Tensor,
    weight: Tensor,
    output: Tensor,
    rstd: Tensor,
    eps: float,
    input_requires_grad: bool,
    weight_requires_grad: bool,
) -> tuple[Tensor, Tensor]:
    """Gradients of ``apply_rms_norm`` with respect to ``input`` and ``weight``.

    Computed in float32 (or wider) from ``rstd``; ``output`` and ``eps`` are accepted for
    the community signature and not needed. A gradient not asked for is an empty tensor.
    """
    opmath = torch.promote_types(input.dtype, torch.float32)
    r = rstd.to(opmath).unsqueeze(-1)
    normed = input.to(opmath) * r
    empty = input.new_empty((0,))
    grad_weight = empty
    if weight_requires_grad:
        per_row = grad_output.to(opmath) * normed.to(input.dtype).to(opmath)
        grad_weight = per_row.reshape(-1, per_row.shape[-1]).sum(0).to(weight.dtype)
    grad_input = empty
    if input_requires_grad:
        g = grad_output.to(opmath) * weight.to(opmath)
        dot = (g * normed).mean(-1, keepdim=True)
        grad_input = (r * (g - normed * dot)).to(input.dtype)
    return grad_input, grad_weight


_OPERATORS = (
    (
        "rms_norm",
        "(Tensor input, Tensor weight, float eps) -> Tensor",
        rms_norm_native,
    ),
    (
        "apply_rms_norm",
        "(Tensor input, Tensor weight, float eps) -> (Tensor, Tensor)",
        apply_rms_norm_native,
    ),
    (
        "apply_rms_norm_backward",
        "(Tensor grad_output, Tensor input, Tensor weight, Tensor output, Tensor rstd, "
        "float eps, bool input_requires_grad, bool weight_requires_grad) "
        "-> (Tensor, Tensor)",
        apply_rms_norm_backward_native,
    ),
)

ops = define_composite(_OPERATORS)
"""The operator namespace ``torch.ops.<metadata id>``."""
