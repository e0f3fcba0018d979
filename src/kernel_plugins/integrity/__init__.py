"""Integrity of build variants: what runs is what was verified.

One package holds every piece, each with one job:

- ``_walk``: the one walker of a variant folder (links seen and checked, bytecode apart);
- ``_hash``: the one hasher (git blob id, sha256, sha512 in a single read);
- ``snapshot``: read a variant once, into memory or private copies, hashing as it reads;
- ``digest``: the per-file ``digest`` of ``metadata.json``;
- ``varianthash``: the ``git_lfs_concat`` hash lock files pin, and per-file comparison;
- ``verify``: a snapshot checked against a listing, a lock and a digest.
"""

from __future__ import annotations

from ._hash import git_blob_id
from ._walk import is_bytecode, walk_variant
from .digest import (
    DIGEST_ALGORITHMS,
    EXCLUDED_TOP_LEVEL,
    DigestMismatch,
    check_digest,
    compute_digest,
    digest_file_paths,
    hash_file,
    verify_digest,
)
from .snapshot import SnapshotFile, VariantSnapshot, read_small_file, read_variant
from .varianthash import (
    HASH_TYPE,
    FileHash,
    FileMismatch,
    compare_files,
    hash_variant_dir,
    is_hashed_path,
    listing_entry_hash,
    split_listing,
    variant_hash,
)
from .verify import VariantCheck, verify_snapshot

__all__ = ["DIGEST_ALGORITHMS", "EXCLUDED_TOP_LEVEL", "HASH_TYPE", "DigestMismatch", "FileHash",
           "FileMismatch", "SnapshotFile", "VariantCheck", "VariantSnapshot", "check_digest",
           "compare_files", "compute_digest", "digest_file_paths", "git_blob_id", "hash_file",
           "hash_variant_dir", "is_bytecode", "is_hashed_path", "listing_entry_hash",
           "read_small_file", "read_variant", "split_listing", "variant_hash", "verify_digest",
           "verify_snapshot", "walk_variant"]
