"""Speed of the bundled reference kernels against a plain copy of the same bytes.

For every reference kernel function (the activation family, ``apply_rms_norm``,
``apply_rotary`` with separate outputs and in place) and dtype (float32, bfloat16) on one
large input (default 4096 x 8192), in one process:

* ``copy``: ``dst.copy_(x)`` into a preallocated tensor, bytes/s = 2 * input bytes / time
  (read + write), measured again next to every kernel (the machine's speed drifts);
  ``clone``: ``x.clone()``, a copy that allocates its result as functional kernels
  (``apply_rms_norm``) must;
* ``eager``: the kernel with ``KERNEL_PLUGINS_REFERENCE_FAST=0`` (the plain formula);
* ``uncompiled``: ``KERNEL_PLUGINS_REFERENCE_FAST=nocompile`` (the fast path without its
  compiled and table tiers: native ops in place and in cache-sized blocks);
* ``fast``: the kernel as shipped, with the tier that served it (``_fast.status()``) and
  whether its result is bitwise equal to the eager one;
* ``first call``: the fast kernel's first call in this process, with inductor's cache in a
  fresh folder (so it includes compiling and probing), and the first call of a second
  process that finds that cache filled (``--no-warm`` skips it).

Then, at small and medium sizes (4,096 to 4M elements), the per-call time of a few kernels
with each setting: where per-call overhead dominates, the shipped path must be no slower
than the uncompiled one it extends.

Bytes moved per call are the kernel's minimum traffic: every input read once and every
output written once. Figures are the best of ``--runs`` rounds, each timing copy, eager,
uncompiled and fast back to back. Writes ``results/reference-speed-<date>.json``, ``.md``
and, with matplotlib, ``.png``.

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
        cases.append(
            {
                "kernel": name,
                "bytes": x.numel() * size + out.numel() * size,
                "allocates": False,
                "call": lambda fn=fn, out=out: fn(out, x),
                "bound": _bound(name, x, torch.empty_like(out)),
            }
        )
    w = torch.randn(cols, generator=gen).to(dtype)
    cases.append(
        {
            "kernel": "apply_rms_norm",
            "bytes": 2 * x.numel() * size + w.numel() * size,
            "allocates": True,
            "call": lambda: rms.apply_rms_norm(x, w, 1e-6),
        }
    )
    x1, x2 = x[:, :half].contiguous(), x[:, half:].contiguous()
    cos = torch.randn(rows, half, generator=gen).to(dtype)
    sin = torch.randn(rows, half, generator=gen).to(dtype)
    o1, o2 = torch.empty_like(x1), torch.empty_like(x2)

    def rotary() -> tuple[torch.Tensor, torch.Tensor]:
        rot.apply_rotary(x1, x2, cos, sin, o1, o2, False)
        return o1, o2

    cases.append(
        {
            "kernel": "apply_rotary",
            "bytes": (x.numel() + cos.numel() + sin.numel() + o1.numel() + o2.numel()) * size,
            "allocates": False,
            "call": rotary,
        }
    )
    # in place on (tokens, heads, head_dim) with angles shared by the heads, as models call it
    heads = 32 if cols % 64 == 0 and cols >= 64 else 1
    q = (torch.randn(rows, heads, cols // heads, generator=gen) * 3).to(dtype)
    h = q.shape[-1] // 2
    qc = torch.randn(rows, 1, h, generator=gen).to(dtype)
    qs = torch.randn(rows, 1, h, generator=gen).to(dtype)

    def rotary_in_place() -> torch.Tensor:
        rot.apply_rotary(q[..., :h], q[..., h:], qc, qs, q[..., :h], q[..., h:], False)
        return q

    cases.append(
        {
            "kernel": "apply_rotary_in_place",
            "bytes": (2 * q.numel() + qc.numel() + qs.numel()) * size,
            "allocates": False,
            "call": rotary_in_place,
        }
    )
    return cases


def _bound(name: str, x: torch.Tensor, out: torch.Tensor) -> Callable[[], object] | None:
    """For a float32 kernel that must give the bits of one costly native op on every
    element (a tanh GELU), that op alone on the same input, into a preallocated ``out``:
    the kernel cannot take less time than it without computing the op differently. (The
    16-bit kernels look their results up in tables the op filled: no bound applies.)"""
    import torch

    if x.element_size() < 4:
        return None
    aten = torch.ops.aten
    a = x[:, : x.shape[-1] // 2]
    bounds: dict[str, Callable[[], object]] = {
        "gelu_tanh": lambda: aten.gelu.out(x, approximate="tanh", out=out),
        "gelu_tanh_and_mul": lambda: aten.gelu.out(a, approximate="tanh", out=out),
        "gelu_fast": lambda: torch.tanh(x, out=out),
        "gelu_new": lambda: torch.tanh(x, out=out),
    }
    return bounds.get(name)


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


def _with_fast(setting: str, fn: Callable[[], object]) -> Callable[[], object]:
    def run() -> object:
        old = os.environ.get(FAST_ENV)
        os.environ[FAST_ENV] = setting
        try:
            return fn()
        finally:
            if old is None:
                os.environ.pop(FAST_ENV, None)
            else:
                os.environ[FAST_ENV] = old

    return run


def _tiers() -> dict[str, dict[str, Any]]:
    """What each reference kernel's fast path chose in this process (``_fast.status()``)."""
    from kernel_plugins.reference import fast_path_status

    return fast_path_status()


def _tier_of(kernel: str, dtype: str) -> str:
    base = kernel.removesuffix("_in_place")
    report = _tiers().get(f"{base} cpu {dtype}")
    if report is None:
        return "uncompiled"
    return str(report["tier"])


def measure(rows: int, cols: int, runs: int) -> dict[str, Any]:
    """Run every case; returns the report (see the module doc)."""
    import torch

    out: dict[str, Any] = {
        "schema": "reference-speed/3",
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
        for case in _cases(rows, cols, dtype):
            fast = _with_fast("1", case["call"])
            eager = _with_fast("0", case["call"])
            uncompiled = _with_fast("nocompile", case["call"])
            start = time.perf_counter()
            fast_result = _snapshot(fast())
            first_s = time.perf_counter() - start
            if case["kernel"] == "apply_rotary_in_place":
                equal = _in_place_equal(case["call"])  # each call rotates q again
            else:
                equal = _equal(fast_result, _snapshot(eager()))
            best = {
                "copy": float("inf"),
                "clone": float("inf"),
                "eager": float("inf"),
                "uncompiled": float("inf"),
                "fast": float("inf"),
                "bound": float("inf"),
            }
            timed = {
                "copy": lambda d=dst, s=src: d.copy_(s),
                "clone": lambda s=src: s.clone(),
                "eager": eager,
                "uncompiled": uncompiled,
                "fast": fast,
                "bound": case.get("bound"),
            }
            for _ in range(runs):
                for key, fn in timed.items():
                    if fn is None or (key == "clone" and not case["allocates"]):
                        continue
                    best[key] = min(best[key], _best(fn, 1))
            copy_bps = moved / best["copy"]
            base = moved / best["clone"] if case["allocates"] else copy_bps
            dtype_name = str(dtype).replace("torch.", "")
            row = {
                "kernel": case["kernel"],
                "dtype": dtype_name,
                "bytes": case["bytes"],
                "copy_GBps": copy_bps / 1e9,
                "baseline": "clone" if case["allocates"] else "copy",
                "baseline_GBps": base / 1e9,
                "tier": _tier_of(case["kernel"], dtype_name),
                "first_call_ms": first_s * 1e3,
                "bitwise_equal_to_eager": equal,
            }
            for key in ("eager", "uncompiled", "fast"):
                row[f"{key}_ms"] = best[key] * 1e3
                row[f"{key}_GBps"] = case["bytes"] / best[key] / 1e9
                row[f"{key}_fraction"] = case["bytes"] / best[key] / base
            row["fast_fraction_of_copy"] = case["bytes"] / best["fast"] / copy_bps
            row["bound_fraction"] = (
                case["bytes"] / best["bound"] / base if case.get("bound") is not None else None
            )
            out["rows"].append(row)
            print(
                f"{row['kernel']:>22} {row['dtype']:>8}  {row['baseline']} {base / 1e9:5.1f} GB/s  "
                f"eager {row['eager_fraction']:.2f}  uncompiled {row['uncompiled_fraction']:.2f}  "
                f"fast {row['fast_GBps']:5.1f} GB/s ({row['fast_fraction']:.2f}, {row['tier']})  "
                f"first {row['first_call_ms']:.0f} ms  bitwise {row['bitwise_equal_to_eager']}"
                + ("" if row["bound_fraction"] is None else f"  bound {row['bound_fraction']:.2f}"),
                flush=True,
            )
    out["load_average_after"] = list(os.getloadavg()) if hasattr(os, "getloadavg") else None
    out["tiers"] = _tiers()
    return out


def _in_place_equal(call: Callable[[], object]) -> bool:
    """Whether the in-place rotation rotates the same input to the same bits fast and eager."""
    result = call()
    assert hasattr(result, "clone")
    start = result.clone()  # type: ignore[attr-defined]
    fast = _snapshot(_with_fast("1", call)())
    result.copy_(start)  # type: ignore[attr-defined]
    eager = _snapshot(_with_fast("0", call)())
    return _equal(fast, eager)


SMALL_ELEMENTS = (4096, 65536, 262144, 1 << 20, 1 << 21, 1 << 22)


def _small_cases(n: int, dtype: torch.dtype) -> dict[str, Callable[[], object]]:
    """Calls of a few kernels on ``n`` elements in rows of 1,024."""
    import torch

    act, rms, rot = _modules()
    x = torch.randn(n // 1024, 1024).to(dtype)
    half = torch.empty(n // 1024, 512, dtype=dtype)
    full = torch.empty_like(x)
    w = torch.randn(1024).to(dtype)
    c = torch.randn(n // 1024, 256).to(dtype)
    s = torch.randn(n // 1024, 256).to(dtype)
    o1, o2 = torch.empty_like(c), torch.empty_like(c)
    return {
        "silu_and_mul": lambda: act.silu_and_mul(half, x),
        "gelu": lambda: act.gelu(full, x),
        "apply_rms_norm": lambda: rms.apply_rms_norm(x, w, 1e-6),
        "apply_rotary": lambda: rot.apply_rotary(x[:, :256], x[:, 256:512], c, s, o1, o2, False),
    }


def measure_small(calls: int) -> list[dict[str, Any]]:
    """Per-call microseconds (median of ``calls``) at small and medium sizes, where
    per-call overhead dominates: the plain formula, the uncompiled fast path (what every
    size above 65,536 elements ran before the compiled and table tiers) and as shipped."""
    import statistics

    import torch

    rows: list[dict[str, Any]] = []
    for dtype in (torch.float32, torch.bfloat16):
        for n in SMALL_ELEMENTS:
            cases = _small_cases(n, dtype)
            for kernel, call in cases.items():
                row: dict[str, Any] = {"kernel": kernel, "dtype": str(dtype)[6:], "elements": n}
                for setting, key in (
                    ("0", "eager_us"),
                    ("nocompile", "uncompiled_us"),
                    ("1", "fast_us"),
                ):
                    run = _with_fast(setting, call)
                    for _ in range(3):
                        run()
                    times = []
                    for _ in range(calls):
                        start = time.perf_counter()
                        run()
                        times.append(time.perf_counter() - start)
                    row[key] = statistics.median(times) * 1e6
                rows.append(row)
                print(
                    f"{kernel:>15} {row['dtype']:>8} {n:>8} elements: "
                    f"eager {row['eager_us']:8.0f} us  uncompiled {row['uncompiled_us']:8.0f} us  "
                    f"fast {row['fast_us']:8.0f} us",
                    flush=True,
                )
    return rows


FIRST_CALLS = """
import json, sys, time, warnings
sys.path.insert(0, sys.argv[1])
import torch
import reference_speed as rs
rows, cols = int(sys.argv[2]), int(sys.argv[3])
firsts = {}
for dtype in (torch.float32, torch.bfloat16):
    for case in rs._cases(rows, cols, dtype):
        start = time.perf_counter()
        rs._with_fast("1", case["call"])()
        firsts[case["kernel"] + " " + str(dtype)[6:]] = (time.perf_counter() - start) * 1e3
print(json.dumps(firsts))
"""


def warm_first_calls(rows: int, cols: int) -> dict[str, float]:
    """First-call milliseconds of a second process that finds inductor's cache filled."""
    import subprocess
    import sys

    done = subprocess.run(
        [
            sys.executable,
            "-c",
            FIRST_CALLS,
            str(Path(__file__).resolve().parent),
            str(rows),
            str(cols),
        ],
        capture_output=True,
        text=True,
        check=False,
        env=os.environ.copy(),
    )
    if done.returncode != 0:
        print(done.stderr[-2000:])
        return {}
    return json.loads(done.stdout.strip().splitlines()[-1])


def _markdown(report: dict[str, Any]) -> str:
    lines = [
        f"# Reference kernels vs a copy ({report['date']}, {report['machine']}, torch "
        f"{report['torch']}, input {report['shape'][0]} x {report['shape'][1]})",
        "",
        f"Load average (1, 5, 15 min) before: {report.get('load_average_before')}, after: "
        f"{report.get('load_average_after')}. This is a shared 2-core virtual machine: its copy "
        "rate drifts by tens of percent within minutes, so the copy is timed again next to "
        "every kernel and each figure is the best of several rounds.",
        "",
        "Fraction = kernel bytes/s over the baseline's bytes/s (`copy` = `dst.copy_(x)`; "
        "`clone` = `x.clone()`, for kernels that allocate their result). eager = the plain "
        "formula (`KERNEL_PLUGINS_REFERENCE_FAST=0`), uncompiled = the fast path without "
        "compiling (`=nocompile`), fast = as shipped, served by `tier`. First call: fresh "
        "inductor cache (compiling and probing included) / a second process with the cache "
        "filled. Bound: for a float32 kernel that must give the bits of one costly native op on "
        "every element (the tanh GELUs: ATen's `gelu(approximate=\"tanh\")`, or `torch.tanh` "
        "for `gelu_fast` and `gelu_new`), the fraction it would reach if it took only as long "
        "as that op alone on the same input.",
        "",
        "| kernel | dtype | baseline GB/s | eager | uncompiled | fast GB/s (fraction) | fast / copy_ | tier | first call ms (cold / warm) | fast bitwise = eager | bound |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    warm = report.get("warm_first_call_ms", {})
    for r in report["rows"]:
        w = warm.get(f"{r['kernel']} {r['dtype']}")
        bound = r.get("bound_fraction")
        lines.append(
            f"| {r['kernel']} | {r['dtype']} | {r['baseline']} {r['baseline_GBps']:.1f} | "
            f"{r['eager_fraction']:.2f} | {r['uncompiled_fraction']:.2f} | {r['fast_GBps']:.1f} "
            f"({r['fast_fraction']:.2f}) | {r['fast_fraction_of_copy']:.2f} | {r['tier']} | "
            f"{r['first_call_ms']:.0f} / {'-' if w is None else f'{w:.0f}'} | "
            f"{'yes' if r['bitwise_equal_to_eager'] else 'no'} | "
            f"{'-' if bound is None else f'{bound:.2f}'} |"
        )
    small = report.get("small")
    if small:
        lines += [
            "",
            "## Small and medium sizes (per call, median)",
            "",
            "Rows of 1,024 elements. Below 65,536 elements every setting runs the plain "
            "formula; uncompiled is what larger calls ran before the compiled and table "
            "tiers existed (they start at 2M elements).",
            "",
            "| kernel | dtype | elements | eager us | uncompiled us | fast us |",
            "|---|---|---|---|---|---|",
        ]
        for r in small:
            lines.append(
                f"| {r['kernel']} | {r['dtype']} | {r['elements']} | {r['eager_us']:.0f} | "
                f"{r['uncompiled_us']:.0f} | {r['fast_us']:.0f} |"
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
    fig, ax = plt.subplots(figsize=(max(8, len(rows) * 0.6), 4.8))
    width = 0.27
    for offset, key, label in (
        (-width, "eager", "eager"),
        (0.0, "uncompiled", "uncompiled"),
        (width, "fast", "fast"),
    ):
        ax.bar([i + offset for i in xs], [r[f"{key}_fraction"] for r in rows], width, label=label)
    ax.axhline(0.5, color="k", linestyle="--", linewidth=0.8, label="target 0.5")
    ax.axhline(0.8, color="grey", linestyle=":", linewidth=0.8, label="stretch 0.8")
    ax.set_xticks(list(xs))
    ax.set_xticklabels(labels, rotation=90, fontsize=7)
    ax.set_ylabel("bytes/s as a fraction of the baseline")
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
    parser.add_argument(
        "--no-warm", action="store_true", help="skip the second-process first calls"
    )
    parser.add_argument("--small-calls", type=int, default=101, help="calls per small-size figure")
    args = parser.parse_args(argv)
    if args.plot is not None:
        report = json.loads(args.plot.read_text())
        return 0 if _plot(report, args.plot.with_suffix(".png")) else 1
    if args.rows < 1 or args.cols < 2 or args.cols % 2:
        parser.error("--rows must be >= 1 and --cols an even number >= 2")
    if "TORCHINDUCTOR_CACHE_DIR" not in os.environ:  # a cold first call, unless told otherwise
        import tempfile

        os.environ["TORCHINDUCTOR_CACHE_DIR"] = tempfile.mkdtemp(prefix="reference-speed-inductor-")
    report = measure(args.rows, args.cols, args.runs)
    report["small"] = measure_small(args.small_calls)
    if not args.no_warm:
        report["warm_first_call_ms"] = warm_first_calls(args.rows, args.cols)
    args.out.mkdir(parents=True, exist_ok=True)
    stem = args.out / f"reference-speed-{report['date']}"
    stem.with_suffix(".json").write_text(json.dumps(report, indent=2) + "\n")
    stem.with_suffix(".md").write_text(_markdown(report))
    plotted = _plot(report, stem.with_suffix(".png")) or _plot_elsewhere(stem.with_suffix(".json"))
    print(
        f"wrote {stem}.json, {stem}.md"
        + (f" and {stem}.png" if plotted else " (no matplotlib: no chart)")
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
