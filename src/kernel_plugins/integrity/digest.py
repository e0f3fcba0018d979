"""Per-file digests of a build variant (the ``digest`` key of ``metadata.json``).

A kernel builder records, in a variant's ``metadata.json``, the hash of every file of
the variant::

    "digest": {"algorithm": "sha256", "files": {"__init__.py": "<base64>", ...}}

Which files are covered: every file the walker lists (see ``_walk``: links must stay in
the variant, bytecode never counts), with paths relative to the variant folder in POSIX
form, except the top-level ``metadata.json`` and ``metadata.json.sigstore`` (the digest
lives in the first; the second signs it). Hashes are standard base64 of the raw digest
bytes; URL-safe and unpadded base64 are accepted when comparing.

The functions take a variant folder or an already-read
:class:`~kernel_plugins.integrity.snapshot.VariantSnapshot`, so a load checks the very
bytes it is about to import.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Literal

from ..errors import IntegrityError
from ._hash import Hasher
from ._walk import is_bytecode
from .snapshot import VariantSnapshot, read_variant

__all__ = [
    "DIGEST_ALGORITHMS",
    "EXCLUDED_TOP_LEVEL",
    "DigestMismatch",
    "digest_file_paths",
    "hash_file",
    "compute_digest",
    "check_digest",
    "verify_digest",
]

#: Hash algorithms a ``digest`` may name.
DIGEST_ALGORITHMS: tuple[str, ...] = ("sha256", "sha512")
#: Files directly in the variant folder that are never hashed.
EXCLUDED_TOP_LEVEL: frozenset[str] = frozenset({"metadata.json", "metadata.json.sigstore"})

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


def _covered(rel: str) -> bool:
    return not (rel in EXCLUDED_TOP_LEVEL or is_bytecode(rel))


def _check_algorithm(algorithm: object) -> str:
    if algorithm not in DIGEST_ALGORITHMS:
        raise IntegrityError(
            f"unsupported digest algorithm {algorithm!r}; use one of {', '.join(DIGEST_ALGORITHMS)}"
        )
    return str(algorithm)


def _snapshot(
    variant: Path | VariantSnapshot, algorithm: str, link_roots: Sequence[Path] = ()
) -> VariantSnapshot:
    if isinstance(variant, VariantSnapshot):
        if any(algorithm not in f.hashes for f in variant.files.values()):
            raise IntegrityError(f"{variant.root} was read without {algorithm} hashes")
        return variant
    root = Path(variant)
    if not root.is_dir():
        raise IntegrityError(f"{root} is not a folder; cannot compute a digest of it")
    return read_variant(root, algorithms=(algorithm,), link_roots=link_roots)


def _b64(hex_digest: str) -> str:
    return base64.b64encode(bytes.fromhex(hex_digest)).decode("ascii")


def digest_file_paths(variant: Path | VariantSnapshot) -> list[str]:
    """The relative POSIX paths of the files a digest covers, sorted.

    :raises IntegrityError: not a folder, or a file or link is refused.
    """
    return sorted(rel for rel in _snapshot(variant, "sha256").files if _covered(rel))


def hash_file(path: Path, algorithm: str = "sha256") -> str:
    """The base64 digest of one file's content.

    :raises IntegrityError: unknown algorithm.
    """
    algorithm = _check_algorithm(algorithm)
    with open(path, "rb") as f:
        h = Hasher(os.fstat(f.fileno()).st_size, (algorithm,))
        while chunk := f.read(1 << 20):
            h.update(chunk)
    return _b64(h.hexdigests()[algorithm])


def compute_digest(
    variant: Path | VariantSnapshot, algorithm: str = "sha256", *, link_roots: Sequence[Path] = ()
) -> dict[str, str]:
    """Hash every covered file of a variant: relative POSIX path -> base64 digest.

    :param variant: the ``build/<variant>`` folder, or a snapshot read with ``algorithm``.
    :param algorithm: ``sha256`` or ``sha512``.
    :param link_roots: folders besides the variant that its links may lead into.
    :raises IntegrityError: unknown algorithm, not a folder, or a refused file.
    """
    algorithm = _check_algorithm(algorithm)
    snap = _snapshot(variant, algorithm, link_roots)
    return {rel: _b64(f.hashes[algorithm]) for rel, f in sorted(snap.files.items()) if _covered(rel)}


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


def digest_algorithm(digest: object) -> str | None:
    """The algorithm a digest names, when it is one this module computes."""
    algorithm, _ = _unpack(digest)
    return algorithm if algorithm in DIGEST_ALGORITHMS else None  # type: ignore[return-value]


def check_digest(
    variant: Path | VariantSnapshot, digest: object, *, link_roots: Sequence[Path] = ()
) -> list[DigestMismatch]:
    """Compare a recorded digest with the files of a variant.

    :param variant: the ``build/<variant>`` folder, or a snapshot of it that holds the
        digest's algorithm among its hashes.
    :param digest: the metadata ``digest`` (a :class:`~kernel_plugins.metadata.Digest` or a
        mapping with ``algorithm`` and ``files``).
    :return: every difference, sorted by path (empty when the files match): each recorded
        file that is missing or changed, each file on disk that is not recorded, and each
        recorded entry that is unusable. Recorded paths that would leave the folder are
        reported as ``malformed`` and never read.
    :raises IntegrityError: not a folder, or a file or link is refused.
    """
    algorithm, files = _unpack(digest)
    if not isinstance(algorithm, str) or algorithm not in DIGEST_ALGORITHMS:
        return [
            DigestMismatch(
                "(digest)", "malformed",
                detail=f"algorithm {algorithm!r} is not one of {', '.join(DIGEST_ALGORITHMS)}",
            )
        ]
    if not isinstance(files, Mapping):
        return [DigestMismatch("(digest)", "malformed", detail="'files' is not a mapping")]
    snap = _snapshot(variant, algorithm, link_roots)
    on_disk = {rel: f for rel, f in snap.files.items() if _covered(rel)}
    size = hashlib.new(algorithm).digest_size
    out: list[DigestMismatch] = []
    seen: set[str] = set()
    for raw_path, expected in files.items():
        rel = _safe_relpath(raw_path)
        if rel is None:
            out.append(DigestMismatch(str(raw_path), "malformed", detail="path is not a plain "
                                      "relative path inside the variant folder"))
            continue
        seen.add(rel)
        raw = _decode_b64(expected)
        if raw is None or len(raw) != size:
            out.append(DigestMismatch(rel, "malformed", expected=str(expected), detail=(
                f"hash is not base64 of a {algorithm} digest ({size} bytes)")))
            continue
        if not _covered(rel):
            continue
        found = on_disk.get(rel)
        if found is None:
            out.append(DigestMismatch(rel, "missing", expected=str(expected)))
            continue
        if found.hashes[algorithm] != raw.hex():
            out.append(DigestMismatch(rel, "changed", expected=str(expected),
                                      actual=_b64(found.hashes[algorithm])))
    out += [DigestMismatch(rel, "unexpected") for rel in sorted(set(on_disk) - seen)]
    return sorted(out, key=lambda m: (m.path, m.kind))


def verify_digest(
    variant: Path | VariantSnapshot, digest: object, *, where: str | None = None
) -> None:
    """Raise :class:`IntegrityError` listing every mismatch, or return when the files match.

    :param where: how to name the variant in the message (default: the folder path).
    """
    mismatches = check_digest(variant, digest)
    if mismatches:
        root = variant.root if isinstance(variant, VariantSnapshot) else variant
        label = where or str(root)
        listed = "; ".join(m.describe() for m in mismatches[:20])
        more = f" (and {len(mismatches) - 20} more)" if len(mismatches) > 20 else ""
        raise IntegrityError(
            f"{label}: files do not match the metadata digest: {listed}{more}. The download "
            "may be incomplete or the files were modified: delete the folder and fetch it "
            "again, or rebuild the kernel."
        )
