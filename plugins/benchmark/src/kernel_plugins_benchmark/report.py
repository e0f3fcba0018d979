"""The result of a benchmark run: table, JSON report and chart."""

from __future__ import annotations

import platform
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ._errors import BenchmarkError, CorrectnessError
from .measure import Check, Stats, tolerance_for

__all__ = ["SCHEMA", "TABLE_HEADERS", "CaseResult", "BenchmarkReport", "plot_report"]

#: Identifier and version of the JSON report layout.
SCHEMA = "kernel-plugins-benchmark/1"
#: A side whose IQR exceeds this fraction of its median is too noisy for a speed-up to mean anything.
NOISY_IQR = 0.5


@dataclass(frozen=True)
class CaseResult:
    """One function on one shape and dtype."""

    function: str
    shape: tuple[int, ...]
    dtype: str
    kernel: Stats | None
    reference: Stats | None
    check: Check

    @property
    def speedup(self) -> float | None:
        """Reference median / kernel median (> 1: the kernel is faster)."""
        if self.kernel is None or self.reference is None or self.kernel.median <= 0:
            return None
        return self.reference.median / self.kernel.median

    @property
    def noise(self) -> str | None:
        """Why the speed-up means nothing (a side's IQR over :data:`NOISY_IQR` of its median), or None."""
        for side, stats in (("kernel", self.kernel), ("reference", self.reference)):
            if self.speedup is not None and stats is not None and stats.iqr > NOISY_IQR * stats.median:
                return (f"the {side}'s spread (IQR {_fmt_time(stats.iqr)}) is {stats.iqr / stats.median:.2g}x "
                        "its median: the speed-up is noise; rerun on an idle machine or with more --iterations")
        return None

    def describe_failure(self) -> str:
        """``silu_and_mul, shape (16, 1024), float32: max abs error ... > tolerance ...``."""
        head = f"{self.function}, shape {self.shape}, {self.dtype}"
        c = self.check
        if c.status == "error":
            return f"{head}: {c.message}"
        errs = ""
        if c.max_abs_error is not None:
            errs = f"max abs error {c.max_abs_error:.3g}, max rel error {c.max_rel_error:.3g}; "
        return (
            f"{head}: {errs}{c.message} (tolerance rtol={c.rtol:g}, atol={c.atol:g}: "
            "|kernel - reference| <= atol + rtol*|reference|)"
        )

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready."""
        speedup = self.speedup
        return {
            "function": self.function,
            "shape": list(self.shape),
            "dtype": self.dtype,
            "kernel": self.kernel.to_dict() if self.kernel else None,
            "reference": self.reference.to_dict() if self.reference else None,
            "speedup": None if speedup is None else round(speedup, 4),
            "speedup_noise": self.noise,
            "check": self.check.to_dict(),
        }


@dataclass
class BenchmarkReport:
    """Everything one benchmark run measured; see the module docstring for the JSON layout."""

    kernel: dict[str, Any]
    reference: dict[str, Any] | None
    device: dict[str, Any]
    settings: dict[str, Any]
    results: list[CaseResult] = field(default_factory=list)
    skipped: list[dict[str, str]] = field(default_factory=list)

    @property
    def emulated(self) -> bool:
        """Whether the device was emulated (times then describe no hardware)."""
        return bool(self.device.get("emulated"))

    @property
    def failures(self) -> list[CaseResult]:
        """Cases whose check failed or raised."""
        return [r for r in self.results if r.check.status in ("fail", "error")]

    @property
    def ok(self) -> bool:
        """True when no check failed."""
        return not self.failures

    def note(self) -> str | None:
        """The warning printed with emulated results, else None."""
        if not self.emulated:
            return None
        return (
            f"device {self.device['device_type']!r} is EMULATED on the CPU: these times say "
            "nothing about any hardware"
        )

    def raise_for_failures(self) -> None:
        """Raise :class:`CorrectnessError` naming every failed function and shape."""
        if self.ok:
            return
        lines = "\n".join(f"  - {r.describe_failure()}" for r in self.failures)
        raise CorrectnessError(
            f"{len(self.failures)} benchmark case(s) of {self.kernel.get('repo_id')} do not match "
            f"the reference {self.reference and self.reference.get('name')}:\n{lines}\nFix the "
            "kernel, or pass a looser --rtol/--atol if the difference is expected."
        )

    def to_dict(self) -> dict[str, Any]:
        """The JSON report."""
        import torch

        from kernel_plugins import __version__

        return {
            "schema": SCHEMA,
            "ok": self.ok,
            "emulated": self.emulated,
            "note": self.note(),
            "kernel": self.kernel,
            "reference": self.reference,
            "device": self.device,
            "settings": self.settings,
            "environment": {
                "python": platform.python_version(),
                "torch": torch.__version__,
                "kernel_plugins": __version__,
                "platform": platform.platform(),
            },
            "results": [r.to_dict() for r in self.results],
            "skipped": list(self.skipped),
        }

    def table_rows(self) -> list[list[str]]:
        """Rows for :meth:`format_table` (header: :data:`TABLE_HEADERS`)."""
        rows = []
        for r in self.results:
            k, ref, s = r.kernel, r.reference, r.speedup
            c = r.check
            check = c.status if c.max_abs_error is None else f"{c.status} ({c.max_abs_error:.2g})"
            rows.append(
                [
                    r.function,
                    "x".join(map(str, r.shape)),
                    r.dtype,
                    *(
                        _fmt_time(getattr(k, a)) if k else "-"
                        for a in ("median", "mean", "std", "min", "iqr")
                    ),
                    _fmt_time(ref.median) if ref else "-",
                    "-" if s is None else f"{s:.2f}x" + (" (noise)" if r.noise else ""),
                    check,
                ]
            )
        return rows

    def format_table(self, *, wide: bool = False) -> str:
        """The human-readable report.

        :param wide: every column (mean and std too) and long lines unwrapped; by default
            the report fits 100 columns (see :data:`NARROW_COLUMNS`).
        """
        out = []
        if self.note():
            out.append(f"NOTE: {self.note()}")
        k = self.kernel
        out.append(
            f"kernel     {k.get('repo_id')} (variant {k.get('variant')}, source {k.get('source')})"
        )
        ref = self.reference
        if ref:
            out.append(f"reference  {ref['name']} ({ref['path']})")
        elif any(r.reference is not None for r in self.results):
            out.append("reference  the functions the kernel's __benchmark__ names (ref median)")
        else:
            out.append("reference  none")
        d = self.device
        out.append(f"device     {d['summary']}; synchronised by {d['synchronize']}")
        st = self.settings
        out.append(
            f"settings   warm-up {st['warmup']}, {st['iterations']} samples per case, "
            f">= {st['min_sample_s'] * 1e3:g} ms per sample; times per call"
        )
        rows = self.table_rows()
        if wide:
            out.append(_format_table(TABLE_HEADERS, rows))
        else:
            keep = [TABLE_HEADERS.index(h) for h in NARROW_COLUMNS]
            out.append(_format_table(NARROW_COLUMNS, [[r[i] for i in keep] for r in rows]))
        used = {(r.dtype, r.check.rtol, r.check.atol) for r in self.results}
        for dtype in self.settings["dtypes"]:
            pairs = sorted({(rt, at) for d, rt, at in used if d == dtype and rt is not None})
            for rtol, atol in pairs or [tolerance_for(dtype)]:
                out.append(
                    f"tolerance  {dtype}: rtol={rtol:g} atol={atol:g} (pass when "
                    "|kernel - reference| <= atol + rtol*|reference|, element-wise)"
                )
        for r in self.results:
            if r.noise:
                out.append(f"noise      {r.function} {'x'.join(map(str, r.shape))} {r.dtype}: {r.noise}")
        for s in self.skipped:
            out.append(f"skipped    {s['function']}: {s['reason']}")
        if self.note():
            out.append(f"NOTE: {self.note()}")
        if wide:
            return "\n".join(out)
        return "\n".join(
            textwrap.fill(line, 100, subsequent_indent=" " * 11, break_on_hyphens=False)
            if len(line) > 100 else line
            for block in out for line in block.splitlines()
        )


#: Column headers of the human-readable table.
TABLE_HEADERS = [
    "function",
    "shape",
    "dtype",
    "median",
    "mean",
    "std",
    "min",
    "IQR",
    "ref median",
    "speed-up",
    "check (max abs err)",
]


#: The columns of the default (100-column) table; ``--wide`` adds mean and std.
NARROW_COLUMNS = [h for h in TABLE_HEADERS if h not in ("mean", "std")]


def _format_table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    widths = [max([len(h), *(len(r[i]) for r in rows)]) for i, h in enumerate(headers)]
    lines = [
        "  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)).rstrip(),
        "  ".join("-" * w for w in widths),
    ]
    lines += ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows]
    return "\n".join(lines)


def _fmt_time(seconds: float) -> str:
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if seconds >= scale:
            return f"{seconds / scale:.3g} {unit}"
    return f"{seconds / 1e-9:.3g} ns"


def plot_report(report: BenchmarkReport, path: str) -> None:
    """Write a PNG bar chart (median per call, IQR as error bars, kernel vs reference).

    :raises BenchmarkError: matplotlib is not installed (``pip install matplotlib``).
    """
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as e:
        raise BenchmarkError(
            "--plot needs matplotlib, which is not installed: pip install matplotlib"
        ) from e
    rows = [r for r in report.results if r.kernel is not None]
    labels = [f"{r.function}\n{'x'.join(map(str, r.shape))} {r.dtype}" for r in rows]
    fig, ax = plt.subplots(figsize=(max(6.0, 0.9 * len(rows) + 2), 4.5))
    xs = list(range(len(rows)))
    width = 0.4
    kern = [r.kernel.median * 1e6 for r in rows]  # type: ignore[union-attr]
    kerr = [r.kernel.iqr * 1e6 / 2 for r in rows]  # type: ignore[union-attr]
    ax.bar([x - width / 2 for x in xs], kern, width, yerr=kerr, label="kernel")
    ref = [r.reference.median * 1e6 if r.reference else 0.0 for r in rows]
    rerr = [r.reference.iqr * 1e6 / 2 if r.reference else 0.0 for r in rows]
    ax.bar([x + width / 2 for x in xs], ref, width, yerr=rerr, label="reference")
    ax.set_xticks(xs, labels, rotation=60, ha="right", fontsize=7)
    ax.set_ylabel("median time per call (us), IQR bars")
    if any(v > 0 for v in kern + ref):
        ax.set_yscale("log")
    title = f"{report.kernel.get('repo_id')} on {report.device['torch_device']}"
    if report.emulated:
        title += " (EMULATED: times describe no hardware)"
    ax.set_title(title, fontsize=9)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
