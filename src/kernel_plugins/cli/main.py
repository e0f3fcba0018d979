"""Argument parsing, command dispatch and error reporting for ``kernel-plugins``."""

from __future__ import annotations

import argparse
import importlib
import logging
import sys
import traceback
import warnings
from collections.abc import Sequence

from ..errors import KernelPluginsError
from ._output import CommandError

__all__ = ["main", "build_parser", "COMMANDS"]

#: Command modules under ``kernel_plugins.cli``; each has NAME, HELP, add_arguments, run.
COMMANDS = [
    "list_backends", "variants", "load_cmd", "check_cmd",
    "lock_cmd", "download_cmd", "verify_cmd", "benchmark_cmd",
]


def add_emulate_option(parser: argparse.ArgumentParser) -> None:
    """``--emulate NAME``: run the command against an emulated device of that name."""
    parser.add_argument(
        "--emulate",
        metavar="NAME",
        help="emulate a device of this type on the CPU first (for trying plugins without "
        "hardware; results say nothing about real hardware)",
    )


def add_device_option(parser: argparse.ArgumentParser) -> None:
    """``--device D``."""
    parser.add_argument("--device", help="device, e.g. cpu, cuda:1, mlu (default: the preferred one)")


def add_revision_options(parser: argparse.ArgumentParser) -> None:
    """``--revision R | --version N`` (mutually exclusive)."""
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--revision", help="branch, tag or commit sha (Hub repos)")
    group.add_argument("--version", type=int, help="kernel version N: the tip of branch vN")


def build_parser() -> argparse.ArgumentParser:
    """The full argument parser."""
    parser = argparse.ArgumentParser(
        prog="kernel-plugins",
        description="Load compute kernels for any accelerator; every backend is a plugin.",
    )
    parser.add_argument("--debug", action="store_true", help="show tracebacks and debug logs")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for modname in COMMANDS:
        mod = importlib.import_module(f"{__package__}.{modname}")
        p = sub.add_parser(mod.NAME, help=mod.HELP, description=mod.HELP)
        p.add_argument("--debug", action="store_true", default=argparse.SUPPRESS, help=argparse.SUPPRESS)
        mod.add_arguments(p)
        p.set_defaults(_run=mod.run)
    return parser


def _emulate_if_asked(args: argparse.Namespace) -> None:
    name = getattr(args, "emulate", None)
    if name:
        from ..testing import emulate

        emulate(name)
        print(
            f"note: device type {name!r} is EMULATED on the CPU for this command; nothing here "
            "describes real hardware",
            file=sys.stderr,
        )


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status."""
    warnings.filterwarnings("ignore", message="Failed to initialize NumPy")
    parser = build_parser()
    args = parser.parse_args(argv)
    debug = bool(getattr(args, "debug", False))
    logging.basicConfig(
        level=logging.DEBUG if debug else logging.INFO,
        format="%(levelname)s: %(message)s" if not debug else "%(levelname)s %(name)s: %(message)s",
    )
    if not debug:  # one INFO line per HTTP request is noise for users
        for name in ("httpx", "httpcore", "filelock"):
            logging.getLogger(name).setLevel(logging.WARNING)
    try:
        _emulate_if_asked(args)
        return int(args._run(args) or 0)
    except (KernelPluginsError, CommandError) as e:
        if debug:
            traceback.print_exc()
        print(f"error: {e}", file=sys.stderr)
        return 2 if isinstance(e, CommandError) else 1
    except BrokenPipeError:  # output piped into head & co.
        return 0
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
