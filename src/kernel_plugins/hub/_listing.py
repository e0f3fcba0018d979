"""The published hashes of a commit's build variants: from the cache or the Hub.

Both return ``variant -> {path inside the variant -> FileHash}`` for the files under
``build/`` (bytecode excluded), the form :mod:`kernel_plugins.integrity` compares with.
"""

from __future__ import annotations

from typing import Any

from kernel_plugins.errors import HubError
from kernel_plugins.integrity.varianthash import FileHash, listing_entry_hash, split_listing

from ._cache import cached_tree_files
from ._download import list_files
from ._values import HubRef


def cached_listing(ref: HubRef) -> dict[str, dict[str, FileHash]] | None:
    """The file listing of ``ref.sha`` kept in the cache, split by variant (variant -> files); no request.
    None when no usable listing is cached."""
    files = cached_tree_files(ref)
    return None if files is None else _split(ref, files, strict=False)


def hub_listing(ref: HubRef) -> dict[str, dict[str, FileHash]]:
    """The file listing of ``build/`` at ``ref.sha`` from the Hub, split by variant: one recursive tree
    request (paged by huggingface_hub; the listing is kept in the cache). :raises SourceError: the commit has
    no ``build/`` folder. :raises HubError: the Hub could not be reached, or an entry has no usable hash."""
    listing = _split(ref, list_files(ref), strict=True)
    assert listing is not None
    return listing


def _split(ref: HubRef, files: dict[str, dict[str, Any]], *, strict: bool) -> dict[str, dict[str, FileHash]] | None:
    entries: list[tuple[str, FileHash]] = []
    for path, info in files.items():
        fh = listing_entry_hash(info.get("blob_id"), info.get("lfs_sha256"), info.get("size"))
        if fh is None and strict:
            raise HubError(f"The Hub listed {path} of {ref.repo_id}@{ref.sha} without a git blob id or LFS sha256, "
                           "so it cannot be hashed; is the endpoint a Hugging Face Hub?")
        if fh is None:
            return None
        entries.append((path, fh))
    return split_listing(entries)
