"""Argument parsing, command dispatch and error reporting for ``kernel-plugins``.

Exit status (see :data:`EXIT_STATUS`, documented in ``docs/errors.md``): 0 success, 1 the
command ran and failed, 2 the command line is wrong, 130 interrupted. Without ``--debug``
nothing prints a traceback: every failure is one ``error: ...`` line on stderr, or, with
``--json``, a JSON document ``{"error": {...}}`` on stdout.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import importlib
import logging
import os
import re
import sys
import traceback
import warnings
from collections.abc import Iterator, Sequence
from typing import Any, NoReturn

from ..errors import KernelPluginsError
from . import _output
from ._args import bounded, path_text
from ._output import CommandError, clean, cli_spelling, print_json, shorten

__all__ = ["main", "build_parser", "COMMANDS", "EXIT_STATUS"]

#: Command modules under ``kernel_plugins.cli``; each has NAME, HELP, add_arguments, run.
COMMANDS = [
    "list_backends", "variants", "load_cmd", "check", "lock_cmd", "download_cmd", "verify_cmd",
    "benchmark", "verify_signature_cmd", "info_cmd", "describe_api", "versions_cmd", "cache_cmd",
    "completion_cmd",
]

#: Commands that a tool distribution ships: name -> (module, distribution, short help).
TOOL_COMMANDS: dict[str, tuple[str, str, str]] = {
    "check": ("kernel_plugins_check.command", "kernel-plugins-check",
              "validate a kernel repository before publishing it"),
    "benchmark": ("kernel_plugins_benchmark.command", "kernel-plugins-benchmark",
                  "time a kernel's functions against the portable reference"),
}

#: Every exit status the command line uses, and what it means.
EXIT_STATUS: dict[int, str] = {
    0: "success",
    1: "the command ran and failed: an error of kernel-plugins (bad repository, no device, "
    "integrity failure, a failed check), an operating-system error, or a failed benchmark check",
    2: "the command line is wrong: unknown command or option, a missing argument, a value out "
    "of range or misspelt (`--emulate mlux`, `--device mlux`), a path that cannot be used",
    130: "interrupted (Ctrl-C)",
}


class _Parser(argparse.ArgumentParser):
    """An argument parser whose usage errors raise :class:`CommandError` (exit 2)."""

    def error(self, message: str) -> NoReturn:
        typo = re.search(r"invalid choice: '([^']*)'", message)
        if typo:  # a misspelt command: name the closest one
            from .._suggest import did_you_mean

            names = [n for a in self._actions if isinstance(a.choices, dict) for n in a.choices]
            hint = did_you_mean(typo.group(1), names)
            message = message[: typo.end()] + (f";{hint}" if hint else "") + message[typo.end():]
        unknown = re.search(r"unrecognized arguments: (-[^\s=]+)", message)
        if unknown:  # a misspelt option: name the closest option of any command
            from .._suggest import did_you_mean

            parsers = [self, *(p for a in self._actions if isinstance(a.choices, dict) for p in a.choices.values())]
            hint = did_you_mean(unknown.group(1), {o for p in parsers for o in p._option_string_actions})
            message += f";{hint}" if hint else ""
        raise CommandError(message, usage=self.format_usage())


def add_device_option(parser: argparse.ArgumentParser) -> None:
    """``--device D``."""
    parser.add_argument("--device", help="device, e.g. cpu, cuda:1, mlu (default: the preferred one)")


def add_revision_options(parser: argparse.ArgumentParser, *, latest: bool = False) -> None:
    """``--revision R | --version N`` (mutually exclusive); ``latest``: also ``--version
    latest`` and ``--all-versions``."""
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--revision", help="branch, tag or commit sha (Hub repos)")
    number = bounded(1, 2**31, whole=True)

    def number_or_latest(text: str) -> int | str:
        try:
            return text if text == "latest" else number(text)
        except argparse.ArgumentTypeError as e:
            raise argparse.ArgumentTypeError(f"{e}, nor 'latest'") from None

    group.add_argument("--version", type=number_or_latest if latest else number,
                       help="kernel version N: the tip of branch vN" + (" ('latest': the highest)" if latest else ""))
    if latest:
        group.add_argument("--all-versions", action="store_true", help="every version branch, oldest first")


def add_target_options(parser: argparse.ArgumentParser, metavar: str, help: str, *, latest: bool = False) -> None:
    """A kernel ``metavar`` positional, ``--device``, ``--revision | --version``, ``--json``."""
    parser.add_argument("target", metavar=metavar, type=path_text, help=help)
    add_device_option(parser)
    add_revision_options(parser, latest=latest)
    parser.add_argument("--json", action="store_true", help="machine-readable output")


def add_wide_option(parser: argparse.ArgumentParser) -> None:
    """``--wide``: tables show every cell whole instead of fitting 100 columns."""
    parser.add_argument("--wide", action="store_true",
                        help="do not cut table cells to fit 100 columns")


def _add_global_options(parser: argparse.ArgumentParser, *, top: bool) -> None:
    """``--debug``, ``--verbose`` and ``--emulate``, accepted before and after the command."""
    default: Any = None if top else argparse.SUPPRESS
    flag: Any = False if top else argparse.SUPPRESS
    parser.add_argument("--debug", action="store_true", default=flag,
                        help="show tracebacks and every library's debug logs")
    parser.add_argument("-v", "--verbose", action="store_true", default=flag,
                        help="say what kernel-plugins does (its info logs: the commit and "
                        "variant chosen, the lock file used...)")
    parser.add_argument(
        "--emulate", metavar="NAME", default=default,
        help="emulate a device of this installed backend on the CPU first (for trying plugins "
        "without hardware; results say nothing about real hardware)",
    )


def build_parser() -> argparse.ArgumentParser:
    """The full argument parser."""
    from .. import __version__

    parser = _Parser(
        prog="kernel-plugins",
        description="Load compute kernels for any accelerator; every backend is a plugin.",
        epilog="Exit status: 0 ok, 1 error, 2 usage error, 130 interrupted (docs/errors.md). "
        "With --json, errors are JSON on stdout too.",
    )
    parser.add_argument(
        "--version", action="version", version=f"kernel-plugins {__version__}",
        help="print the version of kernel-plugins and exit",
    )
    _add_global_options(parser, top=True)
    parser.add_argument("--json", dest="json_first", action="store_true",
                        help="the command's --json, given before it")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    for modname in COMMANDS:
        tool = TOOL_COMMANDS.get(modname)
        try:
            mod = importlib.import_module(tool[0] if tool else f"{__package__}.{modname}")
        except ModuleNotFoundError as e:  # a tool distribution that is not installed
            if tool is None or e.name is None or not tool[0].startswith(e.name):
                raise
            # every argument (--help too) is left to the missing tool's message
            p = sub.add_parser(modname, help=f"{tool[2]} (needs {tool[1]})", add_help=False,
                               prefix_chars="\0")
            p.add_argument("rest", nargs="*")
            p.set_defaults(_run=functools.partial(_missing_tool, modname, tool), _parser=p)
            continue
        p = sub.add_parser(mod.NAME, help=mod.HELP, description=mod.HELP)
        _add_global_options(p, top=False)
        mod.add_arguments(p)
        p.set_defaults(_run=mod.run, _parser=p)
    return parser


def _missing_tool(name: str, tool: tuple[str, str, str], args: argparse.Namespace) -> int:
    from ..known_plugins import missing_tool

    raise missing_tool(tool[1], f"kernel-plugins {name}")


def _emulate_if_asked(args: argparse.Namespace) -> None:
    """``--emulate NAME``: an installed backend (else a usage error with the fix), emulated."""
    name = getattr(args, "emulate", None)
    if not name:
        return
    from ..detection import find_backends, unknown_device_error
    from ..known_plugins import import_tool

    if not find_backends(name):
        raise CommandError(f"--emulate {clean(name)!r}: {unknown_device_error(name)}")
    from ..torch_support import require_torch

    require_torch()  # the emulated device is a torch device
    import_tool("kernel_plugins_testing", "kernel-plugins-testing", "--emulate").emulate(name)
    print(f"note: {name!r} is EMULATED on the CPU for this command; nothing here describes real "
          "hardware", file=sys.stderr)


def _check_device(args: argparse.Namespace) -> None:
    """``--device`` must parse and name an installed backend (else a usage error, exit 2)."""
    from ..detection import find_backends, unknown_device_error
    from ..device import parse_device
    from ..errors import DeviceError

    if not (text := getattr(args, "device", None)):
        return
    usage = args._parser.format_usage()
    try:
        request = parse_device(text)
    except DeviceError as e:
        raise CommandError(f"--device: {e}", usage=usage) from e
    if not find_backends(request.device_type):
        raise CommandError(f"--device: {unknown_device_error(request.device_type)}", usage=usage)


def _message(text: object) -> str:
    """Library text as the command line shows it: safe, short words, CLI spelling."""
    return cli_spelling(shorten(clean(text)))


def _show_warning(message: Warning | str, category: type[Warning], filename: str, lineno: int,
                  file: Any = None, line: str | None = None) -> None:
    print(f"warning: {_message(message)}", file=sys.stderr)


class _Formatter(logging.Formatter):
    """``warning: ...``: log records in the command line's own style."""

    def format(self, record: logging.LogRecord) -> str:
        return f"{record.levelname.lower()}: {_message(record.getMessage())}"


def _ours_or_warning(record: logging.LogRecord) -> bool:
    """Keep records of kernel-plugins and its plugins, and warnings of anyone else (other
    libraries' info lines, such as one per HTTP request, are noise for users)."""
    name = record.name
    ours = name == "kernel_plugins" or name.startswith(("kernel_plugins.", "kernel_plugins_"))
    return ours or record.levelno >= logging.WARNING


def _drop_stdout() -> None:
    """After stdout failed (full disk, closed pipe): send further writes to the null
    device, so that exiting cannot fail on the unwritten rest again."""
    with contextlib.suppress(OSError, ValueError, AttributeError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)


@contextlib.contextmanager
def _json_stdout(as_json: bool) -> Iterator[None]:
    """With ``--json``, stdout holds exactly one JSON document: whatever else prints while
    the command runs (a kernel printing at import) goes to stderr."""
    if not as_json:
        yield
        return
    _output.json_stream = sys.stdout
    try:
        with contextlib.redirect_stdout(sys.stderr):
            yield
    finally:
        _output.json_stream = None


def _describe(e: BaseException) -> str:
    """One line for an exception the commands did not turn into a message."""
    if isinstance(e, KeyboardInterrupt):
        return EXIT_STATUS[130]
    if isinstance(e, OSError) and e.strerror:
        where = f"{e.filename}: " if e.filename else ""
        return f"{where}{e.strerror}"
    return f"{type(e).__name__}: {e} (unexpected; run with --debug for the traceback)"


def _fail(e: BaseException, status: int, *, as_json: bool, debug: bool, usage: str | None = None,
          printed_before: int | None = None) -> int:
    """Report ``e``; with ``--json`` as the JSON document unless the command printed one."""
    known = isinstance(e, KernelPluginsError | CommandError | _output.OutputError)
    message = _message(str(e) if known else _describe(e))
    if debug:
        traceback.print_exc()
    if as_json and printed_before in (None, _output.json_documents):
        print_json({"error": {"type": type(e).__name__, "message": message, "exit_status": status}})
    else:
        if usage:
            sys.stderr.write(usage)
        print(f"error: {message}", file=sys.stderr)
    return status


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status (see :data:`EXIT_STATUS`)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    as_json = "--json" in argv
    parser = build_parser()
    if not argv:
        parser.print_help()
        return 0
    try:
        args = parser.parse_args(argv)
    except CommandError as e:
        return _fail(e, 2, as_json=as_json, debug=False, usage=e.usage)
    if args.command is None:
        return _fail(CommandError("no command given"), 2, as_json=as_json, debug=False,
                     usage=parser.format_usage())
    if args.json_first:  # kernel-plugins --json COMMAND: the command's own --json
        if not hasattr(args, "json"):
            return _fail(CommandError(f"{args.command} has no --json output"), 2, as_json=False, debug=False,
                         usage=args._parser.format_usage())
        args.json = True
    debug = bool(getattr(args, "debug", False))
    handler = logging.StreamHandler()
    handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s") if debug
                         else _Formatter())
    level = logging.DEBUG if debug else logging.INFO if args.verbose else logging.WARNING
    logging.basicConfig(level=level, handlers=[handler])
    if not debug:
        handler.addFilter(_ours_or_warning)
    previous_showwarning = warnings.showwarning
    warnings.showwarning = _show_warning
    before = _output.json_documents
    try:
        with _json_stdout(as_json):
            _emulate_if_asked(args)
            _check_device(args)
            status = int(args._run(args) or 0)
        _output.flush_stdout()
        return status
    except CommandError as e:
        return _fail(e, 2, as_json=as_json, debug=debug, usage=e.usage, printed_before=before)
    except KernelPluginsError as e:
        return _fail(e, 1, as_json=as_json, debug=debug, printed_before=before)
    except BrokenPipeError:  # output piped into head & co.
        _drop_stdout()
        return 0
    except _output.OutputError as e:  # stdout cannot be written (a full disk)
        _drop_stdout()
        return _fail(e, 1, as_json=False, debug=debug)
    except KeyboardInterrupt as e:
        return _fail(e, 130, as_json=as_json, debug=debug, printed_before=before)
    except Exception as e:  # noqa: BLE001 - no traceback without --debug, whatever failed
        return _fail(e, 1, as_json=as_json, debug=debug, printed_before=before)
    finally:
        warnings.showwarning = previous_showwarning


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
