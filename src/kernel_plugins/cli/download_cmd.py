"""``kernel-plugins download PROJECT_DIR``: fetch and check what ``kernels.lock`` pins;
``download REPO [--version N]``: one Hub repository, without a project (as ``verify`` tells them apart)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from ._args import path_text
from ._output import VariantRows

if TYPE_CHECKING:
    from collections.abc import Sequence

    from ..lock import KernelLock
    from ..sources import KernelSource

NAME = "download"
HELP = ("download the kernels PROJECT_DIR/kernels.lock pins (the variant for this machine, or all with "
        "--all-variants) and check them against the lock; or one Hub repository REPO [--revision R | --version N]")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options: PROJECT_DIR, ``--all-variants``, ``--device``, ``--trust-remote-code``."""
    from .main import add_device_option, add_revision_options

    parser.add_argument("project_dir", metavar="PROJECT_DIR|REPO", nargs="?", default=".", type=path_text,
                        help="folder holding kernels.lock (or the lock file), or a Hub repository "
                        "org/name (hub:org/name when a folder of that name exists here; default: .)")
    parser.add_argument("--all-variants", action="store_true",
                        help="download every variant the lock lists, not only the one for this device")
    add_device_option(parser)
    parser.add_argument("--trust-remote-code", action="store_true",
                        help="allow Hub organisations outside the trusted list")
    add_revision_options(parser)
    parser.add_argument("--json", action="store_true", help="machine-readable output")


def run(args: argparse.Namespace) -> int:
    """Check trust for every entry first, then fetch and verify; one line per variant."""
    from pathlib import Path

    from ..sources import parse_name

    lock_file = Path(args.project_dir).expanduser().is_file()
    if args.revision is not None or args.version is not None or (
            not lock_file and parse_name(args.project_dir).path is None):
        return _download_repo(args)
    from ..errors import KernelPluginsError
    from ..fetching import offer
    from ..lock import read_lockfile
    from ..sources import hub_source
    from ..trust import check_trusted
    from ..verification import fetch_checked

    locks = read_lockfile(args.project_dir)
    for entry in locks:  # refuse before anything is fetched
        check_trusted(entry.repo_id, args.trust_remote_code)
    rows = VariantRows(args.json)
    for entry in locks:
        try:  # the loading pipeline's offer: trust, the lock's entry, its commit on the Hub
            off = offer(hub_source(entry.repo_id, lockfile=locks, version=entry.version, revision=entry.revision),
                        trust_remote_code=args.trust_remote_code)
        except KernelPluginsError as e:
            rows.add(entry.repo_id, "*", "failed", str(e))
            continue
        if not off.variants:
            rows.add(entry.repo_id, "-", "failed", f"{off.where} offers no variants; re-lock with "
                     "`kernel-plugins lock PROJECT_DIR`")
        for variant in list(off.variants) if args.all_variants else _for_device(entry, off.variants, args, rows):
            try:
                fetched = fetch_checked(off, variant, progress=False)
            except KernelPluginsError as e:
                rows.add(entry.repo_id, variant, "failed", str(e))
                continue
            rows.add(entry.repo_id, variant, "ok", f"OK {getattr(entry.variants.get(variant), 'hash', 'commit ' + entry.sha)} {fetched.path}")
            if not args.all_variants:
                _dependencies(off.source, variant, args, rows)
    return rows.finish(str(locks))


def _dependencies(source: KernelSource, variant: str, args: argparse.Namespace, rows: VariantRows) -> None:
    """Fetch and check the ``kernel-depends`` of ``variant`` of ``source``, for the device, as a
    load takes them (a row for each a lock does not pin: the others are entries of their own)."""
    from ..dependencies import flatten, verified_tree
    from ..detection import get_device, system_info
    from ..errors import KernelPluginsError

    try:
        tree = verified_tree(source, get_device(args.device), system_info(), trust_remote_code=args.trust_remote_code)
    except KernelPluginsError as e:
        return rows.add(source.label, variant, "failed", str(e))
    for got in (t.verified.fetched for t in flatten(tree.deps) if t.verified.fetched.offer.lock is None):
        rows.add(got.offer.source.label, got.variant, "ok", f"OK dependency of {source.label}: {got.path}")


def _for_device(entry: KernelLock, names: Sequence[str], args: argparse.Namespace, rows: VariantRows) -> list[str]:
    """The variant of ``entry`` for ``--device`` (printed as a failure when none fits)."""
    from ..resolving import resolve_variants

    res = resolve_variants(list(names), args.device)
    if res.best is None:
        rows.add(entry.repo_id, "-", "failed", f"no variant in the lock fits this device "
                 f"({res.device.torch_device}): it pins {', '.join(names)}; use --all-variants to "
                 "fetch them anyway")
        return []
    return [res.best]


def _download_repo(args: argparse.Namespace) -> int:
    """``download REPO --version N``: fetch and check REPO's variant for this device (all with
    ``--all-variants``) as a load would, importing nothing."""
    from ..detection import get_device, system_info
    from ..errors import KernelPluginsError, SourceError
    from ..fetching import offer
    from ..resolving import choose
    from ..sources import find
    from ..verification import fetch_checked

    source = find(args.project_dir, revision=args.revision, version=args.version)
    if source.kind != "hub":
        raise SourceError(f"{source.describe()} is not a Hub repository: nothing to download")
    off = offer(source, trust_remote_code=args.trust_remote_code)
    variants = sorted(off.variants) if args.all_variants else \
        [choose(off.where, off.variants, get_device(args.device), system_info(), kind=source.kind)]
    rows = VariantRows(args.json)
    for variant in variants:
        try:
            rows.add(off.where, variant, "ok", f"OK {fetch_checked(off, variant, progress=False).path}")
        except KernelPluginsError as e:
            rows.add(off.where, variant, "failed", str(e))
            continue
        if not args.all_variants:
            _dependencies(source, variant, args, rows)
    return rows.finish(off.where)
