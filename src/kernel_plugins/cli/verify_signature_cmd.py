"""``kernel-plugins verify-signature TARGET [VERSION]``: who signed each variant, and do its files match."""

from __future__ import annotations

import argparse

from ._args import path_text
from ._output import VariantRows

NAME = "verify-signature"
HELP = ("check the sigstore signature (metadata.json.sigstore), signer and digest of a kernel's "
        "variant for this device (or all); one line per variant, exit 1 unless all are signed")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options: TARGET, revision, ``--all-variants``, trust root, signer required or added, ``--json``."""
    from .main import add_target_options

    add_target_options(parser, "TARGET", "Hub repository org/name, short name or local kernel folder")
    parser.add_argument("version_arg", metavar="VERSION", nargs="?", type=int,
                        help="kernel version N, as `kernels verify-signature REPO N` (= --version N)")
    parser.add_argument("--all-variants", action="store_true", help="check every variant")
    parser.add_argument("--filter-unsigned", action="store_true",
                        help="skip variants without a signature instead of failing on them")
    parser.add_argument("--filter-no-digest", action="store_true",
                        help="skip variants whose metadata.json has no digest instead of failing")
    add_trusted_root_option(parser)
    parser.add_argument("--cert-identity", metavar="ID", help="require this signer identity (as sigstore's)")
    parser.add_argument("--cert-oidc-issuer", metavar="URL", help="the OIDC issuer of --cert-identity")
    parser.add_argument("--add-cert-identity", metavar="ID", help="allow this signer besides the default policy")
    parser.add_argument("--add-cert-oidc-issuer", metavar="URL", help="the OIDC issuer of --add-cert-identity")


def add_trusted_root_option(parser: argparse.ArgumentParser) -> None:
    """``--trusted-root FILE`` (shared with ``load``)."""
    parser.add_argument("--trusted-root", metavar="FILE", type=path_text,
                        help="a sigstore trusted_root.json to verify against (default: "
                        "KERNEL_PLUGINS_TRUSTED_ROOT, else sigstore's public-good instance)")


def run(args: argparse.Namespace) -> int:
    """Check each variant; exit 1 unless every one is signed by an allowed signer and matches, or is skipped."""
    from ..detection import get_device, system_info
    from ..errors import KernelPluginsError
    from ..fetching import fetch, offer
    from ..metadata import parse_metadata_bytes
    from ..resolving import choose
    from ..signatures import Signer, check_fetched, read_metadata
    from ..sources import find
    from ._output import CommandError

    def signer(flag: str) -> tuple[Signer, ...]:
        identity, issuer = getattr(args, f"{flag}_identity"), getattr(args, f"{flag}_oidc_issuer")
        if bool(identity) != bool(issuer):
            raise CommandError(f"--{flag.replace('_', '-')}-identity and --{flag.replace('_', '-')}-oidc-issuer go "
                               "together: give both")
        return (Signer(identity, issuer),) if identity else ()

    required, extra = signer("cert"), signer("add_cert")
    if args.version_arg is not None and (args.revision or args.version is not None):
        raise CommandError("give the version once: VERSION or --version, without --revision")
    source = find(args.target, revision=args.revision, version=args.version_arg if args.version is None else args.version)
    off = offer(source, trust_remote_code=True)  # nothing is imported: reading files is safe
    variants = sorted(off.variants) if args.all_variants else \
        [choose(off.where, off.variants, get_device(args.device), system_info(), kind=source.kind)]
    rows = VariantRows(args.json)
    for variant in variants:
        try:
            fetched = fetch(off, variant, progress=False)
            res = check_fetched(fetched, trusted_root=args.trusted_root, extra_signers=extra,
                                required_signers=required)
            skip = (args.filter_unsigned and res.state == "unsigned") or (
                args.filter_no_digest and res.state == "digest mismatch"
                and parse_metadata_bytes(read_metadata(fetched), where=variant).digest is None)
        except KernelPluginsError as e:
            rows.add(source.label, variant, "failed", f"cannot check: {e}", state="cannot check", signer="")
            continue
        rows.add(source.label, variant, "skipped" if skip else "ok" if res.ok else "failed",
                 f"{res.state}: {res.detail}", state=res.state, signer=res.signer or "")
    return rows.finish(off.where)
