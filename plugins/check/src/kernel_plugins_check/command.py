"""``kernel-plugins check``: validate a kernel repository before publishing it."""

from __future__ import annotations

import argparse

from kernel_plugins.cli import clean, path_text, print_json

NAME = "check"
HELP = (
    "validate a kernel repository (build.toml and every build/<variant>/) and print one line "
    "per problem; exit 1 when there is any"
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


def run(args: argparse.Namespace) -> int:
    """Check and print: problems on stdout (``file: key: message (fix: ...)``), then notes."""
    from . import check

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
