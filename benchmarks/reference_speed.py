"""Speed of the bundled reference kernels against a plain copy of the same bytes.

For every reference kernel function (the activation family, ``apply_rms_norm``,
``apply_rotary``) and dtype (float32, bfloat16) on one large input (default 4096 x 8192),
in one process:

* ``copy``: ``dst.copy_(x)`` into a preallocated tensor, bytes/s = 2 * input bytes / time
  (read + write), measured in the same run as the kernels; ``clone``: ``x.clone()``, a
  copy that allocates its result as functional kernels (``apply_rms_norm``) must;
* ``eager``: the kernel with ``KERNEL_PLUGINS_REFERENCE_FAST=0`` (the plain formula);
* ``fast``: the kernel as shipped (the fast path), with whether its result is bitwise
  equal to the eager one;
* ``first call``: the fast kernel's first call in this process (there is no compilation;
  it includes touching fresh memory).

Bytes moved per call are the kernel's minimum traffic: every input read once and every
output written once. Figures are the best of ``--runs`` steady-state calls. Writes
``results/reference-speed-<date>.json``, ``.md`` and, with matplotlib, ``.png``.

    python benchmarks/reference_speed.py [--rows 4096 --cols 8192 --runs 5]
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import torch

RESULTS = Path(__file__).resolve().parent / "results"
FAST_ENV = "KERNEL_PLUGINS_REFERENCE_FAST"


def _best(fn: Callable[[], object], runs: int) -> float:
    fn()
    best = float("inf")
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def _modules() -> tuple[Any, Any, Any]:
    import kernel_plugins
    from kernel_plugins.reference import reference_repo

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return tuple(  # type: ignore[return-value]
            kernel_plugins.load(reference_repo(n), device="cpu")
            for n in ("activation", "rmsnorm", "rotary")
        )


def _cases(rows: int, cols: int, dtype: torch.dtype) -> list[dict[str, Any]]:
    """name, bytes, allocates (functional result) and a call returning the result."""
    import torch

    act, rms, rot = _modules()
    gen = torch.Generator().manual_seed(0)
    x = (torch.randn(rows, cols, generator=gen) * 3).to(dtype)
    size = x.element_size()
    half = cols // 2
    cases: list[dict[str, Any]] = []
    for name in act.__all__:
        fn = getattr(act, name)
        if not callable(fn) or name in ("layers", "ops"):
            continue
        gated = "_and_" in name
        out = torch.empty(rows, half if gated else cols, dtype=dtype)
        cases.append({
            "kernel": name,
            "bytes": x.numel() * size + out.numel() * size,
            "allocates": False,
            "call": lambda fn=fn, out=out: fn(out, x),
        })
    w = torch.randn(cols, generator=gen).to(dtype)
    cases.append({
        "kernel": "apply_rms_norm",
        "bytes": 2 * x.numel() * size + w.numel() * size,
        "allocates": True,
        "call": lambda: rms.apply_rms_norm(x, w, 1e-6),
    })
    x1, x2 = x[:, :half].contiguous(), x[:, half:].contiguous()
    cos = torch.randn(rows, half, generator=gen).to(dtype)
    sin = torch.randn(rows, half, generator=gen).to(dtype)
    o1, o2 = torch.empty_like(x1), torch.empty_like(x2)

    def rotary() -> tuple[torch.Tensor, torch.Tensor]:
        rot.apply_rotary(x1, x2, cos, sin, o1, o2, False)
        return o1, o2

    cases.append({
        "kernel": "apply_rotary",
        "bytes": (x.numel() + cos.numel() + sin.numel() + o1.numel() + o2.numel()) * size,
        "allocates": False,
        "call": rotary,
    })
    return cases


def _snapshot(result: object) -> object:
    """A copy of a result (a tensor or a tuple of tensors) that later calls cannot change."""
    if isinstance(result, tuple):
        return tuple(t.clone() for t in result)
    return result.clone()  # type: ignore[attr-defined]


def _equal(a: object, b: object) -> bool:
    import torch

    if isinstance(a, tuple):
        return all(_equal(p, q) for p, q in zip(a, b, strict=True))  # type: ignore[arg-type]
    return bool(torch.equal(a, b))  # type: ignore[arg-type]


def _with_fast(on: bool, fn: Callable[[], object]) -> Callable[[], object]:
    def run() -> object:
        old = os.environ.get(FAST_ENV)
        os.environ[FAST_ENV] = "1" if on else "0"
        try:
            return fn()
        finally:
            if old is None:
                os.environ.pop(FAST_ENV, None)
            else:
                os.environ[FAST_ENV] = old

    return run


def measure(rows: int, cols: int, runs: int) -> dict[str, Any]:
    """Run every case; returns the report (see the module doc)."""
    import torch

    out: dict[str, Any] = {
        "schema": "reference-speed/1",
        "date": dt.date.today().isoformat(),
        "machine": f"{platform.machine()}, {os.cpu_count()} CPUs, {torch.get_num_threads()} threads",
        "torch": torch.__version__,
        "shape": [rows, cols],
        "load_average_before": list(os.getloadavg()) if hasattr(os, "getloadavg") else None,
        "rows": [],
    }
    for dtype in (torch.float32, torch.bfloat16):
        src = torch.randn(rows, cols).to(dtype)
        dst = torch.empty_like(src)
        moved = 2 * src.numel() * src.element_size()
        copy_bps = moved / _best(lambda d=dst, s=src: d.copy_(s), runs)
        clone_bps = moved / _best(lambda s=src: s.clone(), runs)
        for case in _cases(rows, cols, dtype):
            fast, eager = _with_fast(True, case["call"]), _with_fast(False, case["call"])
            start = time.perf_counter()
            fast_result = _snapshot(fast())
            first_s = time.perf_counter() - start
            eager_result = _snapshot(eager())
            eager_s, fast_s = _best(eager, runs), _best(fast, runs)
            base = clone_bps if case["allocates"] else copy_bps
            row = {
                "kernel": case["kernel"],
                "dtype": str(dtype).replace("torch.", ""),
                "bytes": case["bytes"],
                "copy_GBps": copy_bps / 1e9,
                "clone_GBps": clone_bps / 1e9,
                "baseline": "clone" if case["allocates"] else "copy",
                "eager_ms": eager_s * 1e3,
                "eager_GBps": case["bytes"] / eager_s / 1e9,
                "eager_fraction": case["bytes"] / eager_s / base,
                "fast_ms": fast_s * 1e3,
                "fast_GBps": case["bytes"] / fast_s / 1e9,
                "fast_fraction": case["bytes"] / fast_s / base,
                "fast_fraction_of_copy": case["bytes"] / fast_s / copy_bps,
                "first_call_ms": first_s * 1e3,
                "bitwise_equal_to_eager": _equal(fast_result, eager_result),
            }
            out["rows"].append(row)
            print(
                f"{row['kernel']:>18} {row['dtype']:>8}  {row['baseline']} {base / 1e9:5.1f} GB/s  "
                f"eager {row['eager_GBps']:5.1f} GB/s ({row['eager_fraction']:.2f})  "
                f"fast {row['fast_GBps']:5.1f} GB/s ({row['fast_fraction']:.2f})  "
                f"first {row['first_call_ms']:.0f} ms  bitwise {row['bitwise_equal_to_eager']}",
                flush=True,
            )
    out["load_average_after"] = list(os.getloadavg()) if hasattr(os, "getloadavg") else None
    return out


def _markdown(report: dict[str, Any]) -> str:
    lines = [
        f"# Reference kernels vs a copy ({report['date']}, {report['machine']}, torch "
        f"{report['torch']}, input {report['shape'][0]} x {report['shape'][1]})",
        "",
        f"Load average (1, 5, 15 min) before: {report.get('load_average_before')}, after: "
        f"{report.get('load_average_after')}. On a shared 2-core machine other work shows "
        "up as noise of a factor of two or more between runs; compare columns of one row.",
        "",
        "Fraction = kernel bytes/s over the baseline's bytes/s, measured in the same run "
        "(`copy` = `dst.copy_(x)`; `clone` = `x.clone()`, for kernels that allocate their result).",
        "",
        "| kernel | dtype | baseline GB/s | eager GB/s (fraction) | fast GB/s (fraction) | fast / copy_ | first call ms | fast bitwise = eager |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in report["rows"]:
        base = r["clone_GBps"] if r["baseline"] == "clone" else r["copy_GBps"]
        lines.append(
            f"| {r['kernel']} | {r['dtype']} | {r['baseline']} {base:.1f} | "
            f"{r['eager_GBps']:.1f} ({r['eager_fraction']:.2f}) | {r['fast_GBps']:.1f} "
            f"({r['fast_fraction']:.2f}) | {r['fast_fraction_of_copy']:.2f} | "
            f"{r['first_call_ms']:.0f} | {'yes' if r['bitwise_equal_to_eager'] else 'no'} |"
        )
    return "\n".join(lines) + "\n"


def _plot(report: dict[str, Any], path: Path) -> bool:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    rows = report["rows"]
    labels = [f"{r['kernel']}\n{r['dtype']}" for r in rows]
    xs = range(len(rows))
    fig, ax = plt.subplots(figsize=(max(8, len(rows) * 0.55), 4.5))
    ax.bar([i - 0.2 for i in xs], [r["eager_fraction"] for r in rows], 0.4, label="eager")
    ax.bar([i + 0.2 for i in xs], [r["fast_fraction"] for r in rows], 0.4, label="fast")
    ax.axhline(0.5, color="k", linestyle="--", linewidth=0.8, label="target 0.5")
    ax.axhline(0.8, color="grey", linestyle=":", linewidth=0.8, label="stretch 0.8")
    ax.set_xticks(list(xs))
    ax.set_xticklabels(labels, rotation=90, fontsize=7)
    ax.set_ylabel("bytes/s as a fraction of a copy (same run)")
    ax.set_title(
        f"Reference kernels, {report['shape'][0]}x{report['shape'][1]}, {report['machine']}"
    )
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    return True


def _plot_elsewhere(report_json: Path) -> bool:
    """Draw the chart with the suite's matplotlib environment (``harness.envs``)."""
    import subprocess
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from harness.envs import plot_python

    python = plot_python(create=True)
    if python is None:
        return False
    done = subprocess.run([str(python), __file__, "--plot", str(report_json)], check=False)
    return done.returncode == 0


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=4096)
    parser.add_argument("--cols", type=int, default=8192)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("--plot", type=Path, help="only draw the chart of this JSON report")
    args = parser.parse_args(argv)
    if args.plot is not None:
        report = json.loads(args.plot.read_text())
        return 0 if _plot(report, args.plot.with_suffix(".png")) else 1
    if args.rows < 1 or args.cols < 2 or args.cols % 2:
        parser.error("--rows must be >= 1 and --cols an even number >= 2")
    report = measure(args.rows, args.cols, args.runs)
    args.out.mkdir(parents=True, exist_ok=True)
    stem = args.out / f"reference-speed-{report['date']}"
    stem.with_suffix(".json").write_text(json.dumps(report, indent=2) + "\n")
    stem.with_suffix(".md").write_text(_markdown(report))
    plotted = _plot(report, stem.with_suffix(".png")) or _plot_elsewhere(stem.with_suffix(".json"))
    print(f"wrote {stem}.json, {stem}.md" + (f" and {stem}.png" if plotted else " (no matplotlib: no chart)"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
