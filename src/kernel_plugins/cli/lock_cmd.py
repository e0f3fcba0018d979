"""``kernel-plugins lock PROJECT_DIR``: pin a project's kernels in ``kernels.lock``."""

from __future__ import annotations

import argparse

from ._args import path_text

NAME = "lock"
HELP = (
    "pin the kernels listed in [tool.kernels.dependencies] of PROJECT_DIR/pyproject.toml to "
    "commits and variant hashes in PROJECT_DIR/kernels.lock"
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options: PROJECT_DIR (default: the working directory)."""
    parser.add_argument("project_dir", metavar="PROJECT_DIR", nargs="?", default=".", type=path_text,
                        help="folder holding pyproject.toml (default: .)")


def run(args: argparse.Namespace) -> int:
    """Resolve every dependency, hash its variants, write the lock file atomically."""
    from ..lock import lock_project
    from ..signatures import lock_signers

    path, locks = lock_project(args.project_dir, signers=lock_signers)  # records the signers
    for lock in locks:
        print(f"{lock.repo_id} {lock.sha} ({len(lock.variants)} variants)")
    print(f"wrote {path}")
    return 0
