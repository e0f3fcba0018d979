"""``kernel-plugins lock PROJECT_DIR``: pin a project's kernels in ``kernels.lock``."""

from __future__ import annotations

import argparse

from ._args import path_text
from ._output import clean, print_json

NAME = "lock"
HELP = ("pin the kernels listed in [tool.kernels.dependencies] of PROJECT_DIR/pyproject.toml, and the kernels "
        "they depend on, to commits in PROJECT_DIR/kernels.lock (kernels' format), their variant hashes and "
        "signers in kernels.lock.variants")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options: PROJECT_DIR (default: the working directory), ``--json``."""
    parser.add_argument("project_dir", metavar="PROJECT_DIR", nargs="?", default=".", type=path_text,
                        help="folder holding pyproject.toml (default: .)")
    parser.add_argument("--json", action="store_true", help="machine-readable output")


def run(args: argparse.Namespace) -> int:
    """Resolve every kernel, hash its variants, write both files atomically."""
    from ..lock import hashes_path, lock_project
    from ..signatures import lock_signers

    path, locks = lock_project(args.project_dir, signers=lock_signers)  # records the signers
    if args.json:
        print_json({"lockfile": str(path), "hashes": str(hashes_path(path)), "kernels": [
            {**lock.to_json(), "version": lock.version, "revision": lock.revision} for lock in locks]})
        return 0
    for lock in locks:
        print(clean(f"{lock.label} {lock.sha} ({len(lock.variants)} variants)"))
    print(clean(f"wrote {path} and {hashes_path(path).name}"))
    return 0
