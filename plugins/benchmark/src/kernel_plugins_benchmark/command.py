"""``kernel-plugins benchmark``: time a kernel's functions against the reference, check outputs.

Human-readable table by default, ``--json`` for machines (layout documented in
:mod:`kernel_plugins_benchmark`), ``--output FILE`` writes that JSON to a file, ``--plot
FILE.png`` a chart (needs matplotlib). ``--scripts`` runs the repository's own
``benchmarks/benchmark*.py`` classes instead, as ``kernels benchmark`` does
(:mod:`kernel_plugins_benchmark.scripts`). Exit status 1 when an output differs from the
reference beyond the tolerance (the message names the function, shape, maximum error and
tolerance), 2 for usage errors.
"""

from __future__ import annotations

import argparse
import os
import sys

from kernel_plugins.cli import CommandError, bounded, clean, path_text, print_json

NAME = "benchmark"
HELP = "time a kernel's functions against the portable reference and check their outputs"
#: (warm-up calls, timed samples) by default: a short run; with --scripts kernels' own.
DEFAULTS = {"compare": (3, 20), "scripts": (10, 100)}
DESCRIPTION = (
    f"{HELP}; with --scripts, run the repository's own benchmarks/benchmark*.py classes as "
    "`kernels benchmark` does. Those scripts are the repository's code: they run only when the "
    "kernel may be loaded (a trusted Hub organisation, --trust-remote-code, or a local folder)."
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options: NAME_OR_PATH, device, selection, shapes, dtype, iterations, output."""
    from kernel_plugins.cli import add_device_option, add_revision_options, add_wide_option

    parser.description = DESCRIPTION
    parser.add_argument(
        "target", metavar="NAME_OR_PATH", type=path_text, help="org/name, short name or local path"
    )
    add_device_option(parser)
    add_revision_options(parser)
    parser.add_argument(
        "--functions", metavar="F,G", help="comma-separated functions (default: every one)"
    )
    parser.add_argument(
        "--shapes",
        nargs="+",
        metavar="AxB",
        help="input shapes for every selected function, e.g. 16x1024 128x4096 (what a shape "
        "means depends on the function: see kernel_plugins_benchmark.BUILDERS)",
    )
    parser.add_argument(
        "--dtype",
        default="float32",
        metavar="D[,D]",
        help="comma-separated dtypes: float32, float16, bfloat16, float64 (default float32)",
    )
    parser.add_argument(
        "--scripts", action="store_true",
        help="run the repository's benchmarks/benchmark*.py Benchmark classes (as `kernels "
        "benchmark`); this executes the repository's code, with the trust loading it needs",
    )
    parser.add_argument(
        "--warmup", type=bounded(0, 100_000, whole=True),
        help="calls before timing, 0 to 100000 (default 3; 10 with --scripts, as kernels)",
    )
    parser.add_argument(
        "--iterations", type=bounded(1, 1_000_000, whole=True),
        help="timed samples per case, 1 to 1000000 (default 20: a short run, more for "
        "steadier figures; 100 with --scripts, as kernels)",
    )
    parser.add_argument(
        "--min-sample-ms",
        type=bounded(0, 60_000),
        default=0.2,
        help="repeat calls inside a sample until it lasts this long, 0 to 60000 (default 0.2)",
    )
    parser.add_argument(
        "--rtol", type=bounded(0, 1), help="relative tolerance, 0 to 1 (default: per dtype)"
    )
    parser.add_argument(
        "--atol", type=bounded(0, 1e6),
        help="absolute tolerance, 0 to 1e6 (default: per dtype)",
    )
    parser.add_argument("--json", action="store_true", help="machine-readable output")
    parser.add_argument("--output", metavar="FILE", type=path_text,
                        help="also write the JSON document to FILE (as `kernels benchmark --output`)")
    add_wide_option(parser)
    parser.add_argument("--plot", metavar="FILE.png", help="write a chart (needs matplotlib)")
    parser.add_argument(
        "--no-progress", action="store_true",
        help="no progress on stderr (a bar on a terminal, else a line every few seconds)"
    )
    parser.add_argument(
        "--no-fallback",
        action="store_true",
        help="fail instead of benchmarking a portable reference kernel when no variant fits",
    )
    parser.add_argument(
        "--trust-remote-code",
        action="store_true",
        help="allow loading (and with --scripts running the benchmark scripts of) a Hub "
        "repository of an organisation outside the trusted list",
    )


def parse_shapes(values: list[str] | None) -> list[tuple[int, ...]] | None:
    """``["16x1024", "2x8x64,4x4"]`` -> ``[(16, 1024), (2, 8, 64), (4, 4)]``."""
    if not values:
        return None
    shapes = []
    for value in values:
        for part in value.split(","):
            part = part.strip()
            if not part:
                continue
            try:
                shape = tuple(int(s) for s in part.lower().split("x"))
            except ValueError:
                raise CommandError(
                    f"--shapes: {part!r} is not a shape; write sizes joined by x, e.g. 16x1024"
                ) from None
            if any(s <= 0 for s in shape):
                raise CommandError(f"--shapes: {part!r} has a size <= 0")
            shapes.append(shape)
    return shapes or None


def _split(value: str | None) -> list[str] | None:
    if value is None:
        return None
    names = [v.strip() for v in value.split(",") if v.strip()]
    return names or None


def _check_plot(path: str | None) -> None:
    if path is None:
        return
    if not path.lower().endswith(".png"):
        raise CommandError(f"--plot writes a PNG chart: give a name ending in .png, not {path}")
    import importlib.util

    if importlib.util.find_spec("matplotlib") is None:
        raise CommandError(
            "--plot needs matplotlib, which is not installed: pip install matplotlib"
        )


def _write_output(path: str | None, doc: dict[str, object]) -> None:
    """``--output FILE``: the JSON document, written whole or not at all."""
    if path is None:
        return
    import json

    tmp = f"{path}.tmp{os.getpid()}"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(doc, f, indent=2)
        f.write("\n")
    os.replace(tmp, path)
    print(f"results written to {path}", file=sys.stderr)


def counts(args: argparse.Namespace) -> tuple[int, int]:
    """``(warmup, iterations)``: the ones given, else the defaults of the mode (:data:`DEFAULTS`)."""
    warmup, iterations = DEFAULTS["scripts" if args.scripts else "compare"]
    return (warmup if args.warmup is None else args.warmup,
            iterations if args.iterations is None else args.iterations)


def run(args: argparse.Namespace) -> int:
    """Load, benchmark, print; exit 1 when a check failed."""
    from . import benchmark, plot_report

    _check_plot(args.plot)
    device = args.device or getattr(args, "emulate", None)
    load_options = {
        "revision": args.revision,
        "version": args.version,
        "trust_remote_code": args.trust_remote_code,
        "fallback": "error" if args.no_fallback else "reference",
    }
    warmup, iterations = counts(args)
    if args.scripts:
        from .scripts import run_scripts

        found = run_scripts(args.target, device=device, load_options=load_options,
                            warmup=warmup, iterations=iterations)
        doc = found.to_dict()
        print_json(doc) if args.json else print(clean(found.format_table()))
        _write_output(args.output, doc)
        found.raise_for_failures()
        return 0
    report = benchmark(
        args.target,
        device=device,
        load_options=load_options,
        functions=_split(args.functions),
        shapes=parse_shapes(args.shapes),
        dtypes=_split(args.dtype) or ["float32"],
        warmup=warmup,
        iterations=iterations,
        min_sample_s=args.min_sample_ms / 1e3,
        rtol=args.rtol,
        atol=args.atol,
        progress=not args.no_progress,
    )
    if args.json:
        print_json(report.to_dict())
    else:
        print(clean(report.format_table(wide=args.wide)))
    _write_output(args.output, report.to_dict())
    if args.plot:
        plot_report(report, args.plot)
        print(f"chart written to {args.plot}", file=sys.stderr)
    report.raise_for_failures()
    return 0
