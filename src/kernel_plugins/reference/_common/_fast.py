"""The reference kernels' fast path: fewer trips through memory, same native ops.

The plain formulas allocate a full-size temporary per operation and read it back, so a
large input crosses memory many times (and every fresh temporary is page-faulted in).
The fast path computes the same native PyTorch operations, in the same order and on the
same operand layouts, but:

* writes into the caller's ``out`` and updates it in place instead of allocating
  (all devices: ``route`` returns ``"direct"``);
* on the CPU, for kernels made only of exactly rounded operations (multiply, add,
  subtract) and per-row reductions, also works through the input in blocks of rows small
  enough to stay in the cache, so each byte is read from memory once (``"blocked"``);
  element-wise formulas with a transcendental op go in blocks only where ATen computes
  the whole and every block with its vector code (:func:`vector_aligned`), so each
  element meets the same code either way.

Element-wise results are therefore bitwise equal to the plain formula: each element goes
through the same kernel code (vectorised or not) as before. This uncompiled path needs
no compiler, so it has no first-call cost, and works on every device PyTorch runs on.
The fast path is used for inputs of at least :data:`MIN_ELEMENTS` elements outside autograd and
tracing (there the plain formula runs, so gradients, fake tensors and ``torch.compile``
see native ops). ``KERNEL_PLUGINS_REFERENCE_FAST=0`` turns it off.

Two faster tiers build code on first use and are taken only where a probe showed they
give the same bits (``_compiled``: the formula fused by ``torch.compile``; ``_table``:
16-bit activations as table look-ups in a small C kernel); :func:`status` says which tier
serves what, and why. ``KERNEL_PLUGINS_REFERENCE_FAST=nocompile`` keeps the fast path but
never builds anything.

This file is shared by every reference kernel: each variant folder holds a copy of it.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import torch

if TYPE_CHECKING:
    from torch import Tensor

__all__ = [
    "BLOCKED_MIN_ELEMENTS",
    "BLOCK_BYTES",
    "COMPILED_MIN_ELEMENTS",
    "LOOPS_MIN_ELEMENTS",
    "bit_mismatches",
    "ENV",
    "MIN_ELEMENTS",
    "admit",
    "blocks",
    "enabled",
    "may_alias",
    "on_cpu",
    "record",
    "compiling",
    "route",
    "same_bits",
    "same_view",
    "status",
    "status_key",
    "vector_aligned",
]

ENV = "KERNEL_PLUGINS_REFERENCE_FAST"
"""Environment variable: ``0`` turns the fast path off, ``nocompile`` keeps it but compiles
nothing (read on every call)."""

MIN_ELEMENTS = 1 << 16
"""Inputs with fewer elements take the plain formula (per-call overhead dominates there)."""

BLOCKED_MIN_ELEMENTS = 1 << 22
"""Inputs with fewer elements are not worked through in blocks on the CPU (``route`` says
``"direct"``): their temporaries stay in the cache anyway, and the per-block calls cost
more than they save."""

LOOPS_MIN_ELEMENTS = 1 << 21
"""Inputs with fewer elements skip the C loops (``_cloops``: tables, rotation): handing
work to their threads costs more than it saves."""

COMPILED_MIN_ELEMENTS = 1 << 22
"""Inputs with fewer elements skip the compiled tier for element-wise kernels: below this,
checking the compiled code's guards costs more than the fused loop saves."""

BLOCK_BYTES = 1 << 21
"""Target size of one operand's block on the CPU (fits the per-core cache with its peers)."""


def _setting() -> str:
    return os.environ.get(ENV, "1").strip().lower()


def enabled() -> bool:
    """Whether the fast path may be used (``KERNEL_PLUGINS_REFERENCE_FAST`` is not ``0``)."""
    return _setting() != "0"


def compiling() -> bool:
    """Whether the fast path may build code (the setting is neither ``0`` nor ``nocompile``)."""
    return _setting() not in ("0", "nocompile")


_VECTOR_UNIT = 64
"""Elements that ATen's CPU element-wise loops handle per vector step, rounded up (two
vectors of 32 half-precision or 16 single-precision lanes on AVX-512)."""

_GRAIN = 32768
"""``at::internal::GRAIN_SIZE``: ATen splits an element-wise loop between threads only
above this many elements."""


def vector_aligned(numel: int, row: int) -> bool:
    """Whether ATen computes every element of an element-wise op over ``numel`` elements
    (rows of ``row`` contiguous elements) with its vector code on the CPU.

    ATen's CPU loops finish each contiguous run with scalar code, which can round
    differently from the vector code (``silu``, ``sigmoid`` and tanh-GELU do in float32).
    The runs are the rows, cut where ``at::parallel_for`` splits the elements between
    threads (``ceil(numel / threads)`` each). When rows, chunks and the total are all
    multiples of the vector step there is no scalar remainder anywhere, so a kernel that
    uses the same vector math (the compiled and table tiers) gives the same bits.
    """
    if numel <= 0 or row <= 0 or row % _VECTOR_UNIT or numel % _VECTOR_UNIT:
        return False
    threads = min(torch.get_num_threads(), -(-numel // _GRAIN))
    if numel < _GRAIN or threads <= 1:
        return True
    return (-(-numel // threads)) % _VECTOR_UNIT == 0


def route(*tensors: Tensor) -> str:
    """``"eager"`` (plain formula), ``"direct"`` (in place, any device) or ``"blocked"`` (CPU).

    The first tensor is the main input. Eager when the fast path is off, the input is
    small, the call is being traced (``torch.compile``, fake or functional tensors, a
    dispatch mode such as ``make_fx``), or autograd records the call. Tensor subclasses
    that compute for real (an emulated device's tensors) take the fast path.
    """
    if tensors[0].numel() < MIN_ELEMENTS or not enabled() or _tracing(tensors):
        return "eager"
    if torch.is_grad_enabled() and any(t.requires_grad for t in tensors):
        return "eager"
    blocked = on_cpu(tensors[0]) and tensors[0].numel() >= BLOCKED_MIN_ELEMENTS
    return "blocked" if blocked else "direct"


_TRACING_TYPES = frozenset({"FakeTensor", "FunctionalTensor"})


def _tracing(tensors: tuple[Tensor, ...]) -> bool:
    """Whether these tensors are being traced rather than computed."""
    if torch.compiler.is_compiling() or torch._C._len_torch_dispatch_stack() > 0:
        return True
    return any(
        type(t).__name__ in _TRACING_TYPES or torch._is_functional_tensor(t) for t in tensors
    )


def on_cpu(t: Tensor) -> bool:
    """Whether ``t`` lives in host memory, computed by ATen's CPU kernels."""
    return t.device.type == "cpu"


_SAME_WIDTH_INT = {1: torch.int8, 2: torch.int16, 4: torch.int32, 8: torch.int64}


def bit_mismatches(a: Tensor, b: Tensor) -> int:
    """How many elements of ``a`` and ``b`` (same dtype and shape) hold different bits
    (``-0.0`` differs from ``0.0``); any NaN matches any NaN."""
    as_int = _SAME_WIDTH_INT[a.element_size()]
    same = a.contiguous().view(as_int) == b.contiguous().view(as_int)
    if a.is_floating_point():
        same |= a.isnan() & b.isnan()
    return int((~same).sum())


def same_bits(a: Tensor, b: Tensor) -> bool:
    """Whether ``a`` and ``b`` have the same dtype, shape and bits (see :func:`bit_mismatches`)."""
    return a.dtype == b.dtype and a.shape == b.shape and bit_mismatches(a, b) == 0


def may_alias(a: Tensor, b: Tensor) -> bool:
    """Whether ``a`` and ``b`` may share memory (True when their memory cannot be inspected,
    as for an emulated device's tensors, which keep theirs elsewhere)."""
    try:
        return bool(a.untyped_storage().data_ptr() == b.untyped_storage().data_ptr())
    except RuntimeError:
        return True


def same_view(a: Tensor, b: Tensor) -> bool:
    """Whether ``a`` and ``b`` are the very same elements (same start, shape and strides)."""
    return a.data_ptr() == b.data_ptr() and a.shape == b.shape and a.stride() == b.stride()


def blocks(shape: torch.Size | tuple[int, ...], itemsize: int) -> Iterator[tuple[int, slice]]:
    """``(dim, slice)`` pieces of ``shape`` along its outermost dimension larger than 1.

    Each piece holds about :data:`BLOCK_BYTES` bytes (at least one index of that
    dimension). A shape whose dimensions are all 1 yields one piece.
    """
    dim = next((i for i, n in enumerate(shape) if n > 1), 0)
    if not shape:
        yield 0, slice(None)
        return
    inner = itemsize
    for n in shape[dim + 1 :]:
        inner *= n
    step = max(1, BLOCK_BYTES // max(inner, 1))
    for start in range(0, shape[dim], step):
        yield dim, slice(start, min(shape[dim], start + step))


_STATUS: dict[tuple[str, str, str], dict[str, Any]] = {}


def status_key(name: str, device_type: str, dtype: torch.dtype) -> tuple[str, str, str]:
    """The key :func:`record` and :func:`status` use: ``(name, device type, dtype name)``."""
    return name, device_type, str(dtype).removeprefix("torch.")


def record(key: tuple[str, str, str], tier: str, seconds: float, reason: str | None = None) -> None:
    """Note which tier serves ``key`` (kernel, device type, dtype), what choosing it cost
    the first call, and why a faster tier was not taken."""
    _STATUS[key] = {"tier": tier, "first_call_s": round(seconds, 3), "reason": reason}


_ADMITTED: dict[tuple[str, str, str], bool] = {}
_ADMIT_LOCK = threading.RLock()


def admit(key: tuple[str, str, str], tier: str, probe: Callable[[], str | None]) -> bool:
    """Whether ``tier`` serves ``key`` (:func:`status_key`): on first use ``probe()`` must
    return ``None`` (it gave the plain formula's bits); the outcome is kept for the rest
    of the process and recorded (as ``tier``, or ``"uncompiled"`` with the reason)."""
    ok = _ADMITTED.get(key)
    if ok is None:
        with _ADMIT_LOCK:
            ok = _ADMITTED.get(key)
            if ok is None:
                started = time.perf_counter()
                reason = probe()
                ok = _ADMITTED[key] = reason is None
                record(key, tier if ok else "uncompiled", time.perf_counter() - started, reason)
    return ok


def status() -> dict[str, dict[str, Any]]:
    """``"kernel device dtype"`` -> ``{"tier", "first_call_s", "reason"}`` for every key a
    probed tier was tried for in this process (the tier that serves it, or
    ``uncompiled`` with the reason)."""
    return {" ".join(key): dict(value) for key, value in _STATUS.items()}
