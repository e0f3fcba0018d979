"""What only this user can change: hash receipts, and native files shared from the page cache.

A receipt maps a file identity (device, inode, size, ``st_mtime_ns``, ``st_ctime_ns``) to the
hashes computed for it, so an unchanged large file is not hashed again. The kernel sets
``st_ctime`` on every write, truncation or chmod and no user can set it back (only root, by
moving the clock), so a matching identity means the bytes hashed then. A file changed less
than :data:`SETTLE_NS` ago gets no receipt (timestamps are coarse: a write in the same tick
could keep its ctime). Receipts live in ``$KERNEL_PLUGINS_RECEIPTS``, else
``$XDG_CACHE_HOME/kernel-plugins/receipts``; they are read and written only while that folder
and every folder above it are writable by this user alone, and one owned or writable by
anyone else is ignored. Receipts hold hashes, not verdicts: every load still checks them.
"""

from __future__ import annotations

import json
import logging
import os
import stat
import time
from collections.abc import Iterable, Sequence
from pathlib import Path

from ..jsonfile import JSONFileError, parse_json, read_regular_file, write_atomic, written_by_others

__all__ = ["RECEIPTS_ENV", "SETTLE_NS", "folder", "recall", "remember", "others_can_write", "shareable"]

RECEIPTS_ENV = "KERNEL_PLUGINS_RECEIPTS"
#: A file whose status changed less than this long ago (ns) gets no receipt.
SETTLE_NS = 2_000_000_000
_MAX_BYTES = 4096
logger = logging.getLogger("kernel_plugins")


def folder() -> Path:
    """Where receipts live (see the module docs)."""
    if env := os.environ.get(RECEIPTS_ENV):
        return Path(env)
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg).expanduser() if xdg else Path.home() / ".cache") / "kernel-plugins" / "receipts"


def others_can_write(path: Path, top: Path | None = None) -> str | None:
    """Why someone else could change ``path`` or a folder above it up to ``top`` (default: the
    file system's root), else None. Above ``path``, a sticky folder of this user or root (``/tmp``)
    is fine: others cannot move what they do not own out of it. :raises OSError: cannot stat."""
    for p in (path, *path.parents):
        st = os.stat(p)
        why = written_by_others(st)
        if why and not (p != path and st.st_mode & stat.S_ISVTX and st.st_uid in (os.getuid(), 0)):
            return f"{p}: {why}"
        if p == top:
            break
    return None


def _identity(st: os.stat_result) -> list[int]:
    return [st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns]


def _where(st: os.stat_result) -> Path:
    return folder() / f"{st.st_dev:x}-{st.st_ino:x}.json"


def recall(st: os.stat_result, algorithms: Iterable[str]) -> dict[str, str] | None:
    """The hashes a receipt holds for the file of status ``st`` (every one of ``algorithms``), or None."""
    def refuse(rst: os.stat_result) -> None:
        if why := written_by_others(rst):
            raise JSONFileError(f"ignored: {why}")

    path = _where(st)
    try:
        if why := others_can_write(path.parent):
            logger.debug("Hash receipts not used: %s", why)
            return None
        data = parse_json(read_regular_file(path, max_bytes=_MAX_BYTES, follow=False, check=refuse),
                          where=str(path), max_bytes=_MAX_BYTES)
    except FileNotFoundError:
        return None
    except (OSError, JSONFileError) as e:
        logger.debug("Hash receipt %s not used: %s", path, e)
        return None
    hashes = data.get("hashes") if isinstance(data, dict) and data.get("identity") == _identity(st) else None
    if not isinstance(hashes, dict) or not all(isinstance(hashes.get(a), str) for a in algorithms):
        return None
    return {a: hashes[a] for a in algorithms}


def remember(before: os.stat_result, after: os.stat_result, hashes: dict[str, str]) -> None:
    """Keep a receipt of ``hashes``, computed between the file statuses ``before`` and ``after``
    (none when they differ or the file changed lately; best effort, never raises)."""
    if _identity(before) != _identity(after) or time.time_ns() - after.st_ctime_ns < SETTLE_NS:
        return
    path = _where(after)
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        if why := others_can_write(path.parent):
            logger.debug("No hash receipt written: %s", why)
            return
        write_atomic(path, json.dumps({"identity": _identity(after), "hashes": hashes}), mode=0o600)
    except OSError as e:
        logger.debug("No hash receipt written to %s: %s", path, e)


def shareable(fd: int, st: os.stat_result, roots: Sequence[Path]) -> str | None:
    """The path to import the open native extension ``fd`` (status ``st``) from itself,
    ``/proc/self/fd/<fd>``, when the file lies in one of ``roots`` (caches) and neither it nor a
    folder above it up to that root can be changed by another user; else None (said at debug level)."""
    proc = f"/proc/self/fd/{fd}"
    try:
        real = Path(os.readlink(proc))
        top = next((r for r in roots if r == real or r in real.parents), None)
        why = "it is not in a download cache" if top is None else written_by_others(st) or others_can_write(
            real.parent, top)
    except OSError as e:
        why = f"{proc} cannot be used ({e})"
    if why is None:
        return proc
    logger.debug("Native extension (descriptor %d) imported from a private copy: %s", fd, why)
    return None
