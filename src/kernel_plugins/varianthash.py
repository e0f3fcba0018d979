"""The ``git_lfs_concat`` hash of a build variant, from the Hub's file listing or from disk.

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
wrong hint can only make a check fail, never make a changed file pass.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any, Literal

from . import hub
from .errors import HubError, IntegrityError, SourceError

__all__ = [
    "HASH_TYPE",
    "FileHash",
    "FileMismatch",
    "git_blob_id",
    "is_hashed_path",
    "variant_hash",
    "hash_variant_dir",
    "disk_file_hashes",
    "split_listing",
    "cached_listing",
    "hub_listing",
    "blob_name_hashes",
    "compare_files",
]

#: The ``hash_type`` of the variant hashes this module computes.
HASH_TYPE = "git_lfs_concat"

HashKind = Literal["git", "lfs"]

_CHUNK = 1 << 20
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


def git_blob_id(data: bytes) -> str:
    """The git blob id of ``data``: hex ``sha1(b"blob <len>\\0" + data)``."""
    h = hashlib.sha1(b"blob %d\0" % len(data))  # noqa: S324 - git's object id, not security
    h.update(data)
    return h.hexdigest()


def _hash_file(path: Path, kind: HashKind) -> FileHash:
    """Hash one file on disk the way ``kind`` says (streamed)."""
    size = path.stat().st_size
    if kind == "lfs":
        h = hashlib.sha256()
    else:
        h = hashlib.sha1(b"blob %d\0" % size)  # noqa: S324 - git's object id
    read = 0
    with open(path, "rb") as f:
        while chunk := f.read(_CHUNK):
            h.update(chunk)
            read += len(chunk)
    if read != size:  # changed while reading: report what was actually read
        raise IntegrityError(f"{path} changed while it was being hashed; try again")
    return FileHash(kind, h.hexdigest(), size)


def is_hashed_path(rel: str) -> bool:
    """Whether a variant-relative POSIX path counts for the hash (no ``*.pyc``/``__pycache__``)."""
    parts = PurePosixPath(rel).parts
    return bool(parts) and "__pycache__" not in parts and not parts[-1].endswith(".pyc")


def variant_hash(files: Mapping[str, FileHash]) -> str:
    """The ``git_lfs_concat`` hash (``sha256-<hex>``) of a variant's files.

    :param files: path relative to the variant folder (POSIX) -> its hash; paths that do not
        count (``*.pyc``, ``__pycache__``) are skipped.
    """
    h = hashlib.sha256()
    pairs = sorted(
        ((rel.encode("utf-8"), fh) for rel, fh in files.items() if is_hashed_path(rel)),
        key=lambda pair: pair[0],
    )
    for path_bytes, fh in pairs:
        h.update(path_bytes)
        h.update(bytes.fromhex(fh.hex))
    return f"sha256-{h.hexdigest()}"


def _walk_files(variant_dir: Path) -> list[str]:
    """Relative POSIX paths of the files that count, below ``variant_dir`` (sorted).

    Links to files are followed (the Hub cache links snapshot files to blobs); links to
    folders are not descended into.
    """
    found: list[str] = []
    for dirpath, dirnames, filenames in os.walk(variant_dir, followlinks=False):
        dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
        base = Path(dirpath)
        for name in filenames:
            full = base / name
            rel = full.relative_to(variant_dir).as_posix()
            if is_hashed_path(rel) and full.is_file():
                found.append(rel)
    return sorted(found)


def _blob_hint(path: Path) -> FileHash | None:
    """The hash a cached file's blob name claims (its ETag), or None when it is no such link."""
    if not path.is_symlink():
        return None
    try:
        name = Path(os.readlink(path)).name
    except OSError:
        return None
    if _HEX64.fullmatch(name):
        return FileHash("lfs", name)
    if _HEX40.fullmatch(name):
        return FileHash("git", name)
    return None


def disk_file_hashes(
    variant_dir: Path, expected: Mapping[str, FileHash] | None = None
) -> dict[str, FileHash]:
    """Hash every file of a variant folder that counts; relative POSIX path -> hash.

    :param expected: the published hashes (e.g. from the commit's file listing); a file
        listed there is hashed the same way (git blob or LFS). Other files follow their
        blob name (see the module docs), else are hashed as git blobs.
    :raises IntegrityError: ``variant_dir`` is not a folder, or a file cannot be read.
    """
    root = Path(variant_dir)
    if not root.is_dir():
        raise IntegrityError(f"{root} is not a folder; it cannot be hashed")
    out: dict[str, FileHash] = {}
    for rel in _walk_files(root):
        full = root / rel
        known = expected.get(rel) if expected else None
        hint = known or _blob_hint(full)
        try:
            out[rel] = _hash_file(full, hint.kind if hint else "git")
        except OSError as exc:
            raise IntegrityError(f"cannot read {full} to check it: {exc}") from exc
    return out


def hash_variant_dir(variant_dir: Path, expected: Mapping[str, FileHash] | None = None) -> str:
    """The ``git_lfs_concat`` hash of the files in a folder (see :func:`disk_file_hashes`)."""
    return variant_hash(disk_file_hashes(variant_dir, expected))


def blob_name_hashes(variant_dir: Path) -> dict[str, FileHash]:
    """What the blob names of a cached variant's linked files claim: path -> hash.

    Only files stored as links to a blob named by a 40- or 64-hex ETag are listed. Used to
    name the changed file when no file listing of the commit is at hand.
    """
    root = Path(variant_dir)
    out: dict[str, FileHash] = {}
    for rel in _walk_files(root):
        hint = _blob_hint(root / rel)
        if hint is not None:
            out[rel] = hint
    return out


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
        elif not complete:
            continue
        elif exp is not None:
            out.append(FileMismatch(rel, "missing", exp, None))
        elif act is not None:
            out.append(FileMismatch(rel, "unexpected", None, act))
    return out


def _entry_hash(blob_id: object, lfs_sha256: object, size: object) -> FileHash | None:
    """The FileHash of one listing entry, or None when it carries no usable hash."""
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


def cached_listing(ref: Any) -> dict[str, dict[str, FileHash]] | None:
    """The file listing of ``ref.sha`` that huggingface_hub cached, split by variant; no request.

    :param ref: a :class:`~kernel_plugins.hub.HubRef`.
    :return: variant -> files, or None when no usable listing is cached.
    """
    files = hub.cached_tree_files(ref)
    if files is None:
        return None
    entries: list[tuple[str, FileHash]] = []
    for repo_path, info in files.items():
        fh = _entry_hash(info.get("blob_id"), info.get("lfs_sha256"), info.get("size"))
        if fh is None:
            return None
        entries.append((repo_path, fh))
    return split_listing(entries)


def hub_listing(ref: Any) -> dict[str, dict[str, FileHash]]:
    """The file listing of ``build/`` at ``ref.sha`` from the Hub, split by variant.

    One recursive tree request (paged by huggingface_hub for large repositories).

    :raises SourceError: the commit has no ``build/`` folder.
    :raises HubError: the Hub could not be reached, or an entry has no usable hash.
    """
    from huggingface_hub import HfApi, RepoFile


    api = HfApi(endpoint=hub.hub_endpoint(ref.endpoint))
    try:
        listing = list(
            api.list_repo_tree(
                ref.repo_id,
                path_in_repo="build",
                revision=ref.sha,
                repo_type=ref.repo_type,
                recursive=True,
            )
        )
    except Exception as exc:
        if hub.is_not_found(exc):
            raise SourceError(
                f"{ref.repo_id} has no build/ folder at commit {ref.sha}; a kernel repository "
                "keeps one folder per build variant under build/."
            ) from exc
        raise hub.map_error(exc, ref.repo_id, ref.sha, ref.endpoint, "listing files") from exc
    entries: list[tuple[str, FileHash]] = []
    for item in listing:
        if not isinstance(item, RepoFile):
            continue
        lfs = getattr(item, "lfs", None)
        fh = _entry_hash(item.blob_id, getattr(lfs, "sha256", None), item.size)
        if fh is None:
            raise HubError(
                f"The Hub listed {item.path} of {ref.repo_id}@{ref.sha} without a git blob id "
                "or LFS sha256, so it cannot be hashed; is the endpoint a Hugging Face Hub?"
            )
        entries.append((item.path, fh))
    return split_listing(entries)
