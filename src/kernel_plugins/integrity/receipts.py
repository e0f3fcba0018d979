"""What only this user can change: hash receipts (a file identity -> the hashes computed for it,
so an unchanged large file is not hashed again) and native extensions imported from the cached
file itself. The rules, and why ``st_ctime`` makes an identity no user can fake: docs/loading.md.
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
#: A file whose status changed less than this long ago (ns) gets no receipt (timestamps are coarse).
SETTLE_NS = 2_000_000_000
logger = logging.getLogger("kernel_plugins")


def folder() -> Path:
    """``$KERNEL_PLUGINS_RECEIPTS``, else ``$XDG_CACHE_HOME/kernel-plugins/receipts`` (``~/.cache``)."""
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".cache"
    return Path(os.environ.get(RECEIPTS_ENV) or base / "kernel-plugins" / "receipts")


def others_can_write(path: Path, top: Path | None = None) -> str | None:
    """Why someone else could change ``path`` or a folder above it up to ``top`` (default: the
    root), else None; above ``path`` a sticky folder of this user or root (``/tmp``) is fine.
    :raises OSError: a folder cannot be examined."""
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


def _private(st: os.stat_result) -> None:
    if why := written_by_others(st):
        raise JSONFileError(f"ignored: {why}")


def recall(st: os.stat_result, algorithms: Iterable[str]) -> dict[str, str] | None:
    """The hashes (each of ``algorithms``) a receipt holds for the file of status ``st``, or None."""
    path = folder() / f"{st.st_dev:x}-{st.st_ino:x}.json"
    try:
        if why := others_can_write(path.parent):
            raise JSONFileError(f"not used: {why}")
        data = parse_json(read_regular_file(path, max_bytes=4096, follow=False, check=_private), where=str(path),
                          max_bytes=4096)
    except FileNotFoundError:
        return None
    except (OSError, JSONFileError) as e:
        logger.debug("Hash receipt %s: %s", path, e)
        return None
    hashes = data.get("hashes") if isinstance(data, dict) and data.get("identity") == _identity(st) else None
    if not isinstance(hashes, dict) or not all(isinstance(hashes.get(a), str) for a in algorithms):
        return None
    return {a: hashes[a] for a in algorithms}


def remember(before: os.stat_result, after: os.stat_result, hashes: dict[str, str]) -> None:
    """Keep a receipt of ``hashes``, computed between the file statuses ``before`` and ``after``:
    none when they differ or the file changed lately; best effort (a failure is logged)."""
    if _identity(before) != _identity(after) or time.time_ns() - after.st_ctime_ns < SETTLE_NS:
        return
    path = folder() / f"{after.st_dev:x}-{after.st_ino:x}.json"
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        if why := others_can_write(path.parent):
            raise OSError(f"not kept: {why}")
        write_atomic(path, json.dumps({"identity": _identity(after), "hashes": hashes}), mode=0o600)
    except OSError as e:
        logger.debug("Hash receipt %s: %s", path, e)


def shareable(fd: int, st: os.stat_result, roots: Sequence[Path]) -> str | None:
    """``/proc/self/fd/<fd>``, to import the open native extension ``fd`` (status ``st``) from the
    file itself, when it lies in one of ``roots`` (caches) and neither it nor a folder above it up
    to that root can be changed by another user; else None (said at debug level)."""
    proc = f"/proc/self/fd/{fd}"
    try:
        real = Path(os.readlink(proc))
        top = next((r for r in roots if r == real or r in real.parents), None)
        why = "it is not in a download cache" if top is None else (
            written_by_others(st) and f"{real}: {written_by_others(st)}") or others_can_write(real.parent, top)
    except OSError as e:
        why = f"{proc} cannot be used ({e})"
    if why is None:
        return proc
    logger.debug("Native extension (descriptor %d) imported from a private copy: %s", fd, why)
    return None
