"""``kernel-plugins cache ls``: the kernels in the download cache that loads use."""

from __future__ import annotations

import argparse
import sys
import time

from ._output import DEFAULT_WIDTH, clean, print_json, print_table

NAME = "cache"
HELP = ("cache ls: list the kernel repositories in the download cache that loads use (its folder is "
        "printed first), each commit with its version branches, variants, size and last use")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options: the action (``ls``), ``--json``, ``--wide``."""
    from .main import add_wide_option

    parser.add_argument("action", choices=["ls"], help="ls: list the cached kernels")
    parser.add_argument("--json", action="store_true", help="machine-readable output")
    add_wide_option(parser)


def _size(n: int) -> str:
    unit = next(u for u in range(4) if n < 1000 ** (u + 1) or u == 3)
    return f"{n} B" if unit == 0 else f"{n / 1000 ** unit:.1f} {('kB', 'MB', 'GB')[unit - 1]}"


def run(args: argparse.Namespace) -> int:
    """One row per cached commit of each kernel repository (a repository with a ``build/``
    folder); nothing is downloaded or changed."""
    from .. import hub

    folder = hub.cache_dir()
    repos, warnings = hub.cached_kernels()
    for warning in warnings:
        print(clean(f"warning: {folder}: left out: {warning}"), file=sys.stderr)
    if args.json:
        print_json({"cache_dir": str(folder), "repos": repos})
        return 0
    if not repos:
        print(clean(f"no kernels in the cache {folder}"))
        return 0
    rows = [[f"{r['repo_id']}" + ("" if r["repo_type"] == "kernel" else f" ({r['repo_type']})"),
             ", ".join(v["ref_names"]) or v["commit"][:12], _size(v["size_on_disk"]),
             time.strftime("%Y-%m-%d", time.localtime(v["last_accessed"])) if v["last_accessed"] else "-",
             ", ".join(v["variants"]) or "-"] for r in repos for v in r["revisions"]]
    print(clean(f"cache: {folder}"))
    print_table(["repository", "refs (or commit)", "size", "last used", "variants"], rows,
                width=None if args.wide else DEFAULT_WIDTH, wrap_last=True, whole=(0, 1))
    return 0
