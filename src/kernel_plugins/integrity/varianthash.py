"""The ``git_lfs_concat`` hash of a build variant (what ``kernels.lock`` pins per variant).

It is ``sha256-<hex>`` of sha256 over ``path + hash`` of every file below ``build/<variant>/`` but bytecode, sorted
by path bytes (POSIX, UTF-8), where ``hash`` is the raw LFS sha256 of a file stored with git LFS, else its git blob
id. The Hub's listing gives both; on disk, whether a file was an LFS file is taken from the commit's cached file
listing (``<repo cache>/trees/<sha>.json``) or one passed in, else from the name of the blob a cached file links to
(64 hex: LFS, 40: git), else git. A wrong hint can only make a check fail, never pass a changed file; both hashes
come from the one read of each file.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Mapping
from typing import Literal

from .._record import record
from ._hash import git_blob_id
from ._walk import is_bytecode
from .snapshot import VariantSnapshot

__all__ = ["HASH_TYPE", "FileHash", "FileMismatch", "git_blob_id", "is_hashed_path", "variant_hash",
           "snapshot_file_hashes", "split_listing", "listing_entry_hash", "blob_name_hashes", "compare_files"]

#: The ``hash_type`` of the variant hashes this module computes.
HASH_TYPE = "git_lfs_concat"

HashKind = Literal["git", "lfs"]

_HEX40 = re.compile(r"[0-9a-f]{40}")
_HEX64 = re.compile(r"[0-9a-f]{64}")


@record
class FileHash:
    """The hash of one file: a git blob id (``kind="git"``) or an LFS sha256 (``"lfs"``), as
    lowercase ``hex``, with its ``size`` when known."""

    kind: HashKind
    hex: str
    size: int | None = None

    def describe(self) -> str:
        """``git blob 1f2e...`` or ``LFS sha256 9a8b...``, with the size when known."""
        label = "git blob" if self.kind == "git" else "LFS sha256"
        size = f" ({self.size} bytes)" if self.size is not None else ""
        return f"{label} {self.hex}{size}"


@record
class FileMismatch:
    """One difference between the expected files of a variant and those on disk: the relative
    ``path``, ``kind`` and the ``expected`` / ``actual`` hashes (None where the file is absent)."""

    path: str
    kind: Literal["missing", "changed", "unexpected"]
    expected: FileHash | None = None
    actual: FileHash | None = None

    def describe(self) -> str:
        """One line naming the file and both hashes."""
        if self.kind == "missing":
            assert self.expected is not None
            return f"{self.path}: missing (expected {self.expected.describe()})"
        if self.kind == "unexpected":
            assert self.actual is not None
            return f"{self.path}: unexpected file, not part of the published variant (found {self.actual.describe()})"
        assert self.expected is not None and self.actual is not None
        return f"{self.path}: content changed (expected {self.expected.describe()}, found {self.actual.describe()})"


def is_hashed_path(rel: str) -> bool:
    """Whether a variant-relative POSIX path counts for the hash (no ``*.pyc``/``__pycache__``)."""
    return bool(rel) and not is_bytecode(rel)


def variant_hash(files: Mapping[str, FileHash]) -> str:
    """The ``git_lfs_concat`` hash (``sha256-<hex>``) of a variant's files (relative path -> hash;
    bytecode skipped)."""
    h = hashlib.sha256()
    for rel in sorted(filter(is_hashed_path, files), key=lambda rel: rel.encode("utf-8")):
        h.update(rel.encode("utf-8") + bytes.fromhex(files[rel].hex))
    return f"sha256-{h.hexdigest()}"


def _blob_hint(link_target: str | None) -> FileHash | None:
    """The hash a cached file's blob name claims (its ETag), or None when it is no such link."""
    if link_target is None or not (_HEX64.fullmatch(link_target) or _HEX40.fullmatch(link_target)):
        return None
    return FileHash("lfs" if len(link_target) == 64 else "git", link_target)


def snapshot_file_hashes(snapshot: VariantSnapshot,
                         expected: Mapping[str, FileHash] | None = None) -> dict[str, FileHash]:
    """The hash of every file of a snapshot (read with ``git`` and ``sha256``) as the Hub would
    list it: of the kind ``expected`` (the published hashes) gives, else its blob name's, else git."""
    out: dict[str, FileHash] = {}
    for rel, f in snapshot.files.items():
        hint = (expected or {}).get(rel) or _blob_hint(f.link_target)
        kind: HashKind = hint.kind if hint else "git"
        out[rel] = FileHash(kind, f.hashes["sha256" if kind == "lfs" else "git"], f.size)
    return out


def blob_name_hashes(snapshot: VariantSnapshot) -> dict[str, FileHash]:
    """Path -> the hash its blob name claims, for the files of a cached variant that link to a
    blob named by a 40- or 64-hex ETag (names the changed file without the commit's listing)."""
    hints = {rel: _blob_hint(f.link_target) for rel, f in snapshot.files.items()}
    return {rel: hint for rel, hint in hints.items() if hint is not None}


def compare_files(expected: Mapping[str, FileHash], actual: Mapping[str, FileHash], *,
                  complete: bool = True) -> list[FileMismatch]:
    """Differences between expected and found files, sorted by path; with ``complete`` (``expected``
    lists every file) missing and unexpected files too, else only files on both sides."""
    out: list[FileMismatch] = []
    for rel in sorted(set(expected) | set(actual)):
        exp, act = expected.get(rel), actual.get(rel)
        if exp is not None and act is not None:
            if (exp.kind, exp.hex) != (act.kind, act.hex):
                out.append(FileMismatch(rel, "changed", exp, act))
        elif complete:
            out.append(FileMismatch(rel, "missing" if act is None else "unexpected", exp, act))
    return out


def listing_entry_hash(blob_id: object, lfs_sha256: object, size: object) -> FileHash | None:
    """The FileHash of one Hub listing entry, or None when it carries no usable hash."""
    size_val = size if isinstance(size, int) and not isinstance(size, bool) else None
    if isinstance(lfs_sha256, str) and _HEX64.fullmatch(lfs_sha256.lower()):
        return FileHash("lfs", lfs_sha256.lower(), size_val)
    if isinstance(blob_id, str) and _HEX40.fullmatch(blob_id.lower()):
        return FileHash("git", blob_id.lower(), size_val)
    return None


def split_listing(entries: Iterable[tuple[str, FileHash]]) -> dict[str, dict[str, FileHash]]:
    """Variant -> {path in the variant -> hash} of the counting files of a repository listing's
    ``(path, hash)`` pairs (only ``build/<variant>/...`` paths)."""
    out: dict[str, dict[str, FileHash]] = {}
    for path, fh in entries:
        parts = path.split("/")
        if len(parts) < 3 or parts[0] != "build" or not parts[1]:
            continue
        rel = "/".join(parts[2:])
        if is_hashed_path(rel):
            out.setdefault(parts[1], {})[rel] = fh
    return out
