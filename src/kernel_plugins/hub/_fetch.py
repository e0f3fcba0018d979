"""Bring one build variant into huggingface_hub's cache, once per machine at a time.

:func:`fetch_variant` takes a per-variant file lock (in huggingface_hub's ``.locks`` folder), so of many processes
only one downloads while the others wait and then reuse its files. It returns the cached folder; it does not verify
it (that is the next step of loading, :mod:`kernel_plugins.verification`).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ._cache import _snapshot_folder, cache_dir, storage_folder
from ._download import cached_variant_path, download_variant, downloaded
from ._records import record_path
from ._values import HubRef

logger = logging.getLogger("kernel_plugins")

#: Seconds between "still waiting" notices while another process downloads a variant.
LOCK_NOTICE_S = 30.0


@contextlib.contextmanager
def variant_lock(ref: HubRef, variant: str) -> Iterator[None]:
    """Hold the per-variant download lock (in huggingface_hub's ``.locks`` folder). A read-only cache
    cannot hold locks; then nothing is locked (nothing can be downloaded there either). The lock is
    released by the OS if its holder dies."""
    from filelock import FileLock, Timeout

    folder = cache_dir() / ".locks" / storage_folder(ref.repo_id, ref.repo_type).name
    path = folder / f"kernel-plugins--{ref.sha}--{variant}.lock"
    lock: Any = None
    try:
        folder.mkdir(parents=True, exist_ok=True)
        lock = FileLock(str(path))
        while True:
            try:
                lock.acquire(timeout=LOCK_NOTICE_S)
                break
            except Timeout:
                logger.info("Waiting for another process downloading %s %s (%s)", ref, variant, path)
    except OSError as exc:
        logger.debug("No download lock for %s %s (%s): %s", ref, variant, path, exc)
        lock = None
    try:
        yield
    finally:
        if lock is not None:
            lock.release()


def fetch_variant(ref: HubRef, variant: str, *, progress: bool = True) -> Path:
    """Make ``build/<variant>`` of ``ref`` available in the cache; return its folder.

    A fully cached variant costs no request. A variant that was verified once (a record exists, see
    ``_records``) is returned as it is even when files are missing, so that verification names them instead
    of them being quietly fetched again; a download that was interrupted before it ever completed is resumed.
    :raises SourceError / HubError: the variant cannot be fetched."""
    folder = _snapshot_folder(ref) / "build" / variant
    if record_path(ref, variant).is_file() and (path := cached_variant_path(ref, variant)) is not None:
        return path  # complete and verified once: no download, so no lock (verification follows)
    with variant_lock(ref, variant):
        path = cached_variant_path(ref, variant)
        if path is None and folder.is_dir() and record_path(ref, variant).is_file():
            return folder  # it was complete once: check it as it is
        return path or download_variant(ref, variant, progress=progress)


def blobs_folder(ref: HubRef) -> Path:
    """The folder the cached snapshot's file links lead into (``<repo cache>/blobs``)."""
    return storage_folder(ref.repo_id, ref.repo_type) / "blobs"


def cached_variants(ref: HubRef) -> dict[str, Path]:
    """The variant folders of ``ref`` downloaded into the cache, complete or not, by name."""
    build = _snapshot_folder(ref) / "build"
    return {p.name: p for p in sorted(build.iterdir()) if downloaded(p)} if build.is_dir() else {}
