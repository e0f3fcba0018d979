"""A cold load asks the Hub once per file: one listing of build/ (every file's hash), then one GET
per file, named and checked by that hash (kernels 0.19.1 sends a HEAD and a GET per file)."""

from __future__ import annotations

import json
from collections import Counter

import pytest

import kernel_plugins
from kernel_plugins import hub
from kernel_plugins.errors import HubError
from tests.support.hub import HubServer, make_kernel_repo
from tests.support.variant_dirs import metadata, unique_id


def many_files(server: HubServer, name: str, n: int) -> tuple[str, dict[str, str]]:
    files = {"__init__.py": "VALUE = 60\n", "metadata.json": json.dumps(metadata(unique_id("many"), name="many"))}
    files |= {f"part_{i:02d}.py": f"X = {i}\n" for i in range(n - len(files))}
    make_kernel_repo(server, f"kernels-community/{name}", variants={"torch-cpu": files, "torch-cuda": files})
    return f"kernels-community/{name}", files


def test_a_cold_load_of_sixty_files_makes_one_request_per_file_and_two_more(manager, hub_env):
    repo_id, files = many_files(hub_env, "cold-sixty", 60)
    assert kernel_plugins.load(repo_id, version=1, device="cpu").VALUE == 60
    requests = Counter((r.method, r.path.split("?")[0].rsplit("/", 1)[-1] if "/api/" in r.path else "file")
                       for r in hub_env.requests)
    assert requests == Counter({("GET", "refs"): 1, ("GET", "build"): 1, ("GET", "file"): 60})
    assert not [p for p in hub_env.paths("GET") if "/resolve/" in p and "/torch-cuda/" in p]


def test_a_file_that_does_not_hash_as_listed_is_not_kept(manager, hub_env, hf_cache):
    repo_id, _ = many_files(hub_env, "cold-mismatch", 3)
    ref = hub.resolve(repo_id, version=1)
    hub.list_variant_names(ref)
    listing = hub._cache.listing_path(ref)
    data = json.loads(listing.read_text())
    data["files"]["build/torch-cpu/__init__.py"]["blob_id"] = "0" * 40  # a stale or lying listing
    listing.write_text(json.dumps(data))
    with pytest.raises(HubError, match=r"__init__.py: the Hub sent a file that hashes to [0-9a-f]{40}, not to the git "
                                       r"blob 0{40} .* nothing of it was kept"):
        hub.download_variant(ref, "torch-cpu", progress=False)
    blobs = hub.blobs_folder(ref)
    assert not (blobs / ("0" * 40)).exists() and not list(blobs.glob("*.incomplete"))
    assert not (hf_cache / blobs.parent.name / "snapshots" / ref.sha / "build/torch-cpu/__init__.py").exists()
