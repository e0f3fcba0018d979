"""Which tier of the fast path computes an activation, and the probes that admit each tier.

In order of preference, for a large input outside autograd and tracing:

1. the table tier (``_cloops``): bfloat16 and float16 on the CPU, every function a look-up
   in a table the plain formula filled (gated functions: bfloat16);
2. the compiled tier (``_compiled``): the formulas in :data:`COMPILED`, fused by
   ``torch.compile`` on any device inductor supports;
3. on the CPU, for the formulas in :data:`BLOCKED` (several native ops each, one of
   them a tanh ATen computes slowly), the same native ops in cache-sized blocks, so the
   input and the temporaries cross memory once; nothing is built for it;
4. the direct native ops (``_direct``), which always apply.

A tier serves a (function, device type, dtype) only after its probe gave bitwise the
direct path's result on an input that covers every value (16-bit types) or a million
values across the whole range (float32), and on the CPU only where ATen itself runs its
vector code on every element (``_fast.vector_aligned``): ATen's scalar remainder loops can
round differently, and the plain formula is the definition.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import torch

from . import _cloops, _fast
from ._compiled import compiled
from ._direct import SCRATCH, act_into
from ._fast import admit, bit_mismatches, compiling, on_cpu, status_key, vector_aligned
from ._native import ACTIVATIONS, Activation

if TYPE_CHECKING:
    from torch import Tensor

__all__ = ["BLOCKED", "COMPILED", "run_fast"]

COMPILED = frozenset(
    {"silu_and_mul", "mul_and_silu", "gelu_and_mul", "fatrelu_and_mul", "gelu_quick"}
)
"""Functions whose fused form inductor computes with the same vector math as ATen, and
faster than the direct ops (measured on the CPU; the probe still decides per device and
dtype). The element-wise erf and tanh GELUs round differently when fused; ``silu`` is one
native op already at the speed of memory on the direct path."""

BLOCKED = frozenset(s.name for s in ACTIVATIONS if s.kind == "unary" and s.act in SCRATCH)
"""Element-wise formulas of several native ops (those ``_direct`` runs with a scratch
buffer: ``gelu_fast``, ``gelu_new``) that the CPU computes in blocks when no faster tier
serves them (float32 and wider: the 16-bit types have the table tier). Each
block goes through the same ops as the whole tensor would, and only where ATen runs its
vector code on every element of the whole and of each block."""

_BY_NAME = {spec.name: spec for spec in ACTIVATIONS}
_PROBE_THRESHOLD = (0.3,)


def _fused_body(spec: Activation) -> Callable[..., None]:
    """The plain formula on a flat (unary) or two-dimensional (gated) input, into ``out``."""
    if spec.kind == "unary":

        def fused(out: Tensor, x: Tensor, *params: float) -> None:
            out.copy_(spec.act(x, *params))

    elif spec.kind == "act_and_mul":

        def fused(out: Tensor, x: Tensor, *params: float) -> None:
            d = x.shape[-1] // 2
            out.copy_(spec.act(x[:, :d], *params) * x[:, d:])

    else:

        def fused(out: Tensor, x: Tensor, *params: float) -> None:
            d = x.shape[-1] // 2
            out.copy_(x[:, :d] * spec.act(x[:, d:], *params))

    return fused


def _flat(spec: Activation, out: Tensor, x: Tensor) -> tuple[Tensor, Tensor]:
    """``out`` and ``x`` as the flat (unary) or row (gated) views the tiers work on."""
    if spec.kind == "unary":
        return out.view(-1), x.view(-1)
    return out.view(-1, out.shape[-1]), x.view(-1, x.shape[-1])


def _probe_input(spec: Activation, dtype: torch.dtype, device: torch.device) -> Tensor:
    """An input whose activated half holds every value (16-bit) or 2**20 values spread
    over the whole range with the special ones (float32), in rows of 64 elements, as many
    rows per thread as keeps ATen on its vector code (``vector_aligned``)."""
    gen = torch.Generator().manual_seed(1234)
    if dtype in _cloops.DTYPES:
        values = _cloops.all_values(dtype)
    else:
        sweep = torch.linspace(-60.0, 60.0, 1 << 19)
        noise = torch.randn(1 << 19, generator=gen) * torch.logspace(-8, 2, 1 << 19)
        specials = torch.tensor([0.0, -0.0, float("inf"), float("-inf"), float("nan")])
        values = torch.cat([specials, sweep, noise])[: 1 << 20].to(dtype)
    threads = max(1, torch.get_num_threads())
    rows = -(-values.numel() // 64)
    rows = -(-rows // threads) * threads
    act = torch.randn(rows * 64, generator=gen).to(dtype)
    act[: values.numel()] = values
    act = act.view(rows, 64)
    if spec.kind == "unary":
        return act.to(device)
    other = (torch.randn(rows, 64, generator=gen) * 3).to(dtype)
    halves = (act, other) if spec.kind == "act_and_mul" else (other, act)
    return torch.cat(halves, dim=-1).to(device)


def _probe(
    spec: Activation, dtype: torch.dtype, device: torch.device, run: Callable[..., Any]
) -> str | None:
    """``None`` when ``run(out, x, params)`` gives the direct path's bits on the probe input."""
    x = _probe_input(spec, dtype, device)
    params = _PROBE_THRESHOLD if spec.params else ()
    width = x.shape[-1] if spec.kind == "unary" else x.shape[-1] // 2
    if on_cpu(x) and not vector_aligned(x.shape[0] * width, width):
        return "the probe input is not aligned to ATen's vector code"
    expected = x.new_empty((x.shape[0], width))
    act_into(spec, expected, x, params)
    got = torch.full_like(expected, 7.0)
    run(got, x, params)
    wrong = bit_mismatches(got, expected)
    if wrong:
        return f"{wrong} of {expected.numel()} probe results differ from the plain formula"
    return None


@functools.lru_cache(maxsize=64)
def _table_of(name: str, dtype: torch.dtype, params: tuple[float, ...]) -> Tensor:
    """The look-up table of ``name``: int32 result bits (unary) or float32 (gated)."""
    spec = _BY_NAME[name]
    values = _cloops.all_values(dtype)
    if spec.kind == "unary":
        return spec.act(values, *params).view(torch.int16).to(torch.int32) & 0xFFFF
    # a gated formula activates half of each row: fill the table in that layout, as ATen
    # treats it differently from a contiguous tensor (bfloat16 GELU of subnormals)
    rows = values.view(-1, 64)
    halves = torch.cat([rows, rows], dim=-1)[:, :64]
    return spec.act(halves, *params).reshape(-1).float()


def _run_table(spec: Activation, out: Tensor, x: Tensor, params: tuple[float, ...]) -> None:
    """The table tier (after :func:`_table_serves` admitted it)."""
    _lookup(spec, out, x, params)


def _lookup(spec: Activation, out: Tensor, x: Tensor, params: tuple[float, ...]) -> None:
    """Look ``spec`` of ``x`` up in its table, into ``out``."""
    table = _table_of(spec.name, x.dtype, params)
    if spec.kind == "unary":
        _cloops.lookup(out, x, table)
    else:
        _cloops.lookup_mul(out, x, table, act_first=spec.kind == "act_and_mul")


def _table_serves(spec: Activation, x: Tensor) -> bool:
    """Whether the table tier computes ``spec`` for ``x`` (probing it on first use)."""
    if not on_cpu(x) or x.dtype not in _cloops.DTYPES:
        return False
    if spec.kind != "unary" and (x.dtype != torch.bfloat16 or x.numel() == x.shape[-1]):
        return False  # gated: bfloat16, and rows that are not one contiguous half

    def probe() -> str | None:
        return _probe(spec, x.dtype, x.device, lambda o, i, p: _lookup(spec, o, i, p))

    return _cloops.admitted(spec.name, x, "table", probe)


def _compiled_for(spec: Activation, x: Tensor) -> Callable[..., bool] | None:
    """The compiled tier's function for ``spec`` on ``x``'s device and dtype, or None."""
    if spec.name not in COMPILED:
        return None
    body = _fused_body(spec)

    def probe(fused: Callable[..., None]) -> str | None:
        return _probe(spec, x.dtype, x.device, lambda o, i, p: fused(*_flat(spec, o, i), *p))

    return compiled(spec.name, body, x.device.type, x.dtype, probe)


def _block_spans(numel: int, block: int) -> list[tuple[int, int]] | None:
    """``[start, stop)`` pieces of ``numel`` elements, ``block`` each (the last one may be
    merged into its neighbour), or None when the whole or a piece is not computed
    entirely by ATen's vector code (``vector_aligned``)."""
    if not vector_aligned(numel, numel):
        return None

    def aligned(span: tuple[int, int]) -> bool:
        return vector_aligned(span[1] - span[0], span[1] - span[0])

    spans = [(start, min(numel, start + block)) for start in range(0, numel, block)]
    if len(spans) > 1 and not aligned(spans[-1]):
        spans[-2:] = [(spans[-2][0], numel)]
    return spans if all(aligned(span) for span in spans) else None


def _run_blocked(spec: Activation, out: Tensor, x: Tensor, params: tuple[float, ...]) -> bool:
    """The blocked tier (after :func:`_blocked_serves` admitted it), in blocks of
    ``_fast.BLOCK_BYTES``; False (nothing written) where :func:`_in_blocks` declines."""
    return _in_blocks(spec, out, x, params, _fast.BLOCK_BYTES // x.element_size())


def _in_blocks(
    spec: Activation, out: Tensor, x: Tensor, params: tuple[float, ...], block: int
) -> bool:
    """``spec`` of contiguous ``x`` into ``out``, ``block`` elements at a time with one
    scratch buffer; False (nothing written) when the pieces would not keep ATen on its
    vector code (see :func:`_block_spans`)."""
    flat_out, flat_x = out.view(-1), x.view(-1)
    spans = _block_spans(flat_x.numel(), block)
    if spans is None:
        return False
    into = SCRATCH[spec.act]
    scratch = flat_x.new_empty(max(stop - start for start, stop in spans))
    for start, stop in spans:
        into(flat_x[start:stop], flat_out[start:stop], params, scratch[: stop - start])
    return True


def _blocked_serves(spec: Activation, x: Tensor) -> bool:
    """Whether the blocked tier computes ``spec`` for ``x`` (probing it on first use, with
    blocks small enough to split the probe input)."""
    if spec.name not in BLOCKED or not on_cpu(x) or x.dtype.itemsize < 4:
        return False

    def probe() -> str | None:
        declined: list[bool] = []
        # blocks of 64 * threads * 1024 elements: about 8 of them in the probe input, each
        # split by ATen into per-thread chunks of whole vector steps
        block = 64 * max(1, torch.get_num_threads()) * 1024

        def run(o: Tensor, i: Tensor, p: tuple[float, ...]) -> None:
            if not _in_blocks(spec, o, i, p, block):
                declined.append(True)

        problem = _probe(spec, x.dtype, x.device, run)
        return "the probe input does not split into aligned blocks" if declined else problem

    return admit(status_key(spec.name, x.device.type, x.dtype), "blocked", probe)


def run_fast(spec: Activation, out: Tensor, x: Tensor, params: tuple[float, ...]) -> None:
    """Fill ``out`` with ``spec`` of ``x`` on the fastest tier that gives the plain
    formula's bits (the caller checked that the fast path applies: ``_ops._direct_ok``)."""
    n = x.numel()
    if compiling() and x.is_contiguous() and n >= _fast.LOOPS_MIN_ELEMENTS:
        row = out.shape[-1] if spec.kind != "unary" else out.numel()
        if not on_cpu(x) or vector_aligned(out.numel(), row):
            if _table_serves(spec, x):
                _run_table(spec, out, x, params)
                return
            fused = _compiled_for(spec, x) if n >= _fast.COMPILED_MIN_ELEMENTS else None
            if fused is not None and fused(*_flat(spec, out, x), *params):
                return
    if x.is_contiguous() and n >= _fast.BLOCKED_MIN_ELEMENTS and _blocked_serves(spec, x):
        if _run_blocked(spec, out, x, params):
            return
    _run_direct(spec, out, x, params)


def _run_direct(spec: Activation, out: Tensor, x: Tensor, params: tuple[float, ...]) -> None:
    """The direct native ops (``_direct``): the tier that always applies."""
    act_into(spec, out, x, params)
