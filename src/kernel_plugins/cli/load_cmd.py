"""``kernel-plugins load``: load a kernel, print its provenance and public functions."""

from __future__ import annotations

import argparse
import inspect

from ._output import print_json

NAME = "load"
HELP = "load a kernel for the device and show where it came from and what it offers"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options: NAME_OR_PATH, ``--device``, revision, ``--json``, trust, fallback."""
    from .main import add_device_option, add_emulate_option, add_revision_options

    parser.add_argument("target", metavar="NAME_OR_PATH", help="org/name, short name or local path")
    add_device_option(parser)
    add_revision_options(parser)
    parser.add_argument("--json", action="store_true", help="machine-readable output")
    parser.add_argument(
        "--trust-remote-code", action="store_true",
        help="allow loading from a Hub organisation outside the trusted list",
    )
    parser.add_argument(
        "--no-fallback", action="store_true",
        help="fail instead of using a portable reference kernel when no variant fits",
    )
    add_emulate_option(parser)


def public_functions(module: object) -> list[dict[str, str]]:
    """Public callables of a kernel module with their signatures."""
    out = []
    for name in sorted(dir(module)):
        if name.startswith("_"):
            continue
        obj = getattr(module, name)
        if inspect.isfunction(obj) or inspect.isbuiltin(obj):
            try:
                sig = str(inspect.signature(obj))
            except (TypeError, ValueError):
                sig = "(...)"
            out.append({"name": name, "signature": sig})
    return out


def run(args: argparse.Namespace) -> int:
    """Load and print."""
    from ..loader import load

    module = load(
        args.target,
        device=args.device,
        revision=args.revision,
        version=args.version,
        trust_remote_code=args.trust_remote_code,
        fallback="error" if args.no_fallback else "reference",
    )
    prov = module.__kernel_provenance__
    funcs = public_functions(module)
    if args.json:
        print_json({"provenance": prov.to_dict(), "functions": funcs})
        return 0
    for key, value in prov.to_dict().items():
        if value not in (None, [], ()):
            print(f"{key:12} {value}")
    if prov.emulated:
        print("NOTE: the device is EMULATED on the CPU; this says nothing about real hardware")
    print("functions:")
    for f in funcs:
        print(f"  {f['name']}{f['signature']}")
    return 0
