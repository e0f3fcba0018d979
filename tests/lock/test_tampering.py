"""A changed, truncated, added or removed file in the cache is refused before import."""

from __future__ import annotations

import json
import shutil
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

import kernel_plugins
from kernel_plugins import hub
from kernel_plugins.cli.main import main
from kernel_plugins.errors import IntegrityError
from kernel_plugins.fetching import commit_offer
from kernel_plugins.integrity import git_blob_id
from kernel_plugins.registry import module_name
from kernel_plugins.verification import fetch_checked
from tests.lock.conftest import KernelRepo, locked_download, snapshot_variant, write_pyproject
from tests.support.hub import HubServer


def change_byte(variant: Path) -> tuple[str, bytes | None]:
    data = bytearray((variant / "data.bin").read_bytes())
    data[1000] ^= 0xFF
    (variant / "data.bin").write_bytes(bytes(data))
    return "data.bin", bytes(data)


def truncate(variant: Path) -> tuple[str, bytes | None]:
    with open(variant / "data.bin", "r+b") as f:
        f.truncate(100)
    return "data.bin", (variant / "data.bin").read_bytes()


def add_file(variant: Path) -> tuple[str, bytes | None]:
    (variant / "evil.py").write_text("import os\n")
    return "evil.py", b"import os\n"


def remove_file(variant: Path) -> tuple[str, bytes | None]:
    (variant / "sub" / "helper.py").unlink()
    return "sub/helper.py", None


TAMPERS = {"change-byte": change_byte, "truncate": truncate, "add": add_file, "remove": remove_file}
LOCK_LINE = {
    "change-byte": "data.bin: content changed (expected git blob {old}",
    "truncate": "data.bin: content changed (expected git blob {old}",
    "add": "evil.py: unexpected file, not part of the published variant (found git blob {new}",
    "remove": "sub/helper.py: missing (expected git blob {old}",
}
DIGEST_LINE = {
    "change-byte": "metadata digest: data.bin: content does not match the digest",
    "truncate": "metadata digest: data.bin: content does not match the digest",
    "add": "metadata digest: evil.py: present in the variant folder but not listed",
    "remove": "metadata digest: sub/helper.py: listed in the digest but missing",
}


@pytest.mark.parametrize("how", list(TAMPERS))
def test_tampered_cache_is_refused_by_the_lock_hash(
    manager: object, hub_env: HubServer, hf_cache: Path, tmp_path: Path, how: str,
    kernel_repo: Callable[..., KernelRepo], capsys: pytest.CaptureFixture[str],
) -> None:
    repo = kernel_repo(org="kernels-community")
    project = write_pyproject(tmp_path / "proj", {repo.repo_id: 1})
    assert main(["lock", str(project)]) == 0
    assert main(["download", str(project)]) == 0
    pinned = json.loads((project / "kernels.lock.variants").read_text())[0]["variants"]["torch-cpu"]
    variant = snapshot_variant(hf_cache, repo)
    rel, new = TAMPERS[how](variant)
    capsys.readouterr()

    with pytest.raises(IntegrityError) as info:
        kernel_plugins.load(repo.repo_id, lockfile=project, device="cpu")
    message = str(info.value)
    old = git_blob_id(repo.cpu_files[rel]) if rel in repo.cpu_files else ""
    assert LOCK_LINE[how].format(old=old, new=git_blob_id(new or b"")) in message
    if new is not None and how != "add":
        assert f"found git blob {git_blob_id(new)}" in message
    assert f"pins {pinned['hash']}, the files on disk hash to sha256-" in message
    assert "nothing from it was imported" in message
    assert f"rm -rf '{hf_cache / variant.relative_to(hf_cache).parts[0]}'" in message
    assert module_name(repo.kernel_id) not in sys.modules

    assert main(["verify", str(project)]) == 1
    assert f"{repo.repo_id} torch-cpu: FAILED: {rel}" in capsys.readouterr().out
    assert main(["verify", str(project), "--json"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert (report["checked"], report["failed"]) == (1, 1)
    (row,) = [r for r in report["variants"] if r["status"] != "skipped"]
    assert (row["repo_id"], row["variant"], row["status"]) == (repo.repo_id, "torch-cpu", "failed")
    assert row["detail"].startswith(rel)

    # the repair the message describes works
    shutil.rmtree(hf_cache / variant.relative_to(hf_cache).parts[0])
    assert kernel_plugins.load(repo.repo_id, lockfile=project, device="cpu").VALUE == 1


@pytest.mark.parametrize("how", list(TAMPERS))
def test_tampered_cache_is_refused_by_the_metadata_digest(
    manager: object, hub_env: HubServer, hf_cache: Path, how: str,
    kernel_repo: Callable[..., KernelRepo],
) -> None:
    repo = kernel_repo(org="kernels-community", digest=True)
    fetch_checked(commit_offer(hub.resolve(repo.repo_id, version=1), ["torch-cpu"]), "torch-cpu", progress=False)
    variant = snapshot_variant(hf_cache, repo)
    storage = hf_cache / variant.relative_to(hf_cache).parts[0]
    # leave the digest as the only complete reference: no cached listing and, except for a
    # removed file, no record of the verified download (a file missing from a variant that
    # was never recorded complete is an interrupted download, which is resumed instead)
    shutil.rmtree(storage / "trees")
    if how != "remove":
        shutil.rmtree(storage / "kernel-plugins")
    TAMPERS[how](variant)
    hub_env.clear_requests()

    with pytest.raises(IntegrityError) as info:
        kernel_plugins.load(repo.repo_id, revision=repo.sha, device="cpu")
    message = str(info.value)
    assert DIGEST_LINE[how] in message
    if how in ("change-byte", "truncate"):
        assert "(recorded " in message and ", file hashes to " in message
    assert "To repair: delete the cached copy" in message
    assert module_name(repo.kernel_id) not in sys.modules
    # the deleted listing is asked for again (one tree request); nothing is downloaded again
    assert [r.path.split("?")[0].rsplit("/", 1)[-1] for r in hub_env.requests] == ["build"]


def test_listing_changed_along_with_the_file_is_still_caught_by_the_lock(
    manager: object, hub_env: HubServer, hf_cache: Path, tmp_path: Path,
    kernel_repo: Callable[..., KernelRepo],
) -> None:
    repo, project, variant = locked_download(kernel_repo, tmp_path, hf_cache)
    _, new = change_byte(variant)
    storage = hf_cache / variant.relative_to(hf_cache).parts[0]
    tree_file, = (storage / "trees").glob(f"{repo.sha}*.json")  # kernel-plugins' own listing of the commit
    tree = json.loads(tree_file.read_text())
    tree["files"]["build/torch-cpu/data.bin"]["blob_id"] = git_blob_id(new or b"")
    tree_file.write_text(json.dumps(tree))
    shutil.rmtree(storage / "kernel-plugins")

    with pytest.raises(IntegrityError) as info:
        kernel_plugins.load(repo.repo_id, lockfile=project, device="cpu")
    assert "does not match the lock's hash either" in str(info.value)
    assert "variant hash:" in str(info.value)
    assert module_name(repo.kernel_id) not in sys.modules
