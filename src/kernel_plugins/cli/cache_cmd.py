"""``kernel-plugins cache ls``: the kernels in the download cache that loads use."""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

from ._output import DEFAULT_WIDTH, clean, print_json, print_table

NAME = "cache"
HELP = ("cache ls: list the kernel repositories in the download cache (KERNELS_CACHE, else "
        "HF_HUB_CACHE), each commit with its version branches, variants, size and last use")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options: the action (``ls``), ``--json``, ``--wide``."""
    from .main import add_wide_option

    parser.add_argument("action", choices=["ls"], help="ls: list the cached kernels")
    parser.add_argument("--json", action="store_true", help="machine-readable output")
    add_wide_option(parser)


def _size(n: float) -> str:
    for unit in ("B", "kB", "MB", "GB"):
        if n < 1000 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000
    return ""  # pragma: no cover


def run(args: argparse.Namespace) -> int:
    """One row per cached commit of each kernel repository (a repository with a ``build/``
    folder); nothing is downloaded or changed."""
    from huggingface_hub import CacheNotFound, scan_cache_dir

    from .. import hub
    from ..errors import LocalDiskError

    folder = hub.cache_dir()
    try:
        scan = scan_cache_dir(folder)
    except CacheNotFound:
        scan = None
    except (OSError, ValueError) as e:  # a file, or unreadable
        raise LocalDiskError(f"cannot list the kernel cache {folder}: {e}; set KERNELS_CACHE to the cache folder") from e
    repos: list[dict[str, Any]] = []
    for repo in sorted(scan.repos if scan else (), key=lambda r: (r.repo_id, r.repo_type)):
        revisions = []
        for rev in repo.revisions:
            build = rev.snapshot_path / "build"
            variants = sorted({f.file_path.relative_to(build).parts[0] for f in rev.files if build in f.file_path.parents})
            numbers = [int(r[1:]) for r in rev.refs if r[:1] == "v" and r[1:].isdecimal()]
            revisions.append({"commit": rev.commit_hash, "refs": sorted(rev.refs), "version": max(numbers, default=None),
                              "variants": variants, "size_on_disk": rev.size_on_disk,
                              "last_accessed": max((f.blob_last_accessed for f in rev.files), default=None)})
        if any(r["variants"] for r in revisions) or repo.repo_type == "kernel":
            revisions.sort(key=lambda r: (r["version"] is None, r["version"] or 0, r["refs"], r["commit"]))
            repos.append({"repo_id": repo.repo_id, "repo_type": repo.repo_type, "size_on_disk": repo.size_on_disk,
                          "last_accessed": repo.last_accessed, "revisions": revisions})
    for warning in scan.warnings if scan else ():
        print(clean(f"warning: {folder}: left out: {warning}"), file=sys.stderr)
    if args.json:
        print_json({"cache_dir": str(folder), "repos": repos})
        return 0
    if not repos:
        print(clean(f"no kernels in the cache {folder}"))
        return 0
    rows = [[f"{r['repo_id']}" + ("" if r["repo_type"] == "kernel" else f" ({r['repo_type']})"),
             ", ".join(v["refs"]) or v["commit"][:12], _size(v["size_on_disk"]),
             time.strftime("%Y-%m-%d", time.localtime(v["last_accessed"])) if v["last_accessed"] else "-",
             ", ".join(v["variants"]) or "-"] for r in repos for v in r["revisions"]]
    print(clean(f"cache: {folder}"))
    print_table(["repository", "refs (or commit)", "size", "last used", "variants"], rows,
                width=None if args.wide else DEFAULT_WIDTH, wrap_last=True, whole=(0, 1))
    return 0
