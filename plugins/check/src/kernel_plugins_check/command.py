"""``kernel-plugins check``: validate a kernel repository before publishing it."""

from __future__ import annotations

import argparse

from kernel_plugins.cli import clean, path_text, print_json

NAME = "check"
HELP = (
    "validate a kernel repository (build.toml and every build/<variant>/) and print one line "
    "per problem; exit 1 when there is any. With --ops, load the kernel for the device and "
    "check the torch.compile claim of its layers with torch.library.opcheck instead"
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options: PATH_OR_REPO, ``--revision``/``--version`` (Hub repos), ``--json``."""
    from kernel_plugins.cli import add_revision_options

    parser.add_argument(
        "target", metavar="PATH_OR_REPO", type=path_text,
        help="a local repository folder, or org/name on the Hub",
    )
    add_revision_options(parser)
    parser.add_argument("--json", action="store_true", help="machine-readable output")
    parser.add_argument("--ops", action="store_true",
                        help="load the kernel and run torch.library.opcheck on the custom ops of "
                        "every layer that declares can_torch_compile (exit 1 when one fails)")
    parser.add_argument("--device", default=None, help="the device for --ops (default: this machine's)")


def run_ops(args: argparse.Namespace) -> int:
    """``--ops``: one line per layer that claims ``can_torch_compile``; 1 when one fails."""
    from kernel_plugins.detection import get_device
    from kernel_plugins.loader import load

    from .ops import check_kernel_ops

    device = get_device(args.device)
    kernel = load(args.target, device=device, revision=args.revision, version=args.version,
                  fallback="error")
    results = check_kernel_ops(kernel, device.torch_device)
    ok = all(r.ok for r in results)
    if args.json:
        print_json({"target": args.target, "ok": ok, "layers": [r.to_dict() for r in results]})
        return 0 if ok else 1
    for r in results:
        print(clean(f"{r.layer}: {r.summary()}"))
    print(f"{'ok' if ok else 'failed'}: {len(results)} layer(s) claim can_torch_compile in {args.target}")
    return 0 if ok else 1


def run(args: argparse.Namespace) -> int:
    """Check and print: problems on stdout (``file: key: message (fix: ...)``), then notes."""
    from . import check

    if args.ops:
        return run_ops(args)
    report = check(args.target, revision=args.revision, version=args.version)
    if args.json:
        print_json(report.to_dict())
        return 0 if report.ok else 1
    for problem in report.problems:
        print(clean(problem.describe()))
    for note in report.notes:
        print(clean(f"note: {note}"))
    count = len(report.problems)
    variants = f"{len(report.variants)} variant(s)"
    if count:
        print(f"{count} problem(s) in {report.target} ({variants})")
        return 1
    print(f"ok: no problems in {report.target} ({variants})")
    return 0
