"""Read a build variant once, into memory, hashing every byte as it is read.

:func:`read_variant` is the only place that reads a variant's files for loading: each is opened at the target the
walker approved, checked again through the descriptor, read to the end and hashed in the same pass. Python sources
and small files stay in memory (the importer executes exactly the bytes hashed), native extensions are imported
through the very descriptor that was read when only this user can change them in a download cache, else from a
private sealed copy (Linux ``memfd``, else a private temporary folder), and larger data files are hashed only; a
large file known by a receipt is not hashed again (``receipts``).
"""

from __future__ import annotations

import contextlib
import importlib.machinery
import os
import stat
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from .._record import field, record
from ..errors import IntegrityError
from ..jsonfile import OPEN_FLAGS, read_capped
from . import receipts
from ._hash import Hasher, hash_bytes
from ._walk import WalkEntry, inside, walk_variant

__all__ = ["SnapshotFile", "VariantSnapshot", "read_variant", "MAX_KEPT_BYTES", "read_small_file"]

#: Files up to this size (and every Python source) are kept in memory.
MAX_KEPT_BYTES = 4 << 20
_CHUNK = 1 << 20
_NATIVE_SUFFIXES = tuple(sorted(set(importlib.machinery.EXTENSION_SUFFIXES) | {".so", ".pyd"}))
_OPEN_FLAGS = OPEN_FLAGS | getattr(os, "O_NOFOLLOW", 0)  # a FIFO is refused, never waited on
_private_fds: list[int] = []  # kept open for the life of the process (modules use them; append is atomic)


@record
class SnapshotFile:
    """One file of a variant as read: ``rel`` (POSIX), ``path`` (in the folder), ``size``,
    ``hashes`` (hex by name, see ``_hash``), ``data`` (when kept in memory), ``private_path``
    (the private copy of a native extension) and, for a link, ``link_target``."""

    rel: str
    path: Path
    size: int
    hashes: Mapping[str, str]
    data: bytes | None = field(default=None, repr=False)
    private_path: str | None = None
    link_target: str | None = None


@record
class VariantSnapshot:
    """A variant folder read once: every file that counts, and the bytecode found beside (never read)."""

    root: Path
    files: Mapping[str, SnapshotFile]
    bytecode: tuple[str, ...] = ()

    def content_key(self) -> str:
        """A key that differs whenever any file's path or content differs (sha256 based)."""
        h = Hasher(0, ("sha256",))
        for rel in sorted(self.files):
            h.update(rel.encode("utf-8") + b"\0" + bytes.fromhex(self.files[rel].hashes["sha256"]))
        return h.hexdigests()["sha256"]


def _open_checked(path: Path, roots: Sequence[Path]) -> int:
    """Open ``path`` for reading, refusing anything that is not a regular file in ``roots``."""
    real = Path(os.path.realpath(path))
    if not inside(real, roots):
        raise IntegrityError(f"{path}: leads outside the variant folder (to {real}); refusing to read it")
    try:
        fd = os.open(real, _OPEN_FLAGS)
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise IntegrityError(f"{path}: not a regular file")
            proc = f"/proc/self/fd/{fd}"
            if os.path.exists(proc):  # which file was really opened, whatever changed meanwhile
                opened = Path(os.readlink(proc))
                if not inside(opened, roots):
                    raise IntegrityError(f"{path}: it changed while being opened and now leads outside the "
                                         f"variant folder (to {opened}); refusing to read it")
            return fd
        except BaseException:
            os.close(fd)
            raise
    except OSError as e:
        raise IntegrityError(f"cannot read {path}: {e}") from None


def _private_sink(name: str) -> tuple[int, str]:
    """A private file to copy a native extension into: (descriptor, path to load it from)."""
    memfd = getattr(os, "memfd_create", None)
    if memfd is not None and os.path.isdir("/proc/self/fd"):
        flags = getattr(os, "MFD_CLOEXEC", 0) | getattr(os, "MFD_ALLOW_SEALING", 0)
        fd = memfd(name, flags)
        return fd, f"/proc/self/fd/{fd}"
    folder = tempfile.mkdtemp(prefix="kernel-plugins-verified-")
    path = os.path.join(folder, os.path.basename(name))
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
    return fd, path


def _seal(fd: int, path: str) -> None:
    """Make a private copy read-only: seal a memfd, else take the write bits away."""
    import fcntl

    seals = sum(getattr(fcntl, n, 0) for n in ("F_SEAL_WRITE", "F_SEAL_SHRINK", "F_SEAL_GROW", "F_SEAL_SEAL"))
    if path.startswith("/proc/self/fd/") and hasattr(fcntl, "F_ADD_SEALS"):
        with contextlib.suppress(OSError):
            fcntl.fcntl(fd, fcntl.F_ADD_SEALS, seals)
    else:
        os.chmod(path, 0o500)


def _read_one(entry: WalkEntry, roots: Sequence[Path], algorithms: Iterable[str],
              caches: Sequence[Path], receipted: bool) -> SnapshotFile:
    entry_rel, path = entry.rel, entry.path
    fd = _open_checked(path, roots)
    sink: tuple[int, str] | None = None
    try:
        st = os.fstat(fd)
        size = st.st_size
        native = entry_rel.endswith(_NATIVE_SUFFIXES)  # imported from a private copy
        keep = not native and (size <= MAX_KEPT_BYTES or entry_rel.endswith(".py"))
        known = receipts.recall(st, algorithms) if receipted and not keep else None  # hashed before
        private = receipts.shareable(fd, st, caches) if native else None  # mapped from the page cache
        if native and private is None:
            sink = _private_sink(os.path.basename(entry_rel))
        hasher = Hasher(size, algorithms)
        chunks: list[bytes] = []
        read, reading = 0, known is None or keep or sink is not None
        while reading and (chunk := os.read(fd, _CHUNK)):
            read += len(chunk)
            if read > size:
                break
            if known is None:
                hasher.update(chunk)
            if keep:
                chunks.append(chunk)
            if sink is not None:
                os.write(sink[0], chunk)
        if (reading and read != size) or (known is not None and os.fstat(fd).st_ctime_ns != st.st_ctime_ns):
            raise IntegrityError(f"{path} changed while it was being read; try again")
        hashes = hasher.hexdigests() if known is None else known
        if known is None and not keep and receipted:
            receipts.remember(st, os.fstat(fd), hashes)
        if sink is not None:
            _seal(*sink)
            _private_fds.append(sink[0])
            private, sink = sink[1], None
        elif private is not None:  # the module is loaded through this very descriptor: it stays open
            _private_fds.append(fd)
            fd = -1
        return SnapshotFile(entry_rel, path, size, hashes, b"".join(chunks) if keep else None, private,
                            entry.link_target)
    except OSError as e:
        raise IntegrityError(f"cannot read {path}: {e}") from None
    finally:
        if fd >= 0:
            os.close(fd)
        if sink is not None:
            os.close(sink[0])


def read_small_file(path: Path, *, max_bytes: int, roots: Sequence[Path]) -> bytes:
    """At most ``max_bytes + 1`` bytes (more: oversized) of one small file of a variant
    (``metadata.json``), with the same checks.
    :raises IntegrityError: it cannot be read, or is not a regular file inside ``roots``."""
    fd = _open_checked(path, [Path(r).resolve() for r in roots])
    try:
        return read_capped(fd, max_bytes)
    finally:
        os.close(fd)


def read_variant(root: Path, *, link_roots: Sequence[Path] = (), algorithms: Iterable[str] = ("sha256",),
                 preread: Mapping[str, bytes] | None = None,
                 caches: Sequence[Path] = (), use_receipts: bool = True) -> VariantSnapshot:
    """Read every file of the variant folder ``root`` once, hashing it with ``algorithms`` (and
    ``sha256``); links may also lead into ``link_roots``; ``preread`` (relative path -> content,
    e.g. ``metadata.json``) is hashed from those bytes, not read again.
    A native extension inside one of ``caches`` that only this user can change is imported from
    the file itself; large files with a matching receipt are not hashed again unless not
    ``use_receipts`` (see :mod:`.receipts`).
    :raises IntegrityError: a refused link or entry (see ``_walk.walk_variant``), or a file that
        cannot be read or changed while it was read."""
    algos = tuple(dict.fromkeys(("sha256", *algorithms)))
    tree = walk_variant(root, link_roots=link_roots)
    roots = [Path(root).resolve(), *(Path(r).resolve() for r in link_roots)]
    files: dict[str, SnapshotFile] = {}
    shared = [Path(c).resolve() for c in caches]
    for entry in tree.files:
        if (given := (preread or {}).get(entry.rel)) is not None:
            files[entry.rel] = SnapshotFile(entry.rel, entry.path, len(given), hash_bytes(given, algos), given, None,
                                            entry.link_target)
        else:
            files[entry.rel] = _read_one(entry, roots, algos, shared, use_receipts)
    return VariantSnapshot(Path(root), files, tree.bytecode)

