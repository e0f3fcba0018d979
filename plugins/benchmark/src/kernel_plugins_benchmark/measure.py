"""Timing through the owning backend's synchronize hook, and output comparison."""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from .inputs import BenchmarkInputs

__all__ = ["TOLERANCES", "tolerance_for", "Stats", "Timer", "Check", "compare"]

#: Default ``(rtol, atol)`` per dtype: an output passes when, element-wise,
#: ``|kernel - reference| <= atol + rtol * |reference|`` (NaN where the reference is NaN).
TOLERANCES: dict[str, tuple[float, float]] = {
    "float64": (1e-7, 1e-7),
    "float32": (1.3e-5, 1e-5),
    "float16": (1e-3, 1e-3),
    "bfloat16": (1.6e-2, 1e-2),
}
_MAX_INNER = 10_000


def tolerance_for(
    dtype: str, rtol: float | None = None, atol: float | None = None
) -> tuple[float, float]:
    """``(rtol, atol)`` for a dtype name, with explicit values taking precedence."""
    base_rtol, base_atol = TOLERANCES.get(dtype, TOLERANCES["float32"])
    return (base_rtol if rtol is None else rtol, base_atol if atol is None else atol)


@dataclass(frozen=True)
class Stats:
    """Per-call times of one function on one input, in seconds."""

    samples: int
    inner: int
    median: float
    mean: float
    std: float
    min: float
    iqr: float

    @classmethod
    def of(cls, times: Sequence[float], inner: int) -> Stats:
        """Statistics of per-call times (one per timed sample)."""
        values = sorted(times)
        if len(values) >= 2:
            q1, _, q3 = statistics.quantiles(values, n=4, method="inclusive")
            std = statistics.stdev(values)
        else:
            q1 = q3 = values[0]
            std = 0.0
        return cls(
            len(values),
            inner,
            statistics.median(values),
            statistics.fmean(values),
            std,
            values[0],
            q3 - q1,
        )

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready, times in microseconds."""
        us = {k: getattr(self, k) * 1e6 for k in ("median", "mean", "std", "min", "iqr")}
        return {
            "samples": self.samples,
            "inner": self.inner,
            **{f"{k}_us": round(v, 4) for k, v in us.items()},
        }


class Timer:
    """Times calls between two calls of ``sync`` (the owning backend's synchronize hook).

    :param sync: waits for queued device work. :param warmup: untimed calls first.
    :param iterations: timed samples. :param min_sample_s: a sample repeats the call
        ``inner`` times so that it lasts at least this long (``inner`` is calibrated once).
    """

    def __init__(
        self, sync: Callable[[], object], warmup: int, iterations: int, min_sample_s: float
    ) -> None:
        self.sync = sync
        self.warmup = warmup
        self.iterations = iterations
        self.min_sample_s = min_sample_s
        self.sync_calls = 0

    def _sync(self) -> None:
        self.sync_calls += 1
        self.sync()

    def _region(self, fn: Callable[..., Any], inputs: BenchmarkInputs, inner: int) -> float:
        args, kwargs = inputs.args, inputs.kwargs
        self._sync()
        start = time.perf_counter()
        for _ in range(inner):
            fn(*args, **kwargs)
        self._sync()
        return time.perf_counter() - start

    def measure(self, fn: Callable[..., Any], inputs: BenchmarkInputs) -> Stats:
        """Warm up, calibrate ``inner``, then take ``iterations`` samples of ``fn(*inputs)``."""
        for _ in range(self.warmup):
            fn(*inputs.args, **inputs.kwargs)
        inner = 1
        while inner < _MAX_INNER:
            took = self._region(fn, inputs, inner)
            if took >= self.min_sample_s:
                break
            grow = self.min_sample_s / max(took, 1e-9) * 1.2
            inner = min(_MAX_INNER, max(inner * 2, math.ceil(inner * grow)))
        times = [self._region(fn, inputs, inner) / inner for _ in range(self.iterations)]
        return Stats.of(times, inner)


@dataclass(frozen=True)
class Check:
    """The comparison of a kernel's outputs with the reference's."""

    status: str  # pass | fail | error | skipped
    rtol: float | None = None
    atol: float | None = None
    max_abs_error: float | None = None
    max_rel_error: float | None = None
    mismatched: int = 0
    elements: int = 0
    message: str = ""

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready."""
        return dict(self.__dict__)


def compare(got: list[Any], want: list[Any], rtol: float, atol: float) -> Check:
    """Compare results element-wise (in float64, on the CPU) within ``rtol``/``atol``."""
    import torch

    if len(got) != len(want):
        return Check(
            "fail", rtol, atol, message=f"{len(got)} results, the reference has {len(want)}"
        )
    max_abs = max_rel = 0.0
    bad = total = 0
    for i, (a, b) in enumerate(zip(got, want, strict=True)):
        if not isinstance(b, torch.Tensor):
            if not isinstance(a, torch.Tensor) and a == b:
                continue
            return Check("fail", rtol, atol, message=f"result {i} is {a!r}, reference {b!r}")
        if not isinstance(a, torch.Tensor) or tuple(a.shape) != tuple(b.shape):
            shape = tuple(a.shape) if isinstance(a, torch.Tensor) else type(a).__name__
            return Check(
                "fail",
                rtol,
                atol,
                message=f"result {i} has shape {shape}, reference {tuple(b.shape)}",
            )
        x = a.detach().to("cpu").to(torch.float64)
        y = b.detach().to("cpu").to(torch.float64)
        diff = (x - y).abs()
        ok = torch.isclose(x, y, rtol=rtol, atol=atol, equal_nan=True)
        finite = torch.isfinite(diff)
        if bool(finite.any()):
            max_abs = max(max_abs, float(diff[finite].max()))
            rel = diff[finite] / y.abs()[finite].clamp_min(1e-30)
            max_rel = max(max_rel, float(rel.max()))
        bad += int((~ok).sum())
        total += ok.numel()
    status = "pass" if bad == 0 else "fail"
    msg = "" if bad == 0 else f"{bad} of {total} elements outside the tolerance"
    return Check(status, rtol, atol, max_abs, max_rel, bad, total, msg)
