"""huggingface_hub's cached file listing, read directly (no request, no API client)."""

from __future__ import annotations

import json

import pytest

from kernel_plugins import hub
from kernel_plugins.hub import cached_listing

SHA = "a" * 40
REF = hub.HubRef("acme/tree", "kernel", None, SHA)


def write_tree(hf_cache, content: str) -> None:
    trees = hub.storage_folder("acme/tree", "kernel") / "trees"
    trees.mkdir(parents=True)
    (trees / f"{SHA}.json").write_text(content)


def test_listing_is_read_without_the_api_client(hf_cache):
    entry = {"blob_id": "b" * 40, "lfs_sha256": None, "size": 3}
    write_tree(hf_cache, json.dumps({"format_version": 1, "files": {"build/torch-cpu/x.py": entry}}))
    assert hub.cached_tree_files(REF) == {"build/torch-cpu/x.py": entry}
    listing = cached_listing(REF)
    assert listing is not None and list(listing) == ["torch-cpu"]


@pytest.mark.parametrize(
    "content",
    ["[1, 2]", "{not json", json.dumps({"format_version": 2, "files": {}}),
     json.dumps({"format_version": 1, "files": {"a": 3}})],
)
def test_unknown_or_broken_listing_means_none(hf_cache, content):
    write_tree(hf_cache, content)
    assert hub.cached_tree_files(REF) is None
    assert cached_listing(REF) is None


def test_no_listing_cached(hf_cache):
    assert hub.cached_tree_files(REF) is None
