"""Per-file digests of a build variant: ``metadata.json``'s ``"digest": {"algorithm": "sha256", "files":
{"__init__.py": "<base64>", ...}}``.

It covers every file the walker lists (POSIX paths relative to the variant folder) except the top-level
:data:`EXCLUDED_TOP_LEVEL`; hashes are base64 of the raw digest (URL-safe and unpadded accepted). The functions take
a folder or an already-read ``VariantSnapshot``, so a load checks the very bytes it is about to import.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
from collections.abc import Mapping, Sequence
from pathlib import Path, PurePosixPath
from typing import Literal

from .._record import record
from ..errors import IntegrityError
from ._walk import is_bytecode
from .snapshot import VariantSnapshot, read_variant

__all__ = ["DIGEST_ALGORITHMS", "EXCLUDED_TOP_LEVEL", "DigestMismatch", "check_digest", "verify_digest"]

#: Hash algorithms a ``digest`` may name.
DIGEST_ALGORITHMS: tuple[str, ...] = ("sha256", "sha512")
#: Files directly in the variant folder that are never hashed.
EXCLUDED_TOP_LEVEL: frozenset[str] = frozenset({"metadata.json", "metadata.json.sigstore"})

MismatchKind = Literal["missing", "changed", "unexpected", "malformed"]


@record
class DigestMismatch:
    """One difference between a recorded digest and the files: the file's relative ``path``,
    ``kind`` (``missing``, ``changed``, ``unexpected`` or ``malformed``: an escaping path, a bad
    hash, an unknown algorithm, said in ``detail``), the ``expected`` and ``actual`` base64 hashes."""

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
            return (f"{self.path}: content does not match the digest (recorded {self.expected}, "
                    f"file hashes to {self.actual})")
        return f"{self.path}: unusable digest entry: {self.detail}"


def _covered(rel: str) -> bool:
    return not (rel in EXCLUDED_TOP_LEVEL or is_bytecode(rel))


def _snapshot(variant: Path | VariantSnapshot, algorithm: str, link_roots: Sequence[Path] = ()) -> VariantSnapshot:
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


def check_digest(variant: Path | VariantSnapshot, digest: object, *,
                 link_roots: Sequence[Path] = ()) -> list[DigestMismatch]:
    """Every difference (sorted by path; none: the files match) between a metadata ``digest``
    (a :class:`~kernel_plugins.metadata.Digest` or a mapping) and a variant folder or a snapshot
    holding the digest's algorithm; recorded paths that would leave the folder are never read.
    :raises IntegrityError: not a folder, or a file or link is refused."""
    algorithm, files = _unpack(digest)
    if not isinstance(algorithm, str) or algorithm not in DIGEST_ALGORITHMS:
        return [DigestMismatch("(digest)", "malformed",
                               detail=f"algorithm {algorithm!r} is not one of {', '.join(DIGEST_ALGORITHMS)}")]
    if not isinstance(files, Mapping):
        return [DigestMismatch("(digest)", "malformed", detail="'files' is not a mapping")]
    snap = _snapshot(variant, algorithm, link_roots)
    on_disk = {rel: f for rel, f in snap.files.items() if _covered(rel)}
    size = hashlib.new(algorithm).digest_size
    out: list[DigestMismatch] = []
    seen: set[str] = set()
    for raw_path, expected in files.items():
        if (rel := _safe_relpath(raw_path)) is None:
            detail = "path is not a plain relative path inside the variant folder"
            out.append(DigestMismatch(str(raw_path), "malformed", detail=detail))
            continue
        seen.add(rel)
        raw = _decode_b64(expected)
        if raw is None or len(raw) != size:
            out.append(DigestMismatch(rel, "malformed", expected=str(expected), detail=(
                f"hash is not base64 of a {algorithm} digest ({size} bytes)")))
            continue
        if not _covered(rel):
            continue
        if (found := on_disk.get(rel)) is None:
            out.append(DigestMismatch(rel, "missing", expected=str(expected)))
        elif found.hashes[algorithm] != raw.hex():
            out.append(DigestMismatch(rel, "changed", expected=str(expected),
                                      actual=_b64(found.hashes[algorithm])))
    out += [DigestMismatch(rel, "unexpected") for rel in sorted(set(on_disk) - seen)]
    return sorted(out, key=lambda m: (m.path, m.kind))


def verify_digest(variant: Path | VariantSnapshot, digest: object, *, where: str | None = None) -> None:
    """Raise :class:`IntegrityError` listing every mismatch (naming the variant ``where``, default
    its folder), or return when the files match."""
    if mismatches := check_digest(variant, digest):
        label = where or str(variant.root if isinstance(variant, VariantSnapshot) else variant)
        listed = "; ".join(m.describe() for m in mismatches[:20])
        more = f" (and {len(mismatches) - 20} more)" if len(mismatches) > 20 else ""
        raise IntegrityError(f"{label}: files do not match the metadata digest: {listed}{more}. The download "
                             "may be incomplete or the files were modified: delete the folder and fetch it "
                             "again, or rebuild the kernel.")
