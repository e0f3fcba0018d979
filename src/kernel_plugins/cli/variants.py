"""``kernel-plugins variants``: the resolution trace of a kernel for a device."""

from __future__ import annotations

import argparse

from ._output import DEFAULT_WIDTH, clean, print_json, print_table

NAME = "variants"
HELP = "show which build variants of a kernel fit the device, and why the others do not"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options: REPO_OR_PATH, ``--device``, ``--revision``/``--version``, ``--json``."""
    from .main import add_target_options, add_wide_option

    add_target_options(parser, "REPO_OR_PATH", "org/name, short name or local path")
    add_wide_option(parser)


def run(args: argparse.Namespace) -> int:
    """Find the source as ``load`` does, resolve, print the trace; exit 1 when nothing fits."""
    from ..detection import get_device, system_info
    from ..errors import KernelPluginsError
    from ..fetching import offer
    from ..metadata import parse_metadata_bytes
    from ..resolving import resolve_for
    from ..sources import find
    from ..verification import peek_metadata

    device = get_device(args.device)
    source = find(args.target, device=device, revision=args.revision, version=args.version)
    off = offer(source, trust_remote_code=True)  # listing names runs no code
    res = resolve_for(off.variants, device, system_info())
    try:  # the chosen variant's kernel-depends (of a Hub variant only metadata.json is fetched)
        meta = parse_metadata_bytes(peek_metadata(off, res.best), where=f"{off.where} {res.best}") if res.best else None
        depends: list[str] | str = [str(d) for d in meta.kernel_depends] if meta else []
    except KernelPluginsError as e:
        depends = f"unknown ({e})"
    where = f"{source.kind}: {off.where}"
    if args.json:
        print_json({"source": where, "source_kind": source.kind, **res.to_dict(), "depends_on": depends})
    else:
        print(clean(f"source: {where}"))
        for note in source.notes:
            print(clean(f"note: {note}"))
        print(clean(f"device: {device.summary()}"))
        rows = [
            [d.variant, "yes" if d.accepted else "no",
             f"#{(d.rank or 0) + 1}" if d.accepted else (d.reason or "")]
            for d in res.decisions
        ]
        print_table(
            ["variant", "fits", "preference / reason"], rows,
            width=None if args.wide else DEFAULT_WIDTH, wrap_last=True,
        )
        print(clean(f"chosen: {res.best or 'none'}"))
        if res.best:
            shown = depends if isinstance(depends, str) else ", ".join(depends) or "no other kernel"
            print(clean(f"depends on: {shown}"))
    return 0 if res.best else 1

