"""``kernel-plugins versions REPO``: the version branches of a Hub kernel repository."""

from __future__ import annotations

import argparse
import sys

from ._output import clean, print_json

NAME = "versions"
HELP = ("list the version branches (v1, v2, ...) of a Hub kernel repository, each with its "
        "commit and the variants it offers for this device (kept for kernels' CLI: "
        "`variants REPO --all-versions` replaces it)")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options: REPO, ``--device``, ``--json``."""
    from .main import add_device_option

    parser.add_argument("repo", metavar="REPO", help="Hub repository org/name or short name")
    add_device_option(parser)
    parser.add_argument("--json", action="store_true", help="machine-readable output")


def run(args: argparse.Namespace) -> int:
    """One line per version branch, oldest first."""
    print("note: `kernel-plugins variants REPO --all-versions` replaces `versions` (as in kernels 0.19)", file=sys.stderr)
    from .. import hub
    from ..detection import get_device, system_info
    from ..resolving import resolve_variants
    from .variants import hub_versions

    repo_id, found = hub_versions(args.repo, True)
    info, system, out = get_device(args.device), system_info(), []
    for n, sha in found.items():
        names = hub.list_variant_names(hub.HubRef(repo_id, "kernel", f"v{n}", sha, n))
        out.append({"branch": f"v{n}", "sha": sha, "variants": names,
                    "for_device": list(resolve_variants(names, info, system).accepted)})
    if args.json:
        print_json({"repo_id": repo_id, "device": info.device_type, "versions": out})
    for row in [] if args.json else out:
        fit = ", ".join(row["for_device"]) or f"none of {len(row['variants'])} variants fits"
        print(clean(f"{row['branch']} {row['sha'][:12]}: {info.device_type}: {fit}"))
    return 0
