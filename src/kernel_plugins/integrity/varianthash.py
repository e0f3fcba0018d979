"""The ``git_lfs_concat`` hash of a build variant, from the Hub's file listing or from a snapshot.

This is the hash ``kernels.lock`` pins per variant (the format other tools write too):

1. take every file below ``build/<variant>/`` except ``*.pyc`` files and anything inside a
   ``__pycache__`` folder;
2. for each, the pair (path relative to the variant folder, POSIX, UTF-8 bytes; the raw
   bytes of the file's hash), where the hash is the LFS sha256 of the content for a file
   stored with git LFS and the git blob id (``sha1(b"blob <size>\\0" + content)``) for any
   other file;
3. sort the pairs by path bytes and take sha256 over ``path + hash`` of every pair;
4. write it as ``sha256-<hex>``.

From the Hub, the hashes come from the commit's file listing (``oid`` and ``lfs.sha256``
of each entry). On disk the content is hashed again, and one question remains: was a file
an LFS file (hash it with sha256) or not (hash it as a git blob)? The answer is taken,
in order, from

- the commit's file listing that huggingface_hub caches next to the snapshot
  (``<repo cache>/trees/<sha>.json``, written by every download), or a listing passed in;
- the name of the blob a cached file links to: huggingface_hub names blobs by their ETag,
  which is the LFS sha256 (64 hex digits) for LFS files and the git blob id (40) otherwise;
- else the file is hashed as a git blob.

The choice only says *how* to hash: the result still has to match the pinned hash, so a
wrong hint can only make a check fail, never make a changed file pass. Both hashes are
computed in the one read of each file (see ``snapshot``), so the choice costs nothing.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from ._hash import git_blob_id
from ._walk import is_bytecode
from .snapshot import VariantSnapshot, read_variant

__all__ = [
    "HASH_TYPE",
    "FileHash",
    "FileMismatch",
    "git_blob_id",
    "is_hashed_path",
    "variant_hash",
    "hash_variant_dir",
    "snapshot_file_hashes",
    "split_listing",
    "listing_entry_hash",
    "blob_name_hashes",
    "compare_files",
]

#: The ``hash_type`` of the variant hashes this module computes.
HASH_TYPE = "git_lfs_concat"

HashKind = Literal["git", "lfs"]

_HEX40 = re.compile(r"[0-9a-f]{40}")
_HEX64 = re.compile(r"[0-9a-f]{64}")


@dataclass(frozen=True)
class FileHash:
    """The hash of one file: a git blob id (``kind="git"``) or an LFS sha256 (``"lfs"``).

    Attributes: kind, hex (lowercase hex digits), size (bytes, when known).
    """

    kind: HashKind
    hex: str
    size: int | None = None

    def describe(self) -> str:
        """``git blob 1f2e...`` or ``LFS sha256 9a8b...``, with the size when known."""
        label = "git blob" if self.kind == "git" else "LFS sha256"
        size = f" ({self.size} bytes)" if self.size is not None else ""
        return f"{label} {self.hex}{size}"

    def same_content(self, other: FileHash) -> bool:
        """Whether both describe the same content (same kind and hash)."""
        return self.kind == other.kind and self.hex == other.hex


@dataclass(frozen=True)
class FileMismatch:
    """One difference between the expected files of a variant and those on disk.

    Attributes:
        path: relative POSIX path inside the variant folder.
        kind: ``missing`` (expected, not on disk), ``changed`` (content differs) or
            ``unexpected`` (on disk, not expected).
        expected / actual: the hashes on each side (None where the file is absent).
    """

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
            return (
                f"{self.path}: unexpected file, not part of the published variant "
                f"(found {self.actual.describe()})"
            )
        assert self.expected is not None and self.actual is not None
        return (
            f"{self.path}: content changed (expected {self.expected.describe()}, "
            f"found {self.actual.describe()})"
        )


def is_hashed_path(rel: str) -> bool:
    """Whether a variant-relative POSIX path counts for the hash (no ``*.pyc``/``__pycache__``)."""
    return bool(rel) and not is_bytecode(rel)


def variant_hash(files: Mapping[str, FileHash]) -> str:
    """The ``git_lfs_concat`` hash (``sha256-<hex>``) of a variant's files.

    :param files: path relative to the variant folder (POSIX) -> its hash; paths that do not
        count (``*.pyc``, ``__pycache__``) are skipped.
    """
    h = hashlib.sha256()
    for rel in sorted(filter(is_hashed_path, files), key=lambda rel: rel.encode("utf-8")):
        h.update(rel.encode("utf-8") + bytes.fromhex(files[rel].hex))
    return f"sha256-{h.hexdigest()}"


def _blob_hint(link_target: str | None) -> FileHash | None:
    """The hash a cached file's blob name claims (its ETag), or None when it is no such link."""
    if link_target is None:
        return None
    if _HEX64.fullmatch(link_target):
        return FileHash("lfs", link_target)
    if _HEX40.fullmatch(link_target):
        return FileHash("git", link_target)
    return None


def snapshot_file_hashes(
    snapshot: VariantSnapshot, expected: Mapping[str, FileHash] | None = None
) -> dict[str, FileHash]:
    """The hash of every file of a snapshot, each taken the way the Hub would list it.

    :param snapshot: read with the ``git`` and ``sha256`` hashes.
    :param expected: the published hashes (e.g. from the commit's file listing); a file
        listed there is taken the same way (git blob or LFS). Other files follow their
        blob name (see the module docs), else count as git blobs.
    """
    out: dict[str, FileHash] = {}
    for rel, f in snapshot.files.items():
        hint = (expected or {}).get(rel) or _blob_hint(f.link_target)
        kind: HashKind = hint.kind if hint else "git"
        out[rel] = FileHash(kind, f.hashes["sha256" if kind == "lfs" else "git"], f.size)
    return out


def hash_variant_dir(variant_dir: Path, expected: Mapping[str, FileHash] | None = None) -> str:
    """The ``git_lfs_concat`` hash of the files in a folder (see :func:`snapshot_file_hashes`)."""
    snap = read_variant(variant_dir, algorithms=("git",))
    return variant_hash(snapshot_file_hashes(snap, expected))


def blob_name_hashes(snapshot: VariantSnapshot) -> dict[str, FileHash]:
    """What the blob names of a cached variant's linked files claim: path -> hash.

    Only files stored as links to a blob named by a 40- or 64-hex ETag are listed. Used to
    name the changed file when no file listing of the commit is at hand.
    """
    hints = {rel: _blob_hint(f.link_target) for rel, f in snapshot.files.items()}
    return {rel: hint for rel, hint in hints.items() if hint is not None}


def compare_files(
    expected: Mapping[str, FileHash], actual: Mapping[str, FileHash], *, complete: bool = True
) -> list[FileMismatch]:
    """Differences between expected and found files, sorted by path.

    :param complete: ``expected`` lists every file of the variant, so files missing from
        ``actual`` and files only in ``actual`` are reported too; with False only files
        present on both sides are compared.
    """
    out: list[FileMismatch] = []
    for rel in sorted(set(expected) | set(actual)):
        exp, act = expected.get(rel), actual.get(rel)
        if exp is not None and act is not None:
            if not exp.same_content(act):
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
    """Group a repository file listing by variant.

    :param entries: (path in the repository, hash) pairs; only ``build/<variant>/...`` paths
        are kept.
    :return: variant -> {path relative to the variant folder -> hash}, counting files only.
    """
    out: dict[str, dict[str, FileHash]] = {}
    for path, fh in entries:
        parts = path.split("/")
        if len(parts) < 3 or parts[0] != "build" or not parts[1]:
            continue
        rel = "/".join(parts[2:])
        if is_hashed_path(rel):
            out.setdefault(parts[1], {})[rel] = fh
    return out
