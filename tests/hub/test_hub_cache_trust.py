"""The download cache is trusted only where no other user could have written it (issue 36):
a repository folder another user owns or may write is refused, naming it and the fix; a ref,
file listing or record of verified files that is not a private regular file is not believed;
a ref is read as every other cache file (no FIFO waited on, no huge file read whole)."""

from __future__ import annotations

import hashlib
import json
import os
import sys
from pathlib import Path

import pytest

import kernel_plugins
from kernel_plugins import hub
from kernel_plugins.errors import TrustError
from tests.support.hub import HubServer, make_kernel_repo
from tests.support.owners import give_to_another_user
from tests.support.threads import within

GOOD, EVIL = "VALUE = 1\n", "import sys\nsys.modules['__main__'].EVIL_RAN = True\nVALUE = 666\n"


def publish(server: HubServer, name: str) -> str:
    meta = {"name": name, "id": f"_{name.replace('-', '_')}", "version": 1, "license": "Apache-2.0",
            "python-depends": [], "backend": {"type": "cpu"}}
    make_kernel_repo(server, f"kernels-community/{name}", variants={
        "torch-cpu": {"metadata.json": json.dumps(meta), "__init__.py": GOOD}})
    return f"kernels-community/{name}"


def forget(module: object) -> None:
    name = module.__name__  # type: ignore[attr-defined]
    kernel_plugins.registry._kernels.pop(name, None)
    for key in [k for k in sys.modules if k == name or k.startswith(name + ".")]:
        del sys.modules[key]


def git_sha1(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def plant(folder: Path, ref: hub.HubRef) -> list[Path]:
    """Rewrite the cached ``__init__.py`` with code of another user's, and the cached listing
    and record of verified files to match it (as the attack did); returns those files."""
    init = folder / "__init__.py"
    init.unlink()
    init.write_bytes(EVIL.encode())
    listing = hub._cache.listing_path(ref)  # the listing of build/ that loading kept
    record = hub.record_path(ref, "torch-cpu")
    entry = {"blob_id": git_sha1(EVIL.encode()), "size": len(EVIL)}
    if listing.exists():
        data = json.loads(listing.read_text())
        data["files"]["build/torch-cpu/__init__.py"] = entry
        listing.write_text(json.dumps(data))
    if record.exists():
        data = json.loads(record.read_text())
        data["files"]["__init__.py"] = {"kind": "git", "hex": entry["blob_id"], "size": len(EVIL)}
        record.write_text(json.dumps(data))
    return [p for p in (init, listing, record) if p.exists()]


@pytest.mark.parametrize("how", ["another user's folder", "group-writable folder"])
def test_a_repository_folder_others_could_write_is_refused_naming_it_and_the_fix(
    manager: object, hub_env: HubServer, how: str
) -> None:
    repo = publish(hub_env, f"cache-folder-{how.split()[0].replace(chr(39), '')}")
    module = kernel_plugins.load(repo, version=1, device="cpu")
    folder = hub.storage_folder(repo, "kernel")
    forget(module)
    plant(Path(module.__kernel_provenance__.path), hub.resolve(repo, version=1))
    if how == "group-writable folder":
        folder.chmod(0o775)
    else:
        give_to_another_user(folder)
    with pytest.raises(TrustError) as e:
        kernel_plugins.load(repo, version=1, device="cpu")
    assert f"{folder} in the download cache is not private: " in str(e.value)
    assert ("owned by user id 4321" if how == "another user's folder" else "group or others may write it") in str(e.value)
    assert "Delete it to download them again, or set KERNELS_CACHE to a folder only you can write" in str(e.value)
    assert not hasattr(sys.modules["__main__"], "EVIL_RAN")
    with pytest.raises(TrustError, match="is not private"):  # and nothing is downloaded into it
        hub.download_variant(hub.resolve(repo, version=1), "torch-cuda")


@pytest.mark.parametrize("how", ["another user's files", "writable by others"])
def test_a_listing_or_record_others_could_write_is_not_believed(
    manager: object, hub_env: HubServer, how: str
) -> None:
    repo = publish(hub_env, f"cache-files-{how.split()[0].replace(chr(39), '')}")
    module = kernel_plugins.load(repo, version=1, device="cpu")
    forget(module)
    ref = hub.resolve(repo, version=1)
    planted = plant(Path(module.__kernel_provenance__.path), ref)
    assert len(planted) == 3  # the file, the listing and the record
    for path in planted[1:]:
        path.chmod(0o666) if how == "writable by others" else give_to_another_user(path)
    for read in (hub.cached_tree_files, hub.cached_listing, lambda r: hub.read_record(r, "torch-cpu")):
        with pytest.raises(TrustError, match=f"{hub.storage_folder(repo, 'kernel')}/.* in the download cache is not private"):
            read(ref)
    with pytest.raises(TrustError, match="in the download cache is not private"):  # a load too
        kernel_plugins.load(repo, version=1, device="cpu")
    assert not hasattr(sys.modules["__main__"], "EVIL_RAN")


def test_a_ref_is_read_as_a_cache_file_a_fifo_or_huge_one_is_not_waited_on_or_read_whole(
    hub_env: HubServer, hub_offline: object
) -> None:
    repo = publish(hub_env, "cache-refs")
    sha = hub.resolve(repo, version=1).sha
    refs = hub.storage_folder(repo, "kernel") / "refs"
    (refs / "v1").unlink()
    os.mkfifo(refs / "v1")  # online, the ref is compared before it is written
    assert within(30, lambda: hub.resolve(repo, version=1), what="a FIFO ref was waited on").sha == sha
    assert (refs / "v1").read_text() == sha  # replaced by the Hub's answer
    (refs / "v1").write_text(sha + " " * (1 << 20))  # a valid sha, then a MiB of blanks
    (refs / "main").unlink(missing_ok=True)
    os.mkfifo(refs / "main")
    hub_offline(True)  # type: ignore[operator]
    assert within(30, lambda: hub._cache._read_ref(repo, "kernel", "main"), what="FIFO ref") is None
    assert hub._cache._cached_versions(repo, "kernel") == {}
    (refs / "v1").write_text(sha)
    (refs / "v1").chmod(0o666)  # a private file only
    assert hub._cache._cached_versions(repo, "kernel") == {}
    (refs / "v1").chmod(0o644)
    assert hub._cache._cached_versions(repo, "kernel") == {1: sha}


def test_a_fifo_at_the_cached_listing_is_never_opened_by_huggingface_hub_either(hub_env: HubServer) -> None:
    """A listing this code cannot use is handed to huggingface_hub only as a private regular file:
    its reader opens the path as it is and would wait on a FIFO forever."""
    repo = publish(hub_env, "cache-fifo-listing")
    ref = hub.resolve(repo, version=1)
    trees = hub.storage_folder(repo, "kernel") / "trees"
    trees.mkdir(parents=True)
    os.mkfifo(trees / f"{ref.sha}.json")
    assert within(30, lambda: hub.list_variant_names(ref), what="a FIFO listing was opened") == ["torch-cpu"]
