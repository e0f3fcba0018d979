"""Per-file digests of a build variant (the ``digest`` key of ``metadata.json``).

A kernel builder records, in a variant's ``metadata.json``, the hash of every file of
the variant::

    "digest": {"algorithm": "sha256", "files": {"__init__.py": "<base64>", ...}}

This module computes such a digest for a variant folder and compares one against the
files on disk. It is small and has no other job, so that every place that needs it
(``kernel-plugins check``, lock files, verification before loading) hashes the same
files the same way.

Which files are hashed: every regular file below the variant folder, with paths
relative to it in POSIX form, except

- the top-level ``metadata.json`` and ``metadata.json.sigstore`` (the digest lives in
  the first; the second signs it),
- anything inside a ``__pycache__`` folder, and any ``*.pyc`` file (Python writes these
  when the kernel is imported).

Links to files are followed (the Hugging Face cache stores a snapshot's files as links
to blobs); links to folders are not descended into. Hashes are standard base64
(``base64.b64encode``) of the raw digest bytes; URL-safe and unpadded base64 are
accepted when comparing.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Literal

from .errors import IntegrityError

__all__ = [
    "ALGORITHMS",
    "EXCLUDED_TOP_LEVEL",
    "DigestMismatch",
    "digest_file_paths",
    "hash_file",
    "compute_digest",
    "check_digest",
    "verify_digest",
]

#: Hash algorithms a ``digest`` may name.
ALGORITHMS: tuple[str, ...] = ("sha256", "sha512")
#: Files directly in the variant folder that are never hashed.
EXCLUDED_TOP_LEVEL: frozenset[str] = frozenset({"metadata.json", "metadata.json.sigstore"})

_CHUNK = 1 << 20

MismatchKind = Literal["missing", "changed", "unexpected", "malformed"]


@dataclass(frozen=True)
class DigestMismatch:
    """One difference between a recorded digest and the files on disk.

    Attributes:
        path: the file's path relative to the variant folder (POSIX), as recorded or found.
        kind: ``missing`` (recorded, not on disk), ``changed`` (content differs),
            ``unexpected`` (on disk, not recorded) or ``malformed`` (the recorded entry is
            unusable: a path escaping the folder, a hash that is not base64 of the right
            length, or an unknown algorithm).
        expected: the recorded hash (base64), or None.
        actual: the hash of the file on disk (base64), or None.
        detail: what was wrong for ``malformed`` entries, else "".
    """

    path: str
    kind: MismatchKind
    expected: str | None = None
    actual: str | None = None
    detail: str = ""

    def describe(self) -> str:
        """One line for humans, e.g. ``_ops.py: content changed (sha256 ... != ...)``."""
        if self.kind == "missing":
            return f"{self.path}: listed in the digest but missing from the variant folder"
        if self.kind == "unexpected":
            return f"{self.path}: present in the variant folder but not listed in the digest"
        if self.kind == "changed":
            return (
                f"{self.path}: content does not match the digest (recorded {self.expected}, "
                f"file hashes to {self.actual})"
            )
        return f"{self.path}: unusable digest entry: {self.detail}"


def _excluded(rel: PurePosixPath) -> bool:
    if len(rel.parts) == 1 and rel.name in EXCLUDED_TOP_LEVEL:
        return True
    return "__pycache__" in rel.parts or rel.name.endswith(".pyc")


def digest_file_paths(variant_dir: Path) -> list[str]:
    """The relative POSIX paths of the files a digest covers, sorted.

    :raises IntegrityError: ``variant_dir`` is not a folder.
    """
    root = Path(variant_dir)
    if not root.is_dir():
        raise IntegrityError(f"{root} is not a folder; cannot compute a digest of it")
    found: list[str] = []
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        dirnames[:] = [d for d in dirnames if d != "__pycache__"]
        base = Path(dirpath)
        for name in filenames:
            full = base / name
            rel = PurePosixPath(full.relative_to(root).as_posix())
            if _excluded(rel) or not full.is_file():
                continue
            found.append(str(rel))
    return sorted(found)


def _check_algorithm(algorithm: str) -> None:
    if algorithm not in ALGORITHMS:
        raise IntegrityError(
            f"unsupported digest algorithm {algorithm!r}; use one of {', '.join(ALGORITHMS)}"
        )


def hash_file(path: Path, algorithm: str = "sha256") -> str:
    """The base64 digest of one file's content.

    :raises IntegrityError: unknown algorithm.
    """
    _check_algorithm(algorithm)
    h = hashlib.new(algorithm)
    with open(path, "rb") as f:
        while chunk := f.read(_CHUNK):
            h.update(chunk)
    return base64.b64encode(h.digest()).decode("ascii")


def compute_digest(variant_dir: Path, algorithm: str = "sha256") -> dict[str, str]:
    """Hash every covered file of a variant: relative POSIX path -> base64 digest.

    :param variant_dir: the ``build/<variant>`` folder.
    :param algorithm: ``sha256`` or ``sha512``.
    :raises IntegrityError: unknown algorithm or not a folder.
    """
    _check_algorithm(algorithm)
    root = Path(variant_dir)
    return {rel: hash_file(root / rel, algorithm) for rel in digest_file_paths(root)}


def _decode_b64(value: object) -> bytes | None:
    """Decode standard or URL-safe base64, padded or not; None when it is not base64."""
    if not isinstance(value, str) or not value.isascii():
        return None
    text = value.strip()
    padded = text + "=" * (-len(text) % 4)
    for altchars in (None, b"-_"):
        try:
            return base64.b64decode(padded, altchars=altchars, validate=True)
        except (binascii.Error, ValueError):
            continue
    return None


def _safe_relpath(path: object) -> str | None:
    """``path`` normalised to POSIX when it stays inside the folder, else None."""
    if not isinstance(path, str) or not path or "\\" in path or "\x00" in path:
        return None
    p = PurePosixPath(path)
    if p.is_absolute() or any(part in ("..", "") for part in path.split("/")):
        return None
    return str(p)


def _unpack(digest: object) -> tuple[object, object]:
    if isinstance(digest, Mapping):
        return digest.get("algorithm"), digest.get("files")
    return getattr(digest, "algorithm", None), getattr(digest, "files", None)


def check_digest(variant_dir: Path, digest: object) -> list[DigestMismatch]:
    """Compare a recorded digest with the files of ``variant_dir``.

    :param variant_dir: the ``build/<variant>`` folder.
    :param digest: the metadata ``digest`` (a :class:`~kernel_plugins.metadata.Digest` or a
        mapping with ``algorithm`` and ``files``).
    :return: every difference, sorted by path (empty when the files match): each recorded
        file that is missing or changed, each file on disk that is not recorded, and each
        recorded entry that is unusable. Recorded paths that would leave the folder are
        reported as ``malformed`` and never read.
    :raises IntegrityError: ``variant_dir`` is not a folder.
    """
    root = Path(variant_dir)
    on_disk = set(digest_file_paths(root))
    algorithm, files = _unpack(digest)
    if not isinstance(algorithm, str) or algorithm not in ALGORITHMS:
        return [
            DigestMismatch(
                "(digest)", "malformed",
                detail=f"algorithm {algorithm!r} is not one of {', '.join(ALGORITHMS)}",
            )
        ]
    if not isinstance(files, Mapping):
        return [DigestMismatch("(digest)", "malformed", detail="'files' is not a mapping")]
    size = hashlib.new(algorithm).digest_size
    out: list[DigestMismatch] = []
    seen: set[str] = set()
    for raw_path, expected in files.items():
        rel = _safe_relpath(raw_path)
        shown = str(raw_path)
        if rel is None:
            out.append(DigestMismatch(shown, "malformed", detail="path is not a plain relative "
                                      "path inside the variant folder"))
            continue
        seen.add(rel)
        raw = _decode_b64(expected)
        if raw is None or len(raw) != size:
            out.append(DigestMismatch(rel, "malformed", expected=str(expected), detail=(
                f"hash is not base64 of a {algorithm} digest ({size} bytes)")))
            continue
        if _excluded(PurePosixPath(rel)):
            continue
        if rel not in on_disk:
            out.append(DigestMismatch(rel, "missing", expected=str(expected)))
            continue
        actual = hash_file(root / rel, algorithm)
        if base64.b64decode(actual) != raw:
            out.append(DigestMismatch(rel, "changed", expected=str(expected), actual=actual))
    out += [DigestMismatch(rel, "unexpected") for rel in sorted(on_disk - seen)]
    return sorted(out, key=lambda m: (m.path, m.kind))


def verify_digest(variant_dir: Path, digest: object, *, where: str | None = None) -> None:
    """Raise :class:`IntegrityError` listing every mismatch, or return when the files match.

    :param where: how to name the variant in the message (default: the folder path).
    """
    mismatches = check_digest(variant_dir, digest)
    if mismatches:
        label = where or str(variant_dir)
        listed = "; ".join(m.describe() for m in mismatches[:20])
        more = f" (and {len(mismatches) - 20} more)" if len(mismatches) > 20 else ""
        raise IntegrityError(
            f"{label}: files do not match the metadata digest: {listed}{more}. The download "
            "may be incomplete or the files were modified: delete the folder and fetch it "
            "again, or rebuild the kernel."
        )
