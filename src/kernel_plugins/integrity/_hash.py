"""The one hasher: every hash kernel-plugins needs of a file, in a single read (lowercase hex):
``git`` (the git blob id the Hub lists for ordinary files), ``sha256`` (the LFS hash, the usual
metadata digest) and ``sha512`` (when a metadata digest names it).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from typing import Any

__all__ = ["ALGORITHMS", "Hasher", "hash_bytes", "git_blob_id"]

#: The hashes :class:`Hasher` can compute.
ALGORITHMS: tuple[str, ...] = ("git", "sha256", "sha512")


class Hasher:
    """Feed a file's content (``size`` bytes) once; read every hash of ``algorithms`` at the end."""

    def __init__(self, size: int, algorithms: Iterable[str]) -> None:
        self._h: dict[str, Any] = {}
        for name in algorithms:
            if name == "git":
                self._h[name] = hashlib.sha1(b"blob %d\0" % size)  # noqa: S324 - git object id
            elif name in ("sha256", "sha512"):
                self._h[name] = hashlib.new(name)
            else:
                raise ValueError(f"unknown hash {name!r}; known: {', '.join(ALGORITHMS)}")

    def update(self, chunk: bytes) -> None:
        """Hash the next chunk of content."""
        for h in self._h.values():
            h.update(chunk)

    def hexdigests(self) -> dict[str, str]:
        """Every requested hash, as lowercase hex."""
        return {name: h.hexdigest() for name, h in self._h.items()}


def hash_bytes(data: bytes, algorithms: Iterable[str]) -> dict[str, str]:
    """Every requested hash of ``data`` (see :class:`Hasher`)."""
    h = Hasher(len(data), algorithms)
    h.update(data)
    return h.hexdigests()


def git_blob_id(data: bytes) -> str:
    """The git blob id of ``data``: hex ``sha1(b"blob <len>\\0" + data)``."""
    return hash_bytes(data, ("git",))["git"]
