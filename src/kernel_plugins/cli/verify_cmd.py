"""``kernel-plugins verify``: check cached kernels against a lock file or the Hub's listing."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from ._args import path_text
from ._output import VariantRows

if TYPE_CHECKING:
    from ..hubload import VariantCheck

NAME = "verify"
HELP = (
    "check the cached files of the kernels a project's kernels.lock pins (PROJECT_DIR), or "
    "of a Hub repository (REPO --revision R); one line per variant, exit 1 on any failure"
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options: PROJECT_DIR or REPO, ``--revision``."""
    parser.add_argument(
        "target", metavar="PROJECT_DIR|REPO", nargs="?", default=".", type=path_text,
        help="folder holding kernels.lock (or the lock file), or a Hub repository org/name "
        "(default: .)",
    )
    parser.add_argument(
        "--revision",
        help="with REPO: branch, tag or commit sha to check (default: the newest version)",
    )
    parser.add_argument("--json", action="store_true", help="machine-readable output")


def run(args: argparse.Namespace) -> int:
    """Verify and print one line per variant; exit 1 when any variant fails."""
    from ._output import CommandError

    target = Path(args.target).expanduser()
    rows = VariantRows(args.json)
    if args.revision is None and target.exists():
        return _verify_project(target, rows)
    if "/" not in args.target or target.exists():
        raise CommandError(
            f"{args.target!r} is not a project folder or lock file; pass a folder holding "
            "kernels.lock, or a Hub repository org/name (with --revision R)"
        )
    return _verify_repo(args.target, args.revision, rows)


def _outcome(check: VariantCheck) -> tuple[str, str]:
    """(status, detail) of a variant check."""
    if check.ok:
        return "ok", check.summary()
    return "failed", "; ".join(check.problems())


def _cached_folder(repo_id: str, sha: str, variant: str) -> tuple[object, Path] | None:
    """(HubRef, folder) of a variant's cached files at ``sha``, for either repo type."""
    from .. import hub
    from ..hubload import storage_folder

    for repo_type in hub.REPO_TYPES:
        ref = hub.HubRef(repo_id, repo_type, None, sha)
        folder = storage_folder(ref) / "snapshots" / sha / "build" / variant
        if folder.is_dir():
            return ref, folder
    return None


def _verify_project(target: Path, rows: VariantRows) -> int:
    from ..errors import KernelPluginsError
    from ..hubload import read_record, verify_variant
    from ..lock import lockfile_path, read_lockfile

    path = lockfile_path(target)
    for entry in read_lockfile(path):
        for variant, pinned in sorted(entry.variants.items()):
            found = _cached_folder(entry.repo_id, entry.sha, variant)
            if found is None:
                rows.add(entry.repo_id, variant, "skipped", "not downloaded")
                continue
            ref, folder = found
            try:
                check = verify_variant(
                    ref, variant, folder, pinned=pinned, pinned_by=path,  # type: ignore[arg-type]
                    record=read_record(ref, variant),  # type: ignore[arg-type]
                )
            except KernelPluginsError as e:
                rows.add(entry.repo_id, variant, "failed", str(e))
                continue
            rows.add(entry.repo_id, variant, *_outcome(check))
    return rows.finish(str(path))


def _verify_repo(repo_id: str, revision: str | None, rows: VariantRows) -> int:
    from .. import hub
    from ..errors import KernelPluginsError
    from ..hubload import storage_folder, verify_variant
    from ..varianthash import cached_listing, hub_listing

    ref = hub.resolve(repo_id, revision=revision)
    listing = cached_listing(ref) if hub.is_offline() else hub_listing(ref)
    if listing is None:
        rows.add(repo_id, "*", "failed", "no file listing of the commit is cached and HF_HUB_OFFLINE=1 is set")
        return rows.finish(str(ref))
    build = storage_folder(ref) / "snapshots" / ref.sha / "build"
    on_disk = {p.name for p in build.iterdir() if p.is_dir()} if build.is_dir() else set()
    for variant in sorted(set(listing) | on_disk):
        if variant not in on_disk:
            rows.add(repo_id, variant, "skipped", "not downloaded")
            continue
        try:
            check = verify_variant(ref, variant, build / variant, listing=listing.get(variant, {}))
        except KernelPluginsError as e:
            rows.add(repo_id, variant, "failed", str(e))
            continue
        rows.add(repo_id, variant, *_outcome(check))
    return rows.finish(str(ref))
