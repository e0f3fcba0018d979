"""``kernel-plugins variants``: the resolution trace of a kernel for a device."""

from __future__ import annotations

import argparse
from typing import Any

from ._output import DEFAULT_WIDTH, clean, print_json, print_table

NAME = "variants"
HELP = "show which build variants of a kernel fit the device, and why the others do not"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options: REPO_OR_PATH, ``--device``, ``--revision``/``--version``, ``--json``."""
    from .main import add_target_options, add_wide_option

    add_target_options(parser, "REPO_OR_PATH", "org/name, short name or local path", latest=True)
    parser.add_argument("--only-compatible", action="store_true", help="list only the variants that fit")
    add_wide_option(parser)


def hub_versions(target: str, every: bool) -> tuple[str, dict[int, str]]:
    """The repo id of the Hub repository ``target`` and its versions (number -> commit): all,
    oldest first, or the highest. :raises SourceError: a local folder. OfflineError / HubError:
    none (offline: none cached), or the Hub cannot say."""
    from .. import hub
    from ..errors import HubError, OfflineError, SourceError
    from ..sources import parse_name

    repo_id = parse_name(target).repo_id
    if repo_id is None:
        raise SourceError(f"{target!r} is a local folder; versions are branches of a Hub repository")
    if not (found := hub.versions(repo_id)):
        why = "none is cached and HF_HUB_OFFLINE=1 is set" if hub.is_offline() else "none on the Hub"
        raise (OfflineError if hub.is_offline() else HubError)(f"{repo_id} has no version branches (v1, v2, ...): {why}")
    return repo_id, {n: found[n] for n in sorted(found)[0 if every else -1:]}


def run(args: argparse.Namespace) -> int:
    """Find the source as ``load`` does, resolve, print the trace (of each version with
    ``--all-versions``); exit 1 when nothing fits (in any version)."""
    from ..detection import get_device

    device = get_device(args.device)
    every = bool(getattr(args, "all_versions", False))
    numbers = list(hub_versions(args.target, every)[1]) if every or args.version == "latest" else [args.version]
    docs = [_one(args, device, n) for n in numbers]
    if args.json:
        print_json({"versions": docs} if every else docs[0])
    return 0 if all(d["best"] for d in docs) else 1


def _one(args: argparse.Namespace, device: Any, version: int | None) -> dict[str, Any]:
    """The trace of one version (printed unless ``--json``), as a JSON document."""
    from ..detection import system_info
    from ..errors import KernelPluginsError
    from ..fetching import offer
    from ..metadata import parse_metadata_bytes
    from ..resolving import resolve_for
    from ..sources import find
    from ..verification import peek_metadata
    from .list_backends import system_line

    source = find(args.target, device=device, revision=args.revision, version=version)
    off = offer(source, trust_remote_code=True)  # listing names runs no code
    res = resolve_for(off.variants, device, system_info())
    try:  # the chosen variant's kernel-depends (of a Hub variant only metadata.json is fetched)
        meta = parse_metadata_bytes(peek_metadata(off, res.best), where=f"{off.where} {res.best}") if res.best else None
        depends: list[str] | str = [str(d) for d in meta.kernel_depends] if meta else []
    except KernelPluginsError as e:
        depends = f"unknown ({e})"
    where = f"{source.kind}: {off.where}"
    doc: dict[str, Any] = {"source": where, "source_kind": source.kind, "version": version, **res.to_dict(), "depends_on": depends}
    if args.only_compatible:
        doc["decisions"] = [d for d in doc["decisions"] if d["accepted"]]
    if not args.json:
        print(clean(f"source: {where}"))
        for note in source.notes:
            print(clean(f"note: {note}"))
        print(clean(f"device: {device.summary()}"))
        print(clean(system_line(system_info())))
        rows = [[d.variant, "yes" if d.accepted else "no", f"#{(d.rank or 0) + 1}" if d.accepted else (d.reason or "")]
                for d in res.decisions if d.accepted or not args.only_compatible]
        print_table(["variant", "fits", "preference / reason"], rows, width=None if args.wide else DEFAULT_WIDTH,
                    wrap_last=True)
        print(clean(f"chosen: {res.best or 'none'}"))
        if res.best:
            shown = depends if isinstance(depends, str) else ", ".join(depends) or "no other kernel"
            print(clean(f"depends on: {shown}"))
    return doc

