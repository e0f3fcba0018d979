"""Output helpers shared by the commands: safe text, JSON, tables that fit a terminal."""

from __future__ import annotations

import json
import re
import sys
import textwrap
import unicodedata
from collections.abc import Sequence
from typing import Any, TextIO

__all__ = ["CommandError", "DEFAULT_WIDTH", "OutputError", "VariantRows", "cli_spelling", "clean",
           "flush_stdout", "print_json", "print_table", "shorten"]

#: Columns the default (not ``--wide``) output fits in.
DEFAULT_WIDTH = 100

# ANSI escape sequences (CSI ... final byte, OSC ... BEL/ST, two-byte ESC x), then any
# other C0/C1 control character.
_ESCAPE_RE = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)?|[@-Z\\-_])")
_CONTROL_RE = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
_LONG_WORD_RE = re.compile(r"\S{201,}")

#: Python spellings in library messages -> the command line's spelling.
_CLI_SPELLINGS: list[tuple[re.Pattern[str], str]] = [
    (re.compile(r"""fallback=["']error["']"""), "--no-fallback"),
    (re.compile(r"\bversion=(\d+)"), r"--version \1"),
    (re.compile(r"""\brevision=["']?([^\s"',)]+)["']?"""), r"--revision \1"),
    (re.compile(r"\btrust_remote_code=True\b"), "--trust-remote-code"),
]


class CommandError(Exception):
    """A command-line usage problem (printed without a traceback, exit status 2).

    Attributes:
        usage: the usage line of the command, printed before the message (or None).
    """

    def __init__(self, message: str, *, usage: str | None = None) -> None:
        super().__init__(message)
        self.usage = usage


def clean(text: object, *, one_line: bool = False) -> str:
    """``text`` safe for a terminal: escape sequences removed, control characters shown.

    Plugins and kernel repositories supply names, versions and notes; none of them may
    move the cursor, recolour or retitle the terminal, or reorder the text it shows.
    Control characters other than newline and tab become ``\\xNN``, format characters
    (bidi controls such as U+202E) ``\\uXXXX``; with ``one_line`` newlines and tabs
    become spaces.

    >>> clean("ok\\x1b[31m red\\x07")
    'ok red\\\\x07'
    """
    s = _ESCAPE_RE.sub("", str(text))
    if one_line:
        s = s.replace("\r\n", " ").replace("\n", " ").replace("\t", " ")
    s = _CONTROL_RE.sub(lambda m: f"\\x{ord(m.group(0)):02x}", s)
    if s.isascii():
        return s
    # format characters (Unicode category Cf: bidi overrides and isolates, zero-width
    # characters) reorder or hide what the terminal shows: show them as \uXXXX
    return "".join(f"\\u{ord(c):04x}" if unicodedata.category(c) == "Cf" else c for c in s)


def shorten(text: str) -> str:
    """Words longer than 200 characters (a 5,000-character path) cut in the middle."""
    return _LONG_WORD_RE.sub(lambda m: f"{m.group(0)[:80]}...({len(m.group(0))} characters)...{m.group(0)[-40:]}",
                             text)


def cli_spelling(text: str) -> str:
    """Advice written for the Python API in command-line spelling.

    >>> cli_spelling("pass fallback='error' or version=1")
    'pass --no-fallback or --version 1'
    """
    for pattern, repl in _CLI_SPELLINGS:
        text = pattern.sub(repl, text)
    return text


#: JSON documents printed on stdout by this process (``main`` prints an error document
#: only while none was: stdout holds exactly one JSON document).
json_documents = 0
#: Where :func:`print_json` writes while ``main`` sends other output to stderr (``--json``).
json_stream: TextIO | None = None


class OutputError(OSError):
    """stdout cannot be written (a full disk); reported as one ``error:`` line, exit 1."""

    def __str__(self) -> str:
        return f"cannot write the output to stdout: {self.strerror}"


def flush_stdout(stream: TextIO | None = None, text: str = "") -> None:
    """Write ``text`` to stdout (or ``stream``) and flush it now, so that a write error is an
    :class:`OutputError` here rather than a traceback at exit. A closed pipe stays a
    BrokenPipeError."""
    out = stream or sys.stdout
    try:
        out.write(text)
        out.flush()
    except BrokenPipeError:
        raise
    except OSError as e:
        raise OutputError(e.errno, e.strerror or str(e)) from e


def print_json(data: Any) -> None:
    """Print ``data`` as indented JSON on stdout (control characters are escaped)."""
    global json_documents
    flush_stdout(json_stream, json.dumps(data, indent=2, sort_keys=False, default=str) + "\n")
    json_documents += 1


def _fit(widths: list[int], limit: int, sep: int, whole: Sequence[int] = ()) -> list[int]:
    """Column widths that fit ``limit``: the widest columns give way first (min 8); the
    columns in ``whole`` only when cutting the others was not enough."""
    widths = list(widths)
    others = [i for i in range(len(widths)) if i not in whole]
    for movable in (others, list(range(len(widths)))):
        while movable and sum(widths) + sep * (len(widths) - 1) > limit:
            widest = max(movable, key=lambda i: widths[i])
            if widths[widest] <= 8:
                break
            widths[widest] -= 1
    return widths


def print_table(headers: Sequence[str], rows: Sequence[Sequence[Any]], *,
                width: int | None = DEFAULT_WIDTH, wrap_last: bool = False,
                whole: Sequence[int] = ()) -> None:
    """Print a left-aligned plain-text table of cleaned cells.

    :param width: the most columns a line may take; cells of the widest columns are cut
        with ``...`` to fit. None prints every cell whole (``--wide``).
    :param wrap_last: wrap the last column onto continuation lines instead of cutting it
        (for reasons, which must be read whole).
    :param whole: indices of columns cut last (names and versions).
    """
    cells = [[clean("" if c is None else c, one_line=True) for c in row] for row in rows]
    natural = [max(map(len, column)) for column in zip(headers, *cells, strict=True)]
    widths = natural if width is None else _fit(natural, width, 2, whole)
    if width is not None and wrap_last:
        widths = _fit(natural[:-1], width - 2 - 30, 2, whole) if len(natural) > 1 else []
        widths.append(max(min(natural[-1], width - sum(widths) - 2 * len(widths)), 10))

    def cut(text: str, w: int) -> str:
        return text if len(text) <= w else text[: max(w - 3, 0)] + "..."

    def lines(values: Sequence[str]) -> list[str]:
        first = [cut(v, widths[i]) for i, v in enumerate(values)]
        more: list[str] = []
        if width is not None and wrap_last and len(values[-1]) > widths[-1]:
            first[-1], *more = textwrap.wrap(values[-1], widths[-1]) or [""]
        indent = " " * (sum(widths[:-1]) + 2 * (len(widths) - 1))
        out = ["  ".join(v.ljust(widths[i]) for i, v in enumerate(first)).rstrip()]
        return out + [indent + m for m in more]

    print(lines(list(headers))[0])
    print("  ".join("-" * w for w in widths))
    for row in cells:
        for line in lines(row):
            print(line)


class VariantRows:
    """One outcome per kernel variant (``verify``, ``download``).

    Each row is printed at once as ``<repo> <variant>: <outcome>``, or, with ``--json``,
    collected and printed by :meth:`finish` as ``{"target", "checked", "failed", "variants"}``.
    """

    def __init__(self, as_json: bool, *, allow_missing: bool = True) -> None:
        self.as_json = as_json
        self.allow_missing = allow_missing
        self.rows: list[dict[str, str]] = []

    def add(self, repo_id: str, variant: str, status: str, detail: str, **extra: str) -> None:
        """Record a row; ``status`` is ``ok``, ``failed`` or ``skipped``; ``extra``: more fields."""
        self.rows.append({"repo_id": repo_id, "variant": variant, "status": status,
                          "detail": detail, **extra})
        if not self.as_json:
            shown = {"skipped": f"{detail} (skipped)", "failed": f"FAILED: {detail}"}
            print(clean(f"{repo_id} {variant}: {shown.get(status, detail)}"))

    def finish(self, where: str) -> int:
        """Print the summary (or the JSON document); exit status 1 when any row failed, or
        (unless ``allow_missing``) when a repository had no variant checked at all."""
        checked = sum(r["status"] != "skipped" for r in self.rows)
        failed = sum(r["status"] == "failed" for r in self.rows)
        done = {r["repo_id"] for r in self.rows if r["status"] != "skipped"}
        missing = [] if self.allow_missing else [*dict.fromkeys(r["repo_id"] for r in self.rows if r["repo_id"] not in done)]
        if self.as_json:
            print_json({"target": where, "checked": checked, "failed": failed, "unchecked": missing,
                        "variants": self.rows})
        else:
            print(clean(f"{where}: {checked} checked, {failed} failed"))
        if missing:
            print(clean(f"error: nothing was checked for {', '.join(missing)}: no variant is downloaded. "
                        "Run `kernel-plugins download` first (for a project: `kernel-plugins download "
                        "PROJECT`), or pass --allow-missing to accept it"), file=sys.stderr)
        return 1 if failed or missing else 0
