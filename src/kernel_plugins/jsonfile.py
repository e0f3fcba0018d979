"""Read a JSON file with its size capped before parsing and nesting refused cleanly.

Every JSON input kernel-plugins reads from disk (``metadata.json``, ``kernels.lock``,
huggingface_hub's cached file listings, the records of verified variants) goes through
:func:`read_json` or :func:`parse_json`, so a huge or deeply nested file gets the same
clear error everywhere instead of a ``MemoryError`` or ``RecursionError``.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

__all__ = ["JSONFileError", "read_json", "parse_json"]


class JSONFileError(ValueError):
    """A JSON input is too large, not UTF-8, malformed or nested too deeply.

    The message names the file and what was wrong; callers wrap it into their own error
    type with the fix that applies.
    """


def parse_json(data: bytes, *, where: str, max_bytes: int) -> object:
    """Decode ``data`` (UTF-8 JSON) after checking its size.

    :param where: how to name the input in messages (usually the file path).
    :param max_bytes: inputs larger than this are refused without parsing.
    :raises JSONFileError: too large, not UTF-8, malformed, or nested too deeply.
    """
    if len(data) > max_bytes:
        raise JSONFileError(f"{where}: larger than the {max_bytes} allowed")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise JSONFileError(f"{where}: not UTF-8 text ({e})") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise JSONFileError(
            f"{where}: malformed JSON at line {e.lineno} column {e.colno}: {e.msg}"
        ) from None
    except RecursionError:
        raise JSONFileError(f"{where}: malformed JSON: values are nested too deeply") from None


def read_json(path: str | os.PathLike[str], *, max_bytes: int) -> object:
    """Read and decode a JSON file, refusing one larger than ``max_bytes`` before reading it.

    :raises OSError: the file cannot be opened or read (callers decide what that means).
    :raises JSONFileError: see :func:`parse_json`.
    """
    p = Path(path)
    with open(p, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        if size > max_bytes:
            raise JSONFileError(f"{p}: {size} bytes, larger than the {max_bytes} allowed")
        data = f.read(max_bytes + 1)
    return parse_json(data, where=str(p), max_bytes=max_bytes)
