"""``did you mean ...?``: the closest known name to a typo."""

from __future__ import annotations

import difflib
from collections.abc import Iterable

__all__ = ["closest", "did_you_mean"]


def closest(word: str, candidates: Iterable[str], cutoff: float = 0.6) -> str | None:
    """The candidate closest to ``word`` (difflib ratio >= ``cutoff``), or None.

    >>> closest("mlux", ["cpu", "cuda", "mlu"])
    'mlu'
    """
    matches = difflib.get_close_matches(word, sorted(set(candidates)), n=1, cutoff=cutoff)
    return matches[0] if matches else None


def did_you_mean(word: str, candidates: Iterable[str]) -> str:
    """``" did you mean 'mlu'?"`` (with a leading space), or ``""`` when nothing is close."""
    match = closest(word, candidates)
    return f" did you mean {match!r}?" if match else ""
