"""``kernel-plugins verify``: check cached kernels against a lock file or the Hub's listing."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from ._args import path_text
from ._output import VariantRows

if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

    from ..fetching import Fetched

NAME = "verify"
HELP = ("check the cached files of the kernels a project's kernels.lock pins (PROJECT_DIR), or of a Hub "
        "repository (REPO [--revision R | --version N]); one line per variant, exit 1 on any failure "
        "or when a pinned kernel had nothing downloaded to check (--allow-missing allows it)")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options: PROJECT_DIR or REPO, ``--revision R | --version N`` (with REPO; default: the
    newest version), ``--json``."""
    from .main import add_revision_options

    parser.add_argument("target", metavar="PROJECT_DIR|REPO", nargs="?", default=".", type=path_text,
                        help="folder holding kernels.lock (or the lock file), or a Hub repository "
                        "org/name (hub:org/name when a folder of that name exists here; default: .)")
    add_revision_options(parser)
    parser.add_argument("--allow-missing", action="store_true",
                        help="exit 0 when a kernel has no downloaded variant to check")
    parser.add_argument("--json", action="store_true", help="machine-readable output")


def run(args: argparse.Namespace) -> int:
    """Verify and print one line per variant; exit 1 when any variant fails."""
    from ..sources import parse_name
    from ._output import CommandError

    rows = VariantRows(args.json, allow_missing=args.allow_missing)
    if Path(args.target).expanduser().is_file():
        return _verify_project(Path(args.target).expanduser(), rows)
    name = parse_name(args.target)  # one meaning per name, as for load
    if name.path is not None:
        if args.revision is not None or args.version is not None:
            raise CommandError(f"{args.target!r} is a local folder: its kernels.lock pins the commits; --"
                               f"{'revision' if args.version is None else 'version'} applies to a Hub repository "
                               "(write hub:org/name for the Hub)")
        return _verify_project(name.path, rows)
    assert name.repo_id is not None
    return _verify_repo(name.repo_id, args.revision, args.version, rows)


def _check(rows: VariantRows, repo_id: str, variant: str, found: Fetched | None,
           listing: Mapping[str, Any] | None) -> None:
    """Check one cached variant (``found``; None: not downloaded) and add its row."""
    from ..errors import KernelPluginsError
    from ..verification import check_cached

    if found is None:
        rows.add(repo_id, variant, "skipped", "not downloaded")
        return
    try:
        check = check_cached(found, listing=listing)
    except KernelPluginsError as e:
        rows.add(repo_id, variant, "failed", str(e))
        return
    detail = check.summary() if check.ok else "; ".join(check.problems())
    rows.add(repo_id, variant, "ok" if check.ok else "failed", detail + "".join(f" ({n})" for n in check.notes))


def _verify_project(target: Path, rows: VariantRows) -> int:
    from .. import hub
    from ..fetching import cached, commit_offer
    from ..lock import read_lockfile

    locks = read_lockfile(target)
    for entry in locks:
        refs = [hub.HubRef(entry.repo_id, repo_type, None, entry.sha) for repo_type in hub.REPO_TYPES]
        names = sorted(entry.variants) or sorted({v for ref in refs for v in hub.cached_variants(ref)})
        if not names:  # a lock without hashes names no variants: those cached are checked
            rows.add(entry.repo_id, "*", "skipped", f"nothing of commit {entry.sha} is downloaded")
        for variant in names:
            found = None
            for ref in refs:  # the cached files, under either repo type
                found = found or cached(commit_offer(ref, (variant,), lock=entry, lockfile=locks), variant)
            _check(rows, entry.repo_id, variant, found, None)
    return rows.finish(str(locks))


def _verify_repo(repo_id: str, revision: str | None, version: int | None, rows: VariantRows) -> int:
    from .. import hub
    from ..fetching import cached, commit_offer

    ref = hub.resolve(repo_id, revision=revision, version=version)
    listing = hub.cached_listing(ref) if hub.is_offline() else hub.hub_listing(ref)
    if listing is None:
        rows.add(repo_id, "*", "failed", "no file listing of the commit is cached and HF_HUB_OFFLINE=1 is set")
        return rows.finish(str(ref))
    names = sorted(set(listing) | set(hub.cached_variants(ref)))
    off = commit_offer(ref, names)
    for variant in names:
        _check(rows, repo_id, variant, cached(off, variant), listing.get(variant, {}))
    return rows.finish(str(ref))
