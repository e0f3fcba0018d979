"""Safety rules of locked loads, each tested without the loopback Hub server (a fake Hub,
:class:`tests.loading.test_safety_rules.FakeHub`); each test fails when its rule is
removed from the code."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

import kernel_plugins
from kernel_plugins import lock
from kernel_plugins.cli.main import main
from kernel_plugins.errors import FallbackError, IntegrityError
from kernel_plugins.integrity import variant_hash
from kernel_plugins.lock import _discovery
from tests.loading.test_safety_rules import CODE, FakeHub, FakeRepo
from tests.signatures.test_lock_signers import CachingFakeHub
from tests.support.owners import give_to_another_user
from tests.support.variant_dirs import digest_of


@pytest.fixture
def fake_hub(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> FakeHub:
    return CachingFakeHub(tmp_path, monkeypatch)


def kernels_lock(folder: Path, repo: FakeRepo, *, hashes: bool = True, sha: str | None = None) -> Path:
    """``folder/kernels.lock`` in kernels' format pinning ``repo`` (v1), with its hashes."""
    variants = {v: lock.VariantLock(variant_hash(repo.listing(v))) for v in repo.published} if hashes else {}
    folder.mkdir(parents=True, exist_ok=True)
    path = lock.write_lockfile(folder, [lock.KernelLock(repo.repo_id, sha or repo.sha, variants, version=1)])
    if not hashes:
        lock.hashes_path(path).unlink()
    return path


@pytest.mark.parametrize("hashes", [True, False], ids=["with hashes", "commit only"])
def test_a_lock_is_an_exact_pin_no_reference_stands_in(
    manager: object, fake_hub: FakeHub, tmp_path: Path, hashes: bool
) -> None:
    repo = fake_hub.add("kernels-community/activation", {"torch-cuda": CODE})  # a reference exists
    path = kernels_lock(tmp_path, repo, hashes=hashes)
    with pytest.raises(FallbackError, match=f"lockfile='{path}' is an exact pin") as info:
        kernel_plugins.load("kernels-community/activation", lockfile=path, device="cpu")
    assert "reference kernel 'activation'" in str(info.value) and "not used" in str(info.value)
    assert fake_hub.fetched == []


def test_a_cache_changed_consistently_is_refused_by_the_hashes_beside_kernels_lock(
    manager: object, fake_hub: FakeHub, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Files, metadata digest and listing rewritten together pass every check but the lock's hashes."""
    repo = fake_hub.add("kernels-community/rule-sidecar", {"torch-cpu": CODE})
    path = kernels_lock(tmp_path, repo)
    files = repo.published["torch-cpu"]
    files["__init__.py"] = b"VALUE = 666\n"
    meta = json.loads(files["metadata.json"])
    meta["digest"] = digest_of({k: v for k, v in files.items() if k != "metadata.json"})
    files["metadata.json"] = json.dumps(meta).encode()
    repo.served["torch-cpu"] = dict(files)  # the cache, its listing and its digest all agree
    with pytest.raises(IntegrityError, match="variant hash: .* pins sha256-"):
        kernel_plugins.load(repo.repo_id, lockfile=path, device="cpu")
    assert main(["verify", str(tmp_path)]) == 1
    assert "variant hash: " in capsys.readouterr().out
    lock.hashes_path(path).unlink()  # kernels' lock alone pins the commit only, and says so
    module = kernel_plugins.load(repo.repo_id, lockfile=path, device="cpu")
    assert module.VALUE == 666
    assert "the lock pins the commit only (no variant hashes)" in module.__kernel_provenance__.notes
    assert main(["verify", str(tmp_path)]) == 0
    assert "OK sha256-" in (out := capsys.readouterr().out)
    assert f"({path} pins the commit only: no hash or signer of torch-cpu was checked)" in out


def test_the_lock_that_was_checked_is_the_one_loaded(
    manager: object, fake_hub: FakeHub, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue #26: a found lock was checked, then opened again to be read; a file swapped in
    between (one of another user, which the check refuses) chose the commit."""
    monkeypatch.setattr(_discovery, "_temp_roots", lambda: [])
    repo = fake_hub.add("kernels-community/rule-swap", {"torch-cpu": CODE})
    root = tmp_path / "proj"
    (root / ".git").mkdir(parents=True)
    path = kernels_lock(root, repo)
    found = lock.find_lockfile(str(root / "model.py"), what="X")
    planted = kernels_lock(tmp_path / "planted", repo, sha="f" * 40)
    for name in (planted, lock.hashes_path(planted)):
        give_to_another_user(name)
        os.replace(name, root / name.name)
    assert json.loads(path.read_text())[0]["lock"]["commit"] == "f" * 40
    module = kernel_plugins.load(repo.repo_id, lockfile=found, device="cpu")
    assert module.__kernel_provenance__.sha == repo.sha


LAYERED = {"__init__.py": "from . import layers\nVALUE = 7\n",
           "layers.py": "from torch import nn\n\n\nclass Double(nn.Module):\n    def forward(self, x):\n        return 2 * x\n"}


@pytest.mark.parametrize("form", ["kernels", "kernels + hashes", "earlier"])
def test_every_locked_path_reads_both_formats(
    manager: object, fake_hub: FakeHub, tmp_path: Path, form: str
) -> None:
    import kernel_plugins.compat.kernels as kernels
    from kernel_plugins.layers import LockedLayerRepository

    repo = fake_hub.add("kernels-community/rule-formats", {"torch-cpu": LAYERED})
    if form == "earlier":
        (tmp_path / "kernels.lock").write_text(json.dumps([lock.KernelLock(repo.repo_id, repo.sha, {
            "torch-cpu": lock.VariantLock(variant_hash(repo.listing("torch-cpu")))}).to_json()]))
        path = tmp_path / "kernels.lock"
    else:
        path = kernels_lock(tmp_path, repo, hashes=form != "kernels")
    core = LockedLayerRepository(repo.repo_id, layer_name="Double", lockfile=path)
    loads = {
        "load": lambda: kernel_plugins.load(repo.repo_id, lockfile=path, device="cpu"),
        "layers": lambda: kernel_plugins.load(core.target(), device="cpu", **core.load_options()),
        "get_locked_kernel": lambda: kernels.get_locked_kernel(repo.repo_id, lockfile=path),
        "load_kernel": lambda: kernels.load_kernel(repo.repo_id, lockfile=path),
    }
    for name, load in loads.items():
        prov = load().__kernel_provenance__
        assert (prov.sha, f"locked by {path}" in prov.notes) == (repo.sha, True), name
        assert ("the lock pins the commit only (no variant hashes)" in prov.notes) == (form == "kernels"), name
    assert kernels.LockedLayerRepository(repo.repo_id, layer_name="Double", lockfile=path).load().__name__ == "Double"
