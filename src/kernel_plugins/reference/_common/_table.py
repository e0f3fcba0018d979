"""The table tier of the fast path: 16-bit element-wise functions as look-ups, on the CPU.

A bfloat16 or float16 input has only 65,536 possible values, so any element-wise formula
is a table of 65,536 results. The table is filled by running the plain formula itself on
every value (with ATen's vector code, see ``_fast.vector_aligned``), so a look-up returns
exactly the bits the formula would; no transcendental function is evaluated per element.
Gated activations (``act(a) * b``) look ``act(a)`` up as float32 and multiply and round
to bfloat16 the way ATen's vector code does (round to nearest even, NaN as ``0xffff``).

The loops are a few lines of C built on first use with the system C compiler (``$CC``,
else ``cc``, ``gcc`` or ``clang``) into a private temporary folder, loaded with
:mod:`ctypes` and deleted; the source is this file's, verified with the kernel, and
building it takes a fraction of a second. Work is split between ``torch.get_num_threads()``
threads (:mod:`ctypes` releases the GIL). Without a compiler the tier is off and the
uncompiled fast path gives the same bits; ``_fast.status()`` says so.
"""

from __future__ import annotations

import ctypes
import functools
import os
import shutil
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING

import torch

from ._fast import record

if TYPE_CHECKING:
    from torch import Tensor

__all__ = ["DTYPES", "all_values", "library", "lookup", "lookup_mul"]

DTYPES = (torch.bfloat16, torch.float16)
"""Element types the table tier serves (``lookup_mul``: bfloat16 only)."""

_SOURCE = r"""
#include <stdint.h>
#include <string.h>

static inline float kp_bf16_to_float(uint16_t b) {
    uint32_t u = (uint32_t)b << 16;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* as ATen's vector conversion: round to nearest even; NaN becomes 0xffff */
static inline uint16_t kp_float_to_bf16(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    uint32_t rounded = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
    return (uint16_t)(((u & 0x7fffffffu) > 0x7f800000u) ? 0xffffu : rounded);
}

void kp_lookup(const uint16_t *restrict x, uint16_t *restrict out,
               const uint32_t *restrict table, int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; i++) out[i] = (uint16_t)table[x[i]];
}

/* rows [row_begin, row_end) of x (2*d per row): out = round(table[act half] * other half) */
void kp_lookup_mul_bf16(const uint16_t *restrict x, uint16_t *restrict out,
                        const float *restrict table, int64_t row_begin, int64_t row_end,
                        int64_t d, int64_t act_first) {
    for (int64_t r = row_begin; r < row_end; r++) {
        const uint16_t *restrict act = x + r * 2 * d + (act_first ? 0 : d);
        const uint16_t *restrict other = x + r * 2 * d + (act_first ? d : 0);
        uint16_t *restrict o = out + r * d;
        for (int64_t i = 0; i < d; i++)
            o[i] = kp_float_to_bf16(table[act[i]] * kp_bf16_to_float(other[i]));
    }
}
"""

_LOCK = threading.Lock()
_LIB: ctypes.CDLL | str | None = None
_POOL: ThreadPoolExecutor | None = None
_POOL_KEY = (0, 0)  # (process id, threads) the pool was made for: a forked child makes its own


def _compiler() -> str | None:
    explicit = os.environ.get("CC", "").strip()
    if explicit:
        return shutil.which(explicit)
    for name in ("cc", "gcc", "clang"):
        found = shutil.which(name)
        if found:
            return found
    return None


def _build() -> ctypes.CDLL | str:
    """Compile and load the C loops, or say why they cannot be."""
    compiler = _compiler()
    if compiler is None:
        return "no C compiler found (set CC, or install cc, gcc or clang)"
    with tempfile.TemporaryDirectory(
        prefix="kernel-plugins-table-", ignore_cleanup_errors=True
    ) as folder:
        source = os.path.join(folder, "table.c")
        target = os.path.join(folder, "table.so")
        with open(source, "w", encoding="utf-8") as handle:
            handle.write(_SOURCE)
        errors = ""
        for arch in (["-march=native"], []):
            command = [compiler, "-O3", *arch, "-std=c99", "-shared", "-fPIC", "-o", target, source]
            try:
                done = subprocess.run(command, capture_output=True, text=True, timeout=120)
            except (OSError, subprocess.SubprocessError) as exc:
                return f"running {compiler} failed: {exc}"
            if done.returncode == 0:
                break
            errors = done.stderr.strip()[-300:]
        else:
            return f"{compiler} could not build the table loops: {errors}"
        try:
            lib = ctypes.CDLL(target)  # loaded before the folder is deleted
        except OSError as exc:
            return f"loading the table loops failed: {exc}"
    pointer, i64 = ctypes.c_void_p, ctypes.c_int64
    lib.kp_lookup.argtypes = [pointer, pointer, pointer, i64, i64]
    lib.kp_lookup.restype = None
    lib.kp_lookup_mul_bf16.argtypes = [pointer, pointer, pointer, i64, i64, i64, i64]
    lib.kp_lookup_mul_bf16.restype = None
    return lib


def library() -> ctypes.CDLL | None:
    """The loaded C loops (built on the first call in this process), or None."""
    global _LIB
    if _LIB is None:
        with _LOCK:
            if _LIB is None:
                started = time.perf_counter()
                _LIB = _build()
                reason = None if isinstance(_LIB, ctypes.CDLL) else _LIB
                tier = "table" if reason is None else "uncompiled"
                seconds = time.perf_counter() - started
                record(("table-loops", "host", "16-bit"), tier, seconds, reason)
    return _LIB if isinstance(_LIB, ctypes.CDLL) else None


@functools.cache
def all_values(dtype: torch.dtype) -> Tensor:
    """Every value of a 16-bit ``dtype``, element ``i`` having bit pattern ``i``."""
    return torch.arange(1 << 16, dtype=torch.int32).to(torch.int16).view(dtype)


def _split(total: int, run: Callable[[int, int], None]) -> None:
    """Run ``run(begin, end)`` over ``[0, total)`` in one piece per thread."""
    global _POOL, _POOL_KEY
    parts = max(1, min(torch.get_num_threads(), total))
    if parts == 1:
        run(0, total)
        return
    with _LOCK:
        if _POOL is None or _POOL_KEY[0] != os.getpid() or _POOL_KEY[1] < parts:
            _POOL = ThreadPoolExecutor(parts, thread_name_prefix="kernel-plugins-table")
            _POOL_KEY = (os.getpid(), parts)
    step = -(-total // parts)
    futures = [_POOL.submit(run, b, min(total, b + step)) for b in range(0, total, step)]
    for future in futures:
        future.result()


def lookup(out: Tensor, x: Tensor, table: Tensor) -> None:
    """``out[i] = table[bits of x[i]]`` for contiguous 16-bit ``x`` and ``out`` of one
    shape; ``table`` holds 65,536 int32 whose low 16 bits are the results."""
    lib = library()
    assert lib is not None and table.dtype == torch.int32 and table.numel() == 1 << 16
    run = functools.partial(lib.kp_lookup, x.data_ptr(), out.data_ptr(), table.data_ptr())
    _split(x.numel(), run)


def lookup_mul(out: Tensor, x: Tensor, table: Tensor, act_first: bool) -> None:
    """The gated form: contiguous bfloat16 ``x`` of rows ``2*d``, ``out`` of rows ``d``;
    ``table`` holds the activation of every value as float32."""
    lib = library()
    assert lib is not None and table.dtype == torch.float32 and table.numel() == 1 << 16
    d = out.shape[-1]
    rows = out.numel() // d
    run = functools.partial(lib.kp_lookup_mul_bf16, x.data_ptr(), out.data_ptr(), table.data_ptr())
    _split(rows, lambda b, e: run(b, e, d, 1 if act_first else 0))
