"""Argument types of the command line: bounded numbers and path-like text.

Each raises :class:`argparse.ArgumentTypeError` with a message that names the allowed
range or the problem, so that a bad value is a usage error (exit status 2), never a
traceback.
"""

from __future__ import annotations

import argparse
import math
import os
from collections.abc import Callable
from typing import Any

__all__ = ["bounded", "path_text"]

#: Longest path and path component accepted (Linux's PATH_MAX and NAME_MAX).
MAX_PATH = 4096
MAX_NAME = 255


def bounded(low: float, high: float, *, whole: bool = False) -> Callable[[str], Any]:
    """A finite number ``low <= x <= high`` (``nan``, ``inf`` and ``1e308`` are refused).

    :param whole: accept whole numbers only (returned as ``int``).
    """
    kind = "whole number" if whole else "number"

    def parse(text: str) -> float | int:
        try:
            value: float | int = int(text) if whole else float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a {kind}") from None
        if not math.isfinite(value) or not low <= value <= high:
            span = f"{int(low)} to {int(high)}" if whole else f"{low:g} to {high:g}"
            raise argparse.ArgumentTypeError(f"{text!r} is out of range: give a {kind} from {span}")
        return value

    parse.__name__ = kind  # argparse names the type in its messages
    return parse


def path_text(text: str) -> str:
    """A local path or a repository id: length and ``~user`` checked, ``~`` expanded."""
    if "\0" in text:
        raise argparse.ArgumentTypeError("a path cannot contain a NUL character")
    if len(text) > MAX_PATH:
        raise argparse.ArgumentTypeError(f"the path is {len(text)} characters long; at most {MAX_PATH} are allowed")
    longest = max(text.split("/"), key=len)
    if len(longest) > MAX_NAME:
        raise argparse.ArgumentTypeError(f"a path component is {len(longest)} characters long ({longest[:40]}...); "
                                         f"at most {MAX_NAME} are allowed")
    if text.startswith("~"):
        expanded = os.path.expanduser(text)
        if expanded == text:
            user = text[1:].split("/", 1)[0]
            why = f"no user {user!r} on this system" if user else "no home directory is set"
            raise argparse.ArgumentTypeError(f"cannot expand {'~' + user!r}: {why}; write the path without ~")
        return expanded
    return text
