"""Every JSON input read from disk goes through :func:`read_json` or :func:`parse_json`: size
capped before parsing, nesting refused cleanly, the same clear error everywhere. A file that
decides what is trusted is read with ``follow=False`` and :func:`written_by_others`.
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
import tempfile
from collections import Counter
from collections.abc import Callable
from pathlib import Path

__all__ = ["JSONFileError", "read_json", "parse_json", "read_regular_file", "write_atomic", "written_by_others"]

#: O_NONBLOCK: opening a FIFO or a device named like our file must not wait for a writer.
OPEN_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOCTTY", 0)


class JSONFileError(ValueError):
    """A JSON input is too large, not UTF-8, malformed or nested too deeply (callers wrap it into
    their own error type with the fix that applies)."""


def parse_json(data: bytes, *, where: str, max_bytes: int) -> object:
    """Decode ``data`` (UTF-8 JSON, named ``where`` in messages) unless larger than ``max_bytes``.
    :raises JSONFileError: too large, not UTF-8, malformed, nested too deeply, or a key twice in an object."""
    if len(data) > max_bytes:
        raise JSONFileError(f"{where}: larger than the {max_bytes} allowed")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise JSONFileError(f"{where}: not UTF-8 text ({e})") from None
    try:
        return json.loads(text, object_pairs_hook=_unique)
    except json.JSONDecodeError as e:
        raise JSONFileError(f"{where}: malformed JSON at line {e.lineno} column {e.colno}: {e.msg}") from None
    except RecursionError:
        raise JSONFileError(f"{where}: malformed JSON: values are nested too deeply") from None
    except ValueError as e:  # a key twice in one object (kernels refuses that too), a number too long
        raise JSONFileError(f"{where}: malformed JSON: {e}") from None


def _unique(pairs: list[tuple[str, object]]) -> dict[str, object]:
    if len(obj := dict(pairs)) < len(pairs):
        raise ValueError(f"key {Counter(k for k, _ in pairs).most_common(1)[0][0]!r} appears twice in one object")
    return obj


def read_regular_file(path: str | os.PathLike[str], *, max_bytes: int, follow: bool = True,
                      check: Callable[[os.stat_result], None] | None = None) -> bytes:
    """The bytes of the regular file ``path``, refusing anything else (a FIFO, a device, a
    folder) before reading it, and a file larger than ``max_bytes``. Without ``follow`` a
    link is refused (``OSError`` ELOOP); ``check`` may refuse the descriptor's status.

    :raises OSError: the file cannot be opened or read (callers decide what that means).
    :raises JSONFileError: not a regular file, or too large.
    """
    p = Path(path)
    fd = os.open(p, OPEN_FLAGS | (0 if follow else getattr(os, "O_NOFOLLOW", 0)))
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise JSONFileError(f"{p}: not a regular file; refusing to read it")
        if check is not None:
            check(st)
        if st.st_size > max_bytes:
            raise JSONFileError(f"{p}: {st.st_size} bytes, larger than the {max_bytes} allowed")
        return read_capped(fd, max_bytes)
    finally:
        os.close(fd)


def written_by_others(st: os.stat_result) -> str | None:
    """Why a file with status ``st`` could have been written by someone else (another user's,
    root excepted, or writable by group or others), else None: the rule for every file that
    decides what is trusted (a lock file nobody named, a sigstore trust root)."""
    if hasattr(os, "getuid") and st.st_uid not in (os.getuid(), 0):
        return f"it is owned by user id {st.st_uid}, not by you ({os.getuid()}) or root"
    return f"group or others may write it (mode {stat.filemode(st.st_mode)})" if st.st_mode & 0o022 else None


def read_capped(fd: int, max_bytes: int) -> bytes:
    """At most ``max_bytes + 1`` bytes of an open file, so a caller can tell an oversized
    file by the length of what it got without reading the rest."""
    chunks: list[bytes] = []
    left = max_bytes + 1
    while left > 0 and (chunk := os.read(fd, min(left, 1 << 20))):
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def read_json(path: str | os.PathLike[str], *, max_bytes: int) -> object:
    """Read and decode a JSON file (:func:`read_regular_file`, then :func:`parse_json`).
    :raises OSError: the file cannot be opened or read. :raises JSONFileError: as those two."""
    return parse_json(read_regular_file(path, max_bytes=max_bytes), where=str(path), max_bytes=max_bytes)


def write_atomic(path: Path, text: str, *, mode: int | None = None, fsync: bool = False) -> None:
    """Write ``text`` to a temporary file beside ``path`` (``fsync``: flushed to disk), give it ``mode``,
    rename it over ``path``: readers never see part of it. :raises OSError: not written (nor left)."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            if fsync:
                f.flush()
                os.fsync(f.fileno())
        if mode is not None:
            os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
