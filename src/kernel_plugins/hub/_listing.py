"""The published hashes of a commit's build variants: from huggingface_hub's cache or the Hub.

Both return ``variant -> {path inside the variant -> FileHash}`` for the files under
``build/`` (bytecode excluded), the form :mod:`kernel_plugins.integrity` compares with.
"""

from __future__ import annotations

from kernel_plugins.errors import HubError
from kernel_plugins.integrity.varianthash import FileHash, listing_entry_hash, split_listing

from ._cache import cached_tree_files
from ._download import build_tree
from ._values import HubRef


def cached_listing(ref: HubRef) -> dict[str, dict[str, FileHash]] | None:
    """The file listing of ``ref.sha`` that huggingface_hub cached, split by variant; no request.

    :return: variant -> files, or None when no usable listing is cached.
    """
    files = cached_tree_files(ref)
    if files is None:
        return None
    entries: list[tuple[str, FileHash]] = []
    for repo_path, info in files.items():
        fh = listing_entry_hash(info.get("blob_id"), info.get("lfs_sha256"), info.get("size"))
        if fh is None:
            return None
        entries.append((repo_path, fh))
    return split_listing(entries)


def hub_listing(ref: HubRef) -> dict[str, dict[str, FileHash]]:
    """The file listing of ``build/`` at ``ref.sha`` from the Hub, split by variant.

    One recursive tree request (paged by huggingface_hub for large repositories).

    :raises SourceError: the commit has no ``build/`` folder.
    :raises HubError: the Hub could not be reached, or an entry has no usable hash.
    """
    from huggingface_hub import RepoFile

    listing = build_tree(
        ref,
        "listing files",
        f"{ref.repo_id} has no build/ folder at commit {ref.sha}; a kernel repository keeps one "
        "folder per build variant under build/.",
        recursive=True,
    )
    entries: list[tuple[str, FileHash]] = []
    for item in listing:
        if not isinstance(item, RepoFile):
            continue
        lfs = getattr(item, "lfs", None)
        fh = listing_entry_hash(item.blob_id, getattr(lfs, "sha256", None), item.size)
        if fh is None:
            raise HubError(
                f"The Hub listed {item.path} of {ref.repo_id}@{ref.sha} without a git blob id "
                "or LFS sha256, so it cannot be hashed; is the endpoint a Hugging Face Hub?"
            )
        entries.append((item.path, fh))
    return split_listing(entries)
