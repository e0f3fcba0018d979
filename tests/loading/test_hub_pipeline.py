"""The loading guarantees end to end on the loopback Hub: links, bytecode, swaps, pins."""

from __future__ import annotations

import errno
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

import kernel_plugins
from kernel_plugins import hub
from kernel_plugins.cli.main import main
from kernel_plugins.errors import (
    FallbackError,
    HubError,
    IntegrityError,
    LocalDiskError,
    OfflineError,
)
from kernel_plugins.layers import LockedLayerRepository
from tests.integrity.test_verified_import import plant_pyc
from tests.lock.conftest import KernelRepo, locked_download, snapshot_variant, write_pyproject
from tests.support.hub import HubServer, make_kernel_repo


def test_a_link_planted_in_the_cache_is_refused(
    manager: object, hub_env: HubServer, hf_cache: Path, tmp_path: Path,
    kernel_repo: Callable[..., KernelRepo], capsys: pytest.CaptureFixture[str],
) -> None:
    repo = kernel_repo(org="kernels-community")
    kernel_plugins.load(repo.repo_id, revision=repo.sha, device="cpu")
    variant = snapshot_variant(hf_cache, repo)
    evil = tmp_path / "evil.py"
    evil.write_text("HELPER = 'evil'\n")
    helper = variant / "sub" / "helper.py"
    helper.unlink()
    os.symlink(evil, helper)
    from kernel_plugins import registry

    sys.modules.pop(registry.module_name(repo.kernel_id), None)
    registry._kernels.pop(registry.module_name(repo.kernel_id), None)
    with pytest.raises(IntegrityError, match="sub/helper.py: a link that points outside"):
        kernel_plugins.load(repo.repo_id, revision=repo.sha, device="cpu")
    assert main(["verify", repo.repo_id, "--revision", repo.sha]) == 1
    assert "points outside" in capsys.readouterr().out
    assert main(["check", f"hub:{repo.repo_id}", "--revision", repo.sha]) == 1


def test_a_locked_load_refuses_a_planted_link_too(
    manager: object, hub_env: HubServer, hf_cache: Path, tmp_path: Path,
    kernel_repo: Callable[..., KernelRepo],
) -> None:
    repo, project, variant = locked_download(kernel_repo, tmp_path, hf_cache)
    (variant / "sub" / "helper.py").unlink()
    os.symlink("/etc/hostname", variant / "sub" / "helper.py")
    with pytest.raises(IntegrityError, match="points outside"):
        kernel_plugins.load(repo.repo_id, lockfile=project, device="cpu")


def test_bytecode_planted_in_the_cache_never_runs(
    manager: object, hub_env: HubServer, hf_cache: Path, kernel_repo: Callable[..., KernelRepo],
) -> None:
    repo = kernel_repo(org="kernels-community")
    from kernel_plugins.fetching import commit_offer
    from kernel_plugins.verification import fetch_checked

    fetch_checked(commit_offer(hub.resolve(repo.repo_id, version=1), ["torch-cpu"]), "torch-cpu", progress=False)
    variant = snapshot_variant(hf_cache, repo)
    plant_pyc(variant / "sub", "helper", "HELPER = 'evil'\n")
    assert kernel_plugins.load(repo.repo_id, revision=repo.sha, device="cpu").HELPER == "helper"


def test_shipped_bytecode_never_runs_and_check_flags_it(
    manager: object, hub_env: HubServer, hub_server: HubServer, tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    import importlib.util
    import py_compile

    src = tmp_path / "impl.py"
    src.write_text("VALUE = 'bytecode'\n")
    pyc = tmp_path / "impl.pyc"
    py_compile.compile(str(src), cfile=str(pyc),
                       invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH)
    cached = Path(importlib.util.cache_from_source("impl.py")).as_posix()
    meta = {"name": "shipped-pyc", "id": "_shipped_pyc_1a2b", "version": 1,
            "license": "Apache-2.0", "python-depends": [], "backend": {"type": "cpu"}}
    make_kernel_repo(hub_server, "kernels-community/shipped-pyc", variants={"torch-cpu": {
        "metadata.json": json.dumps(meta), "__init__.py": "from .impl import VALUE\n",
        "impl.py": "VALUE = 'source'\n", cached: pyc.read_bytes(),
    }})
    module = kernel_plugins.load("kernels-community/shipped-pyc", version=1, device="cpu")
    assert module.VALUE == "source"
    assert main(["check", "kernels-community/shipped-pyc"]) == 1
    assert "ships Python bytecode" in capsys.readouterr().out


def test_a_file_swapped_after_verification_does_not_run(
    manager, hub_env: HubServer, hf_cache: Path, kernel_repo: Callable[..., KernelRepo],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    repo = kernel_repo(org="kernels-community")
    original = manager.load_kernel  # type: ignore[attr-defined]

    def swap(device, load):
        helper = load.path / "sub" / "helper.py"
        helper.unlink()  # a link into the blobs: replace it with a plain file
        helper.write_text("HELPER = 'swapped'\n")
        return original(device, load)

    monkeypatch.setattr(manager, "load_kernel", swap)
    module = kernel_plugins.load(repo.repo_id, version=1, device="cpu")
    assert module.HELPER == "helper"


def test_an_exact_pin_never_falls_back_to_the_reference(
    manager, hub_env: HubServer, hub_server: HubServer, tmp_path: Path,
) -> None:
    meta = {"name": "activation", "id": "_act_cuda_only_pin", "version": 1,
            "license": "Apache-2.0", "python-depends": [], "backend": {"type": "cuda"}}
    git = make_kernel_repo(hub_server, "kernels-community/activation", variants={
        "torch-cuda": {"metadata.json": json.dumps(meta), "__init__.py": ""}})
    sha = git.head()
    with pytest.raises(FallbackError) as info:
        kernel_plugins.load("activation", revision=sha, device="cpu")
    text = str(info.value)
    assert "no build variant" in text and "exact pin" in text and "Sources tried" in text
    # version=N is an API selector: the reference implements version 1, so it stands in
    with pytest.warns(UserWarning, match="portable reference kernel"):
        module = kernel_plugins.load("activation", version=1, device="cpu")
    assert module.__kernel_provenance__.source == "reference"
    # ... but not for an API version it does not implement
    make_kernel_repo(hub_server, "kernels-community/activation", variants={
        "torch-cuda": {"metadata.json": json.dumps({**meta, "version": 2}), "__init__.py": ""}},
        branches=("v2",))
    with pytest.raises(FallbackError, match="implements API version 1, not the version=2"):
        kernel_plugins.load("activation", version=2, device="cpu")
    # a lock file is an exact pin too, through layers as well
    project = write_pyproject(tmp_path / "proj", {"kernels-community/activation": 1})
    assert main(["lock", str(project)]) == 0
    with pytest.raises(FallbackError, match="lockfile="):
        kernel_plugins.load("activation", lockfile=project, device="cpu")
    repo = LockedLayerRepository("kernels-community/activation", layer_name="SiluAndMul",
                                 lockfile=project / "kernels.lock")
    with pytest.raises(FallbackError):
        kernel_plugins.load(repo.target(), device="cpu", **repo.load_options())


def test_offline_with_nothing_cached_says_so(
    manager, hf_cache: Path, hub_offline: Callable[[bool], None],
) -> None:
    hub_offline(True)
    with pytest.raises(OfflineError, match="HF_HUB_OFFLINE=1 is set and nothing of acme/none"):
        kernel_plugins.load("acme/none", device="cpu", trust_remote_code=True)
    with pytest.warns(UserWarning, match="HF_HUB_OFFLINE=1 is set and nothing of it is cached"):
        module = kernel_plugins.load("activation", device="cpu")
    assert module.__kernel_provenance__.notes == (
        "reference fallback: HF_HUB_OFFLINE=1 is set and nothing of it is cached",
    )


@pytest.mark.parametrize("code", [errno.ENOSPC, errno.EROFS, errno.EACCES])
def test_local_disk_errors_are_local_and_never_fall_back(
    manager, hub_env: HubServer, hub_server: HubServer, monkeypatch: pytest.MonkeyPatch,
    hf_cache: Path, code: int,
) -> None:
    meta = {"name": "rmsnorm", "id": "_rms_disk_err", "version": 1,
            "license": "Apache-2.0", "python-depends": [], "backend": {"type": "cpu"}}
    make_kernel_repo(hub_server, "kernels-community/rmsnorm", variants={
        "torch-cpu": {"metadata.json": json.dumps(meta), "__init__.py": ""}})
    import huggingface_hub.file_download as fd

    def failing(*args: object, **kwargs: object) -> None:
        raise OSError(code, os.strerror(code), str(hf_cache / "blobs" / "x.incomplete"))

    monkeypatch.setattr(fd, "http_get", failing)
    with pytest.raises(LocalDiskError) as info:
        kernel_plugins.load("rmsnorm", version=1, device="cpu")
    text = str(info.value)
    assert os.strerror(code) in text and str(hf_cache) in text and "not a Hub problem" in text
    assert not isinstance(info.value, HubError)


def test_verify_goes_on_after_a_hostile_entry(
    manager, hub_env: HubServer, hf_cache: Path, tmp_path: Path,
    kernel_repo: Callable[..., KernelRepo], capsys: pytest.CaptureFixture[str],
) -> None:
    bad, good = kernel_repo(org="kernels-community"), kernel_repo(org="kernels-community")
    project = write_pyproject(tmp_path / "proj", {bad.repo_id: 1, good.repo_id: 1})
    assert main(["lock", str(project)]) == 0
    assert main(["download", str(project)]) == 0
    meta = snapshot_variant(hf_cache, bad) / "metadata.json"
    meta.unlink()
    meta.write_text("[" * 100_000 + "]" * 100_000)
    storage = hf_cache / f"kernels--{bad.repo_id.replace('/', '--')}"
    trees = storage / "trees"
    for listing in trees.iterdir():
        listing.write_text("{" * 50_000)
    capsys.readouterr()
    assert main(["verify", str(project), "--json"]) == 1
    rows = {r["repo_id"]: r for r in json.loads(capsys.readouterr().out)["variants"]
            if r["variant"] == "torch-cpu"}
    assert rows[bad.repo_id]["status"] == "failed"
    assert "nested too deeply" in rows[bad.repo_id]["detail"]
    assert rows[good.repo_id]["status"] == "ok"


def test_a_nested_lock_file_is_a_clear_error(manager, tmp_path: Path) -> None:
    from kernel_plugins.errors import LockfileError

    lock = tmp_path / "kernels.lock"
    lock.write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(LockfileError, match="nested too deeply"):
        kernel_plugins.load("activation", lockfile=lock, device="cpu")
    lock.write_bytes(b" " * (17 << 20))
    with pytest.raises(LockfileError, match="larger than"):
        kernel_plugins.load("activation", lockfile=lock, device="cpu")
