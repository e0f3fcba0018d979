"""Integrity of build variants: what runs is what was verified. ``_walk``: the one walker; ``_hash``: the one hasher;
``snapshot``: a variant read once, hashed as read; ``digest``: ``metadata.json``'s per-file digest; ``varianthash``:
the ``git_lfs_concat`` hash locks pin; ``verify``: a snapshot checked against a listing, a lock and a digest.
"""

from __future__ import annotations

from ._hash import Hasher, git_blob_id
from ._walk import is_bytecode, walk_variant
from .digest import (
    DIGEST_ALGORITHMS,
    EXCLUDED_TOP_LEVEL,
    DigestMismatch,
    check_digest,
    verify_digest,
)
from .snapshot import SnapshotFile, VariantSnapshot, read_small_file, read_variant
from .varianthash import (
    HASH_TYPE,
    FileHash,
    FileMismatch,
    compare_files,
    is_hashed_path,
    listing_entry_hash,
    split_listing,
    variant_hash,
)
from .verify import VariantCheck, verify_snapshot

__all__ = ["DIGEST_ALGORITHMS", "EXCLUDED_TOP_LEVEL", "HASH_TYPE", "DigestMismatch", "FileHash", "Hasher",
           "FileMismatch", "SnapshotFile", "VariantCheck", "VariantSnapshot", "check_digest", "compare_files",
           "git_blob_id", "is_bytecode", "is_hashed_path", "listing_entry_hash", "read_small_file", "read_variant",
           "split_listing", "variant_hash", "verify_digest", "verify_snapshot", "walk_variant"]
