"""Small C loops of the fast path, on the CPU: table look-ups and rotation.

*Tables.* A bfloat16 or float16 input has only 65,536 possible values, so any element-wise
formula is a table of 65,536 results. The table is filled by running the plain formula
itself on every value (with ATen's vector code, see ``_fast.vector_aligned``), so a
look-up returns exactly the bits the formula would; no transcendental function is
evaluated per element. Gated activations (``act(a) * b``) look ``act(a)`` up as float32
and multiply and round to bfloat16 the way ATen's vector code does (round to nearest
even, NaN as ``0xffff``).

*Rotation.* ``x1*cos - x2*s`` and ``x2*cos + x1*s`` element by element in float32, or in
bfloat16 rounding after every product, difference and sum as eager PyTorch does, for
operands whose last dimension is contiguous; each element's inputs are read before its
outputs are written, so the outputs may be the inputs (in place).

The loops are built on first use with the system C compiler (``$CC``, else ``cc``,
``gcc`` or ``clang``; ISO C99, no floating-point contraction) into a private temporary
folder, loaded with :mod:`ctypes` and deleted; the source is this file's, verified with
the kernel, and building takes a fraction of a second. Work is split between
``torch.get_num_threads()`` threads (:mod:`ctypes` releases the GIL). Without a compiler
the loops are off and the uncompiled fast path gives the same bits; ``_fast.status()``
says so. Callers probe each use against the plain formula before trusting it.
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

from ._fast import admit, may_alias, record, same_view, status_key

if TYPE_CHECKING:
    from torch import Tensor

__all__ = ["DTYPES", "admitted", "all_values", "library", "lookup", "lookup_mul", "rotate"]

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

/* kp_float_to_bf16 and back, for a product of bfloat16 values: such a product is never a
   NaN with low bits set (a NaN operand's low 16 bits are zero, a new NaN is the default
   one), so rounding keeps any NaN a NaN, which the final kp_float_to_bf16 turns into
   0xffff as ATen would have at this step (a NaN stays a NaN through + and -). */
static inline float kp_round_bf16(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    u = (u + 0x7fffu + ((u >> 16) & 1u)) & 0xffff0000u;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* One element's rotation: float32, and bfloat16 rounded after every product, difference
   and sum as eager PyTorch does. */
static inline void kp_rot_f32(float a, float b, float c, float s, float *r1, float *r2) {
    *r1 = a * c - b * s;
    *r2 = b * c + a * s;
}

static inline void kp_rot_bf16(uint16_t a, uint16_t b, uint16_t c, uint16_t s, float sign,
                               uint16_t *r1, uint16_t *r2) {
    float av = kp_bf16_to_float(a), bv = kp_bf16_to_float(b);
    float cv = kp_bf16_to_float(c), sv = sign * kp_bf16_to_float(s);
    *r1 = kp_float_to_bf16(kp_round_bf16(av * cv) - kp_round_bf16(bv * sv));
    *r2 = kp_float_to_bf16(kp_round_bf16(bv * cv) + kp_round_bf16(av * sv));
}

#define KP_ROT_F32(A, B, C, S, SIGN, R1, R2) kp_rot_f32(A, B, C, (SIGN) * (S), R1, R2)
#define KP_ROT_BF16(A, B, C, S, SIGN, R1, R2) kp_rot_bf16(A, B, C, S, SIGN, R1, R2)

/* The two row loops of a dtype: outputs apart from every input (all pointers restrict),
   or exactly the inputs (element i of a and b is read before it is written, and nothing
   else is); the caller checked which layout it has. Both vectorise. */
#define KP_ROTATE_ROWS(SUFFIX, T, ROT)                                                    \
    static void kp_rotate_apart_##SUFFIX(const T *restrict a, const T *restrict b,        \
                                         const T *restrict c, const T *restrict s,        \
                                         T *restrict p, T *restrict q, int64_t n,         \
                                         float sign) {                                    \
        for (int64_t i = 0; i < n; i++) ROT(a[i], b[i], c[i], s[i], sign, &p[i], &q[i]);  \
    }                                                                                     \
    static void kp_rotate_in_place_##SUFFIX(T *restrict a, T *restrict b,                 \
                                            const T *restrict c, const T *restrict s,     \
                                            int64_t n, float sign) {                      \
        for (int64_t i = 0; i < n; i++) {                                                 \
            T r1, r2;                                                                     \
            ROT(a[i], b[i], c[i], s[i], sign, &r1, &r2);                                  \
            a[i] = r1;                                                                    \
            b[i] = r2;                                                                    \
        }                                                                                 \
    }

KP_ROTATE_ROWS(f32, float, KP_ROT_F32)
KP_ROTATE_ROWS(bf16, uint16_t, KP_ROT_BF16)

/* rows [begin, end) of the outer index (at most 8 dimensions); strides[6 * ndim]: x1,
   x2, cos, sin, out1, out2. Row offsets advance like an odometer (no division per row). */
#define KP_ROTATE(NAME, T, SUFFIX)                                                        \
    void NAME(const T *x1, const T *x2, const T *c, const T *s, T *o1, T *o2,             \
              int64_t ndim, const int64_t *shape, const int64_t *strides, int64_t inner,  \
              int64_t conj, int64_t begin, int64_t end) {                                 \
        const float sign = conj ? -1.0f : 1.0f;                                           \
        int64_t idx[8], off[6] = {0, 0, 0, 0, 0, 0};                                      \
        int64_t rest = begin;                                                             \
        for (int64_t d = ndim - 1; d >= 0; d--) {                                         \
            idx[d] = rest % shape[d];                                                     \
            rest /= shape[d];                                                             \
            for (int j = 0; j < 6; j++) off[j] += idx[d] * strides[j * ndim + d];         \
        }                                                                                 \
        for (int64_t k = begin; k < end; k++) {                                           \
            const T *a = x1 + off[0], *b = x2 + off[1], *cc = c + off[2], *ss = s + off[3]; \
            T *p = o1 + off[4], *q = o2 + off[5];                                         \
            if (p == a && q == b)                                                         \
                kp_rotate_in_place_##SUFFIX(p, q, cc, ss, inner, sign);                   \
            else                                                                          \
                kp_rotate_apart_##SUFFIX(a, b, cc, ss, p, q, inner, sign);                \
            for (int64_t d = ndim - 1; d >= 0; d--) {                                     \
                idx[d]++;                                                                 \
                for (int j = 0; j < 6; j++) off[j] += strides[j * ndim + d];              \
                if (idx[d] < shape[d]) break;                                             \
                for (int j = 0; j < 6; j++) off[j] -= strides[j * ndim + d] * shape[d];   \
                idx[d] = 0;                                                               \
            }                                                                             \
        }                                                                                 \
    }

KP_ROTATE(kp_rotate_f32, float, f32)
KP_ROTATE(kp_rotate_bf16, uint16_t, bf16)

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
        prefix="kernel-plugins-cloops-", ignore_cleanup_errors=True
    ) as folder:
        source = os.path.join(folder, "loops.c")
        target = os.path.join(folder, "loops.so")
        with open(source, "w", encoding="utf-8") as handle:
            handle.write(_SOURCE)
        errors = ""
        for arch in (["-march=native"], []):
            command = [compiler, "-O3", *arch, "-std=c99", "-ffp-contract=off", "-shared", "-fPIC"]
            command += ["-o", target, source]
            try:
                done = subprocess.run(command, capture_output=True, text=True, timeout=120)
            except (OSError, subprocess.SubprocessError) as exc:
                return f"running {compiler} failed: {exc}"
            if done.returncode == 0:
                break
            errors = done.stderr.strip()[-300:]
        else:
            return f"{compiler} could not build the C loops: {errors}"
        try:
            lib = ctypes.CDLL(target)  # loaded before the folder is deleted
        except OSError as exc:
            return f"loading the C loops failed: {exc}"
    pointer, i64 = ctypes.c_void_p, ctypes.c_int64
    lib.kp_lookup.argtypes = [pointer, pointer, pointer, i64, i64]
    lib.kp_lookup.restype = None
    lib.kp_lookup_mul_bf16.argtypes = [pointer, pointer, pointer, i64, i64, i64, i64]
    lib.kp_lookup_mul_bf16.restype = None
    for rotate in (lib.kp_rotate_f32, lib.kp_rotate_bf16):
        rotate.argtypes = [pointer] * 6 + [i64, pointer, pointer, i64, i64, i64, i64]
        rotate.restype = None
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
                tier = "built" if reason is None else "uncompiled"
                seconds = time.perf_counter() - started
                record(("c-loops", "host", "any"), tier, seconds, reason)
    return _LIB if isinstance(_LIB, ctypes.CDLL) else None


def admitted(name: str, x: Tensor, tier: str, probe: Callable[[], str | None]) -> bool:
    """Whether the C loops serve ``name`` for ``x``'s device and dtype: on first use they
    are built and ``probe()`` must return ``None`` (see ``_fast.admit``)."""

    def built_and_probed() -> str | None:
        return "the C loops are not built" if library() is None else probe()

    return admit(status_key(name, x.device.type, x.dtype), tier, built_and_probed)


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
            # a smaller pool is left idle, not shut down: a caller may still hold it
            _POOL = ThreadPoolExecutor(parts, thread_name_prefix="kernel-plugins-cloops")
            _POOL_KEY = (os.getpid(), parts)
        pool = _POOL
    step = -(-total // parts)
    futures = [pool.submit(run, b, min(total, b + step)) for b in range(0, total, step)]
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


ROTATE_DTYPES = (torch.float32, torch.bfloat16)
"""Element types :func:`rotate` serves."""


def rotate(
    x1: Tensor, x2: Tensor, cos: Tensor, sin: Tensor, out1: Tensor, out2: Tensor, conj: bool
) -> bool:
    """The rotation by the C loop; False (nothing written) when the layout does not suit
    it: one dtype of :data:`ROTATE_DTYPES`, outputs of the broadcast shape, every operand
    contiguous along the last dimension, and the outputs either exactly ``x1`` and ``x2``
    (in place, with ``x1`` and ``x2`` apart in memory) or apart from every operand."""
    lib = library()
    tensors = (x1, x2, cos, sin, out1, out2)
    if lib is None or len({t.dtype for t in tensors}) != 1 or x1.dtype not in ROTATE_DTYPES:
        return False
    try:
        shape = torch.broadcast_shapes(x1.shape, x2.shape, cos.shape, sin.shape)
    except RuntimeError:
        return False
    if not 1 <= len(shape) <= 8 or 0 in shape:
        return False
    if tuple(out1.shape) != tuple(shape) or tuple(out2.shape) != tuple(shape):
        return False
    views = [t.expand(shape) for t in tensors]
    if any(v.stride(-1) != 1 and shape[-1] != 1 for v in views):
        return False
    if not _outputs_apart(views):
        return False
    outer = list(shape[:-1]) or [1]
    ndim = len(outer)
    strides = [st for v in views for st in (list(v.stride()[:-1]) or [0])]
    shape_arg = (ctypes.c_int64 * ndim)(*outer)
    strides_arg = (ctypes.c_int64 * (6 * ndim))(*strides)
    fn = lib.kp_rotate_f32 if x1.dtype == torch.float32 else lib.kp_rotate_bf16
    pointers = [v.data_ptr() for v in views]
    rows = 1
    for n in outer:
        rows *= n
    inner, flag = shape[-1], 1 if conj else 0
    _split(rows, lambda b, e: fn(*pointers, ndim, shape_arg, strides_arg, inner, flag, b, e))
    return True


def _span(t: Tensor) -> tuple[int, int]:
    """First and one-past-last element offsets ``t`` can touch in its storage."""
    low = high = int(t.storage_offset())
    for n, st in zip(t.shape, t.stride(), strict=True):
        if st >= 0:
            high += (n - 1) * st
        else:
            low += (n - 1) * st
    return int(low), int(high) + 1


def _overlap(a: Tensor, b: Tensor) -> bool:
    """Whether ``a`` and ``b`` may touch the same memory (conservatively, by spans)."""
    if not may_alias(a, b):
        return False
    (a0, a1), (b0, b1) = _span(a), _span(b)
    return a0 < b1 and b0 < a1


def _dense_rows(t: Tensor, row: int) -> bool:
    """Whether the rows of ``t`` (all dimensions but the last), each taken ``row``
    elements wide, never overlap: sorted by stride, each dimension steps past the extent
    of the smaller ones."""
    extent = row
    dims = zip(t.shape[:-1], t.stride()[:-1], strict=True)
    for st, n in sorted((abs(st), n) for n, st in dims if n > 1):
        if st < extent:
            return False
        extent = st * (n - 1) + extent
    return True


def _halves_apart(x1: Tensor, x2: Tensor) -> bool:
    """Whether ``x1`` and ``x2`` never share an element: separate memory, or one row
    layout with ``x2`` starting ``gap >= width`` elements after ``x1`` in every row and
    rows ``gap + width`` wide that do not overlap (the halves of a rotary input)."""
    if not may_alias(x1, x2):
        return True
    if x1.stride() != x2.stride() or x1.shape != x2.shape:
        return False
    width = int(x1.shape[-1])
    first, second = sorted((int(x1.storage_offset()), int(x2.storage_offset())))
    gap = second - first
    return gap >= width and _dense_rows(x1, gap + width)


def _outputs_apart(views: list[Tensor]) -> bool:
    """The aliasing :func:`rotate` accepts: element ``i`` of an output is only ever
    element ``i`` of its own input, so reading both inputs of ``i`` before writing its
    outputs is safe. Outputs must not repeat elements (no broadcast dimension)."""
    x1, x2, c, s, out1, out2 = views
    if any(
        st == 0 and n > 1 for o in (out1, out2) for n, st in zip(o.shape, o.stride(), strict=True)
    ):
        return False
    if same_view(out1, x1) and same_view(out2, x2):
        return _halves_apart(x1, x2) and not any(
            _overlap(o, t) for o in (out1, out2) for t in (c, s)
        )
    others = (x1, x2, c, s)
    return not _overlap(out1, out2) and not any(
        _overlap(o, t) for o in (out1, out2) for t in others
    )
