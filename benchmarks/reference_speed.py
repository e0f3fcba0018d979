"""Speed of the bundled reference kernels against their plain formulas, at every size.

The reference kernels are plain PyTorch. For large inputs (from 65,536 elements, outside
autograd and tracing) the activations write the formula's native ops straight into
``out``, and on the CPU ``apply_rotary`` works in cache-sized blocks (from 4M elements);
RMSNorm is the formula itself. Each is bitwise the plain formula. This script checks the
promise that goes with it, "never slower than the plain formula at any size", for every
reference function (the activation family, ``apply_rms_norm``, ``apply_rotary`` with
separate outputs and in place) and dtype (float32, bfloat16), on inputs of 4,096 to 4M
elements in rows of 1,024 and on one large input (default 4096 x 8192), in one process:

* ``plain``: the kernel's operator with its direct and blocked paths switched off (their
  size thresholds raised out of reach), i.e. the plain formula behind the same operator;
* ``shipped``: the kernel as shipped, and whether its result is bitwise the plain one;
* ``copy``: ``dst.copy_(x)`` into a preallocated tensor, bytes/s = 2 * input bytes / time,
  timed next to every kernel (the machine's speed drifts), for scale.

Figures are the best of at least ``--calls`` calls, and of as many as fit in ``--seconds``
per setting, plain and shipped alternating (on a shared machine a median still catches
other processes' bursts; the best call does not). Bytes moved per
call are the kernel's minimum traffic: every input read once and every output written
once. Writes ``results/reference-speed-<date>.json``, ``.md`` and, with matplotlib, ``.png``
(``--out`` elsewhere).

    python benchmarks/reference_speed.py [--rows 4096 --cols 8192 --calls 9 --seconds 0.5
                                          --threads T --max-elements N]
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import functools
import json
import os
import platform
import sys
import time
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import torch

RESULTS = Path(__file__).resolve().parent / "results"
SMALL_ELEMENTS = (4096, 65536, 262144, 1 << 20, 1 << 22)
NOISE = 1.05
"""A shipped/plain time ratio above this counts as slower (the shared machine's run-to-run
spread at equal code is a few percent)."""


@functools.cache
def _modules() -> tuple[Any, Any, Any]:
    import kernel_plugins
    from kernel_plugins.reference import reference_repo

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return tuple(  # type: ignore[return-value]
            kernel_plugins.load(reference_repo(n), device="cpu")  # type: ignore[arg-type]
            for n in ("activation", "rmsnorm", "rotary")
        )


@contextlib.contextmanager
def plain_path() -> Iterator[None]:
    """Within: every loaded reference kernel runs its plain formula at every size."""
    saved = []
    for module in _modules():
        fast: Any = sys.modules.get(module.__name__ + "._fast")
        if fast is not None:
            saved.append((fast, fast.MIN_ELEMENTS, fast.BLOCKED_MIN_ELEMENTS))
            fast.MIN_ELEMENTS = fast.BLOCKED_MIN_ELEMENTS = 1 << 62
    try:
        yield
    finally:
        for fast, low, blocked in saved:
            fast.MIN_ELEMENTS, fast.BLOCKED_MIN_ELEMENTS = low, blocked


def _cases(rows: int, cols: int, dtype: torch.dtype) -> list[dict[str, Any]]:
    """kernel, bytes, and ``call()`` returning the result (a fresh input for in-place)."""
    import torch

    act, rms, rot = _modules()
    gen = torch.Generator().manual_seed(0)
    x = (torch.randn(rows, cols, generator=gen) * 3).to(dtype)
    size, half = x.element_size(), cols // 2
    cases: list[dict[str, Any]] = []
    for name in act._plain.__all__:
        fn = getattr(act, name)
        out = torch.empty(rows, half if "_and_" in name else cols, dtype=dtype)
        cases.append(
            {
                "kernel": name,
                "bytes": (x.numel() + out.numel()) * size,
                "call": lambda fn=fn, out=out: fn(out, x),
            }
        )
    w = torch.randn(cols, generator=gen).to(dtype)
    cases.append(
        {
            "kernel": "apply_rms_norm",
            "bytes": (2 * x.numel() + w.numel()) * size,
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

    cases.append({"kernel": "apply_rotary", "bytes": 3 * x.numel() * size, "call": rotary})
    # in place on (tokens, heads, head_dim) with angles shared by the heads, as models call it
    heads = 8 if cols % 16 == 0 else 1
    q = (torch.randn(rows, heads, cols // heads, generator=gen) * 3).to(dtype)
    h = q.shape[-1] // 2
    qc = torch.randn(rows, 1, h, generator=gen).to(dtype)
    qs = torch.randn(rows, 1, h, generator=gen).to(dtype)

    def rotary_in_place() -> torch.Tensor:
        rot.apply_rotary(q[..., :h], q[..., h:], qc, qs, q[..., :h], q[..., h:], False)
        return q

    start = q.clone()
    cases.append(
        {
            "kernel": "apply_rotary_in_place",
            "bytes": (2 * q.numel() + qc.numel() + qs.numel()) * size,
            "call": rotary_in_place,
            "reset": lambda: q.copy_(start),
        }
    )
    return cases


def _snapshot(result: object) -> object:
    if isinstance(result, tuple):
        return tuple(t.clone() for t in result)
    return result.clone()  # type: ignore[attr-defined]


def _equal(a: Any, b: Any) -> bool:
    import torch

    if isinstance(a, tuple):
        return all(_equal(p, q) for p, q in zip(a, b, strict=True))
    return bool(torch.equal(a, b))


def _bitwise(case: dict[str, Any]) -> bool:
    """Whether the shipped call gives the plain call's bits (from the same input)."""
    reset = case.get("reset", lambda: None)
    reset()
    with plain_path():
        plain = _snapshot(case["call"]())
    reset()
    return _equal(_snapshot(case["call"]()), plain)


def _takes_a_fast_path(case: dict[str, Any]) -> bool:
    """Whether the shipped call runs other code than the plain formula (the activations'
    direct path, the blocked rotation); where it does not, shipped and plain are one code
    path and their ratio only shows the machine's noise."""
    act, _, rot = _modules()
    spots = [(sys.modules[act.__name__ + "._ops"], "act_into"), (sys.modules[rot.__name__ + "._ops"], "_blocked")]
    taken: list[bool] = []
    saved = [(module, name, getattr(module, name)) for module, name in spots]
    def spy(real: Callable[..., Any]) -> Callable[..., Any]:
        def call(*args: Any) -> Any:
            result = real(*args)
            taken.append(result is not False)
            return result

        return call

    for module, name, real in saved:
        setattr(module, name, spy(real))
    try:
        case.get("reset", lambda: None)()
        case["call"]()
    finally:
        for module, name, real in saved:
            setattr(module, name, real)
    return any(taken)


def _time(call: Callable[[], object]) -> float:
    start = time.perf_counter()
    call()
    return time.perf_counter() - start


def measure_case(case: dict[str, Any], calls: int, seconds: float) -> tuple[float, float]:
    """Best seconds per call: (plain, shipped), alternating, after a warm-up of each; at
    least ``calls`` of each, more until each setting ran ``seconds`` (at most 500)."""
    plain: list[float] = []
    shipped: list[float] = []
    for i in range(501):
        if i > calls and min(sum(plain), sum(shipped)) >= seconds:
            break
        with plain_path():
            t_plain = _time(case["call"])
        t_shipped = _time(case["call"])
        if i:  # the first round warms both up
            plain.append(t_plain)
            shipped.append(t_shipped)
    return min(plain), min(shipped)


def measure(sizes: list[tuple[int, int]], calls: int, seconds: float) -> dict[str, Any]:
    """Every case at every size; returns the report (see the module doc)."""
    import torch

    report: dict[str, Any] = {
        "schema": "reference-speed/4",
        "date": dt.date.today().isoformat(),
        "machine": f"{platform.machine()}, {os.cpu_count()} CPUs, {torch.get_num_threads()} threads",
        "torch": torch.__version__,
        "load_average_before": list(os.getloadavg()) if hasattr(os, "getloadavg") else None,
        "rows": [],
    }
    for rows, cols in sizes:
        for dtype in (torch.float32, torch.bfloat16):
            src = torch.randn(rows, cols).to(dtype)
            dst = torch.empty_like(src)
            moved = 2 * src.numel() * src.element_size()
            for case in _cases(rows, cols, dtype):
                equal = _bitwise(case)
                fast = _takes_a_fast_path(case)
                plain_s, shipped_s = measure_case(case, calls, seconds)
                copy_s = min(_time(functools.partial(dst.copy_, src)) for _ in range(5))
                row = {
                    "kernel": case["kernel"],
                    "dtype": str(dtype).removeprefix("torch."),
                    "elements": rows * cols,
                    "plain_us": plain_s * 1e6,
                    "shipped_us": shipped_s * 1e6,
                    "shipped_over_plain": shipped_s / plain_s,
                    "shipped_fraction_of_copy": case["bytes"] / shipped_s / (moved / copy_s),
                    "plain_fraction_of_copy": case["bytes"] / plain_s / (moved / copy_s),
                    "bitwise_equal": equal,
                    "fast_path": fast,
                }
                report["rows"].append(row)
                print(
                    f"{row['kernel']:>22} {row['dtype']:>8} {row['elements']:>9}: plain "
                    f"{row['plain_us']:10.0f} us  shipped {row['shipped_us']:10.0f} us  "
                    f"ratio {row['shipped_over_plain']:.2f}  of copy "
                    f"{row['plain_fraction_of_copy']:.2f} -> {row['shipped_fraction_of_copy']:.2f}"
                    f"  bitwise {equal}{'' if fast else '  (same code)'}",
                    flush=True,
                )
    report["load_average_after"] = list(os.getloadavg()) if hasattr(os, "getloadavg") else None
    fast_rows = [r for r in report["rows"] if r["fast_path"]]
    same = [r for r in report["rows"] if not r["fast_path"]]
    slower = [r for r in fast_rows if r["shipped_over_plain"] > NOISE]
    report["verdict"] = {
        "never_slower": not slower,
        "all_bitwise": all(r["bitwise_equal"] for r in report["rows"]),
        "worst_ratio": max((r["shipped_over_plain"] for r in fast_rows), default=1.0),
        "slower_rows": [f"{r['kernel']} {r['dtype']} {r['elements']}" for r in slower],
        "same_code_ratios": [
            min((r["shipped_over_plain"] for r in same), default=1.0),
            max((r["shipped_over_plain"] for r in same), default=1.0),
        ],
    }
    return report


def _markdown(report: dict[str, Any]) -> str:
    v = report["verdict"]
    lines = [
        f"# Reference kernels vs their plain formulas ({report['date']}, {report['machine']}, "
        f"torch {report['torch']})",
        "",
        f"Load average (1, 5, 15 min) before: {report.get('load_average_before')}, after: "
        f"{report.get('load_average_after')}.",
        "",
        f"Where a fast path ran, never slower than the plain formula (ratio <= {NOISE}): "
        f"**{v['never_slower']}** (worst ratio {v['worst_ratio']:.2f}"
        f"{'; ' + ', '.join(v['slower_rows']) if v['slower_rows'] else ''}). Where shipped and "
        f"plain are the same code (fast path: no), the ratio spread over "
        f"{v['same_code_ratios'][0]:.2f} to {v['same_code_ratios'][1]:.2f}: the machine's noise. "
        f"Bitwise equal everywhere: **{v['all_bitwise']}**.",
        "",
        "plain = the operator with its direct and blocked paths off (the plain formula), "
        "shipped = as installed; best microseconds per call; ratio = shipped / plain; "
        "of copy = bytes/s as a fraction of `dst.copy_(x)` timed next to it.",
        "",
        "| kernel | dtype | elements | fast path | plain us | shipped us | ratio | plain of copy | shipped of copy | bitwise |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in report["rows"]:
        lines.append(
            f"| {r['kernel']} | {r['dtype']} | {r['elements']} | "
            f"{'yes' if r['fast_path'] else 'no'} | {r['plain_us']:.0f} | "
            f"{r['shipped_us']:.0f} | {r['shipped_over_plain']:.2f} | "
            f"{r['plain_fraction_of_copy']:.2f} | {r['shipped_fraction_of_copy']:.2f} | "
            f"{'yes' if r['bitwise_equal'] else 'no'} |"
        )
    return "\n".join(lines) + "\n"


def _plot(report: dict[str, Any], path: Path) -> bool:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    largest = max(r["elements"] for r in report["rows"])
    rows = [r for r in report["rows"] if r["elements"] == largest]
    xs = range(len(rows))
    fig, ax = plt.subplots(figsize=(max(8, len(rows) * 0.6), 4.8))
    for offset, key in ((-0.2, "plain"), (0.2, "shipped")):
        ax.bar([i + offset for i in xs], [r[f"{key}_fraction_of_copy"] for r in rows], 0.4, label=key)
    ax.set_xticks(list(xs))
    ax.set_xticklabels([f"{r['kernel']}\n{r['dtype']}" for r in rows], rotation=90, fontsize=7)
    ax.set_ylabel("bytes/s as a fraction of a copy")
    ax.set_title(f"Reference kernels, {largest} elements, {report['machine']}")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    return True


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=4096)
    parser.add_argument("--cols", type=int, default=8192)
    parser.add_argument("--calls", type=int, default=9, help="timed calls per figure, at least")
    parser.add_argument(
        "--seconds", type=float, default=0.5, help="and more calls until each setting ran this long"
    )
    parser.add_argument(
        "--max-elements", type=int, default=None, help="leave out sizes above this (a quick run)"
    )
    parser.add_argument(
        "--threads", type=int, default=None,
        help="torch.set_num_threads first (1 on a busy machine: a parallel region waits for "
        "its slowest thread, so other processes' load lands on single calls)",
    )
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    if args.rows < 1 or args.cols < 16 or args.cols % 16 or args.calls < 1:
        parser.error("--rows must be >= 1, --cols a multiple of 16, --calls >= 1")
    if args.threads is not None:
        import torch

        torch.set_num_threads(args.threads)
    sizes = [(n // 1024, 1024) for n in SMALL_ELEMENTS] + [(args.rows, args.cols)]
    if args.max_elements is not None:
        sizes = [(r, c) for r, c in sizes if r * c <= args.max_elements]
    report = measure(sizes, args.calls, args.seconds)
    v = report["verdict"]
    print(
        f"where a fast path ran, never slower than the plain formula (ratio <= {NOISE}): "
        f"{v['never_slower']}; worst ratio {v['worst_ratio']:.2f} {v['slower_rows']}; same "
        f"code, ratio {v['same_code_ratios']} (noise); bitwise everywhere: {v['all_bitwise']}"
    )
    args.out.mkdir(parents=True, exist_ok=True)
    stem = args.out / f"reference-speed-{report['date']}"
    stem.with_suffix(".json").write_text(json.dumps(report, indent=2) + "\n")
    stem.with_suffix(".md").write_text(_markdown(report))
    plotted = _plot(report, stem.with_suffix(".png"))
    print(f"wrote {stem}.json, {stem}.md" + (f" and {stem}.png" if plotted else " (no chart)"))
    return 0 if v["all_bitwise"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
