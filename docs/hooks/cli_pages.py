"""MkDocs hook: one page per ``kernel-plugins`` command, generated from the argument parser.

The pages are built from :func:`kernel_plugins.cli.main.build_parser` at every build, so
they cannot drift from the command line: a new option appears on its page by itself. The
command index ``cli/index.md`` is generated too and lists every command.
"""

from __future__ import annotations

import argparse
import os

from mkdocs.structure.files import File, Files

COLUMNS = "100"


def _subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:  # argparse keeps subparsers only here
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def _page(name: str, parser: argparse.ArgumentParser) -> str:
    return (
        f"# kernel-plugins {name}\n\n{parser.description or ''}\n\n"
        f"```text\n{parser.format_help().rstrip()}\n```\n\n"
        "Global options (`--debug`, `--verbose`, `--emulate NAME`) go before or after the "
        "command. Exit status and error formats: [Errors](../errors.md).\n"
    )


def _index(top: argparse.ArgumentParser, commands: dict[str, argparse.ArgumentParser]) -> str:
    rows = "\n".join(
        f"| [`{name}`]({name}.md) | {(sub.description or '').strip()} |"
        for name, sub in commands.items()
    )
    return (
        "# Command line\n\n`kernel-plugins` alone prints this help; every command has a page, "
        "generated from the program's own argument parser.\n\n"
        f"```text\n{top.format_help().rstrip()}\n```\n\n| command | what it does |\n|---|---|\n"
        f"{rows}\n"
    )


def _parsers() -> tuple[argparse.ArgumentParser, dict[str, argparse.ArgumentParser]]:
    os.environ["COLUMNS"] = COLUMNS  # argparse wraps help at the terminal width
    from kernel_plugins.cli.main import build_parser

    top = build_parser()
    return top, _subcommands(top)


def on_config(config):  # noqa: ANN001, ANN201 - mkdocs' hook signature
    """List every command page under the nav entry that names ``cli/index.md``."""
    _, commands = _parsers()
    pages = ["cli/index.md", *({name: f"cli/{name}.md"} for name in commands)]
    for i, entry in enumerate(config["nav"] or []):
        if isinstance(entry, dict) and list(entry.values()) == ["cli/index.md"]:
            config["nav"][i] = {next(iter(entry)): pages}
    return config


def on_files(files: Files, config) -> Files:  # noqa: ANN001 - mkdocs' hook signature
    """Add ``cli/index.md`` and ``cli/<command>.md`` to the site."""
    top, commands = _parsers()
    files.append(File.generated(config, "cli/index.md", content=_index(top, commands)))
    for name, sub in commands.items():
        files.append(File.generated(config, f"cli/{name}.md", content=_page(name, sub)))
    return files
