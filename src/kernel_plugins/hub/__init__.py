"""The Hub source: resolve a kernel repository to a commit and fetch one build variant.

A kernel repository (repo type ``kernel``; ``model`` for older ones, only when asked for) keeps one folder per build
variant under ``build/``. This package turns what a user asked for (a revision, a version ``N`` meaning branch
``vN``, or nothing) into a :class:`HubRef` pinned to a commit sha, lists the variant names at that commit, and
downloads the files of exactly one variant into the cache folder (:func:`cache_dir`).

huggingface_hub is imported inside the functions, never when this package is imported; its settings (``ENDPOINT``,
``HF_HUB_OFFLINE``, ``HF_HUB_CACHE``) and ``KERNELS_CACHE`` are read at call time. With ``HF_HUB_OFFLINE=1``
everything is answered from the cache without a request, and a commit sha already in the cache never causes a
request either.

The parts, one job each:

- ``_values``: :class:`HubRef` and the checks of repo ids, revisions, versions, variants;
- ``_cache``: huggingface_hub's settings and cache layout, ``refs/``, cached file
  listings, and resolution from the cache alone (offline);
- ``_resolve``: :func:`resolve` and :func:`versions` online;
- ``_publishers``: whether the Hub marks an organisation a trusted kernel publisher;
- ``_download``: listing, finding and downloading one build variant;
- ``_fetch``: one download per variant at a time (a file lock), the cached folder;
- ``_inventory``: the kernel repositories and commits the cache holds (``cache ls``);
- ``_listing``: the published hashes of a commit's variants (cached listing or the Hub);
- ``_records``: records of variants verified once, beside the cache;
- ``_errors``: huggingface_hub / HTTP errors mapped to errors that say how to fix them.
"""

from __future__ import annotations

from ._cache import (
    cache_dir,
    cached_tree_files,
    hub_endpoint,
    is_offline,
    offline,
    request_args,
    snapshot_blobs,
    storage_folder,
)
from ._download import cached_variant_path, download_file, download_variant, list_variant_names
from ._errors import is_not_found, map_error
from ._fetch import blobs_folder, cached_variants, fetch_variant, variant_lock
from ._inventory import cached_kernels
from ._listing import cached_listing, hub_listing
from ._publishers import trusted_publisher
from ._records import read_record, record_path, write_record
from ._resolve import resolve, versions
from ._values import REPO_TYPES, HubRef, RepoType, validate_repo_id

__all__ = ["REPO_TYPES", "RepoType", "HubRef", "validate_repo_id", "resolve", "versions", "trusted_publisher",
           "list_variant_names", "download_variant", "download_file", "cached_variant_path", "cache_dir",
           "hub_endpoint", "request_args", "is_offline", "offline", "snapshot_blobs", "is_not_found", "map_error",
           "storage_folder", "cached_tree_files", "cached_listing", "hub_listing", "fetch_variant", "variant_lock",
           "blobs_folder", "cached_variants", "read_record", "write_record", "record_path", "repair_hint",
           "cached_kernels"]


def repair_hint(ref: HubRef, *, pinned: bool = False) -> str:
    """How to repair a cached variant of ``ref`` that failed its check."""
    folder = storage_folder(ref.repo_id, ref.repo_type)
    hint = (f"To repair: delete the cached copy of {ref.repo_id} (rm -rf '{folder}'; its blobs must "
            "go too, or they are reused) and load again to download it afresh (or run "
            "`kernel-plugins download PROJECT_DIR`).")
    if pinned:
        hint += (" If a fresh download fails the same way, the published files differ from the ones "
                 "the lock pinned: find out why before re-locking.")
    return hint
