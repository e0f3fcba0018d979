"""Speed of the bundled reference kernels against a plain copy of the same bytes.

For each kernel (``silu_and_mul``, ``rms_norm``, ``apply_rotary``) and dtype (float32,
bfloat16) on one large input (default 4096 x 8192), in one process:

* ``copy``: ``out.copy_(x)`` of the input, bytes/s = 2 * input bytes / time (read + write);
* ``eager``: the reference kernel as shipped, loaded with ``kernel_plugins.load``;
* ``compiled``: ``torch.compile`` (inductor) of the same native formula, the candidate
  fast path of issue 12, with its first call (compilation) timed separately and whether
  its result is bitwise equal to the eager one.

Bytes moved per call are the kernel's minimum traffic: every input read once and the
output written once. Figures are the best of ``--runs`` steady-state calls. Writes
``results/reference-speed-<date>.json`` and ``.md``.

    python benchmarks/reference_speed.py [--rows 4096 --cols 8192 --runs 5]
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import platform
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

RESULTS = Path(__file__).resolve().parent / "results"


def _best(fn: Callable[[], object], runs: int) -> float:
    fn()
    best = float("inf")
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def _cases(rows: int, cols: int, dtype: torch.dtype) -> list[dict[str, Any]]:
    import kernel_plugins
    from kernel_plugins.reference import reference_repo

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        act = kernel_plugins.load(reference_repo("activation"), device="cpu")
        rms = kernel_plugins.load(reference_repo("rmsnorm"), device="cpu")
        rot = kernel_plugins.load(reference_repo("rotary"), device="cpu")
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(rows, cols, generator=gen).to(dtype)
    size = x.element_size()
    half = cols // 2
    out_half = torch.empty(rows, half, dtype=dtype)
    w = torch.randn(cols, generator=gen).to(dtype)
    x1, x2 = x[:, :half].contiguous(), x[:, half:].contiguous()
    cos = torch.randn(rows, half, generator=gen).to(dtype)
    sin = torch.randn(rows, half, generator=gen).to(dtype)
    o1, o2 = torch.empty_like(x1), torch.empty_like(x2)

    def swiglu(t: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.silu(t[:, :half]) * t[:, half:]

    def rotate(a: torch.Tensor, b: torch.Tensor, c: torch.Tensor, s: torch.Tensor):
        return a * c - b * s, b * c + a * s

    return [
        {
            "kernel": "silu_and_mul",
            "bytes": x.numel() * size * 3 // 2,
            "eager": lambda: act.silu_and_mul(out_half, x),
            "formula": swiglu,
            "args": (x,),
            "eager_result": lambda: act.silu_and_mul(out_half, x).clone(),
        },
        {
            "kernel": "rms_norm",
            "bytes": x.numel() * size * 2,
            "eager": lambda: rms.apply_rms_norm(x, w, 1e-6),
            "formula": rms._ops.rms_norm_native,
            "args": (x, w, 1e-6),
            "eager_result": lambda: rms.apply_rms_norm(x, w, 1e-6),
        },
        {
            "kernel": "apply_rotary",
            "bytes": (x.numel() + 2 * cos.numel()) * size + x.numel() * size,
            "eager": lambda: rot.apply_rotary(x1, x2, cos, sin, o1, o2, False),
            "formula": rotate,
            "args": (x1, x2, cos, sin),
            "eager_result": lambda: (
                rot.apply_rotary(x1, x2, cos, sin, o1, o2, False),
                (o1.clone(), o2.clone()),
            )[1],
        },
    ]


def _equal(a: object, b: object) -> bool:
    if isinstance(a, tuple):
        return all(_equal(p, q) for p, q in zip(a, b, strict=True))  # type: ignore[arg-type]
    return bool(torch.equal(a, b))  # type: ignore[arg-type]


def measure(rows: int, cols: int, runs: int) -> dict[str, Any]:
    """Run every case; returns the report (see the module doc)."""
    out: dict[str, Any] = {
        "date": dt.date.today().isoformat(),
        "machine": f"{platform.machine()}, {torch.get_num_threads()} threads",
        "torch": torch.__version__,
        "shape": [rows, cols],
        "rows": [],
    }
    for dtype in (torch.float32, torch.bfloat16):
        src = torch.randn(rows, cols).to(dtype)
        dst = torch.empty_like(src)
        copy_s = _best(lambda d=dst, s=src: d.copy_(s), runs)
        copy_bps = 2 * src.numel() * src.element_size() / copy_s
        for case in _cases(rows, cols, dtype):
            eager_s = _best(case["eager"], runs)
            torch._dynamo.reset()
            compiled = torch.compile(case["formula"], dynamic=False)
            start = time.perf_counter()
            result = compiled(*case["args"])
            first_s = time.perf_counter() - start
            fast_s = _best(lambda c=compiled, a=case["args"]: c(*a), runs)
            row = {
                "kernel": case["kernel"],
                "dtype": str(dtype).replace("torch.", ""),
                "bytes": case["bytes"],
                "copy_GBps": copy_bps / 1e9,
                "eager_ms": eager_s * 1e3,
                "eager_GBps": case["bytes"] / eager_s / 1e9,
                "eager_fraction_of_copy": case["bytes"] / eager_s / copy_bps,
                "compiled_ms": fast_s * 1e3,
                "compiled_GBps": case["bytes"] / fast_s / 1e9,
                "compiled_fraction_of_copy": case["bytes"] / fast_s / copy_bps,
                "compiled_first_call_s": first_s,
                "compiled_bitwise_equal": _equal(result, case["eager_result"]()),
            }
            out["rows"].append(row)
            print(
                f"{row['kernel']:>13} {row['dtype']:>8}  copy {row['copy_GBps']:5.1f} GB/s  "
                f"eager {row['eager_GBps']:5.1f} GB/s ({row['eager_fraction_of_copy']:.2f})  "
                f"compiled {row['compiled_GBps']:5.1f} GB/s ({row['compiled_fraction_of_copy']:.2f}), "
                f"first call {first_s:.1f} s, bitwise {row['compiled_bitwise_equal']}",
                flush=True,
            )
    return out


def _markdown(report: dict[str, Any]) -> str:
    lines = [
        f"# Reference kernels vs a copy ({report['date']}, {report['machine']}, torch "
        f"{report['torch']}, input {report['shape'][0]} x {report['shape'][1]})",
        "",
        "| kernel | dtype | copy GB/s | eager GB/s (x copy) | compiled GB/s (x copy) | first call s | compiled bitwise = eager |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in report["rows"]:
        lines.append(
            f"| {r['kernel']} | {r['dtype']} | {r['copy_GBps']:.1f} | {r['eager_GBps']:.1f} "
            f"({r['eager_fraction_of_copy']:.2f}) | {r['compiled_GBps']:.1f} "
            f"({r['compiled_fraction_of_copy']:.2f}) | {r['compiled_first_call_s']:.1f} | "
            f"{'yes' if r['compiled_bitwise_equal'] else 'no'} |"
        )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=4096)
    parser.add_argument("--cols", type=int, default=8192)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    if args.rows < 1 or args.cols < 2 or args.cols % 2:
        parser.error("--rows must be >= 1 and --cols an even number >= 2")
    report = measure(args.rows, args.cols, args.runs)
    args.out.mkdir(parents=True, exist_ok=True)
    stem = args.out / f"reference-speed-{report['date']}"
    stem.with_suffix(".json").write_text(json.dumps(report, indent=2) + "\n")
    stem.with_suffix(".md").write_text(_markdown(report))
    print(f"wrote {stem}.json and {stem}.md")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
