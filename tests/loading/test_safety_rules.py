"""The safety rules of loading, each tested without the loopback Hub server.

A fake Hub (resolve, list, fetch and the cached listing, monkeypatched on
:mod:`kernel_plugins.hub`) serves kernel repositories from a temporary folder, so these
tests run everywhere; the end-to-end tests of the same rules live in ``tests/hub`` and
``tests/lock``. Each test fails when its rule is removed from the code.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path

import pytest

import kernel_plugins
from kernel_plugins import hub
from kernel_plugins.cli.main import main
from kernel_plugins.errors import FallbackError, IntegrityError, LockfileError
from kernel_plugins.integrity import FileHash, git_blob_id, variant_hash
from kernel_plugins.registry import module_name
from tests.support.variant_dirs import metadata, unique_id


@dataclass
class FakeRepo:
    """One commit of a Hub repository: the published files and the files served."""

    repo_id: str
    sha: str
    published: dict[str, dict[str, bytes]]
    served: dict[str, dict[str, bytes]] = field(default_factory=dict)

    def listing(self, variant: str) -> dict[str, FileHash]:
        return {rel: FileHash("git", git_blob_id(data), len(data)) for rel, data in self.published[variant].items()}


class FakeHub:
    """Stands in for the Hub and huggingface_hub's cache."""

    def __init__(self, root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        self.root = root
        self.repos: dict[str, FakeRepo] = {}
        self.answer_sha: str | None = None  # a Hub that answers another commit
        self.fetched: list[tuple[str, str]] = []
        for name in ("resolve", "list_variant_names", "fetch_variant", "download_file",
                     "blobs_folder", "cached_listing", "read_record", "record_path", "write_record"):
            monkeypatch.setattr(hub, name, getattr(self, name))

    def add(self, repo_id: str, variants: dict[str, dict[str, str]], kernel_id: str | None = None) -> FakeRepo:
        kid = kernel_id or unique_id("rule")
        published = {}
        for variant, files in variants.items():
            data = {rel: text.encode() for rel, text in files.items()}
            backend = variant.removeprefix("torch-")
            data["metadata.json"] = json.dumps(metadata(kid, backend={"type": backend})).encode()
            published[variant] = data
        sha = hashlib.sha1(repo_id.encode()).hexdigest()
        repo = FakeRepo(repo_id, sha, published, {v: dict(f) for v, f in published.items()})
        self.repos[repo_id] = repo
        return repo

    def resolve(self, repo_id: str, revision: str | None = None, version: int | None = None,
                repo_type: str | None = None) -> hub.HubRef:
        repo = self.repos[repo_id]
        asked = revision if revision is not None else (f"v{version}" if version else None)
        return hub.HubRef(repo_id, "kernel", asked, self.answer_sha or repo.sha, version)

    def list_variant_names(self, ref: hub.HubRef) -> list[str]:
        return sorted(self.repos[ref.repo_id].published)

    def fetch_variant(self, ref: hub.HubRef, variant: str, *, progress: bool = True) -> Path:
        self.fetched.append((ref.repo_id, variant))
        folder = self.root / "cache" / ref.repo_id / ref.sha / "build" / variant
        for rel, data in self.repos[ref.repo_id].served[variant].items():
            (folder / rel).parent.mkdir(parents=True, exist_ok=True)
            (folder / rel).write_bytes(data)
        return folder

    def download_file(self, ref: hub.HubRef, path: str) -> Path:
        """One file (the metadata.json the architecture step reads) into the cache."""
        _, variant, rel = path.split("/", 2)
        target = self.root / "cache" / ref.repo_id / ref.sha / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(self.repos[ref.repo_id].served[variant][rel])
        return target

    def blobs_folder(self, ref: hub.HubRef) -> Path:
        return self.root / "cache" / "blobs"

    def cached_listing(self, ref: hub.HubRef) -> dict[str, dict[str, FileHash]]:
        repo = self.repos[ref.repo_id]
        return {v: repo.listing(v) for v in repo.published}

    def read_record(self, ref: hub.HubRef, variant: str) -> None:
        return None

    def record_path(self, ref: hub.HubRef, variant: str) -> Path:
        return self.root / "records" / ref.sha / variant

    def write_record(self, *args: object) -> None:
        return None


@pytest.fixture
def fake_hub(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> FakeHub:
    return FakeHub(tmp_path, monkeypatch)


CODE = {"__init__.py": "VALUE = 7\n"}


def cuda_only(fake_hub: FakeHub) -> FakeRepo:
    """kernels-community/activation with no variant for cpu (a reference exists for it)."""
    return fake_hub.add("kernels-community/activation", {"torch-cuda": CODE})


def write_lock(folder: Path, repo: FakeRepo, variant: str, hash_: str | None = None) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    entry = {"repo_id": repo.repo_id, "sha": repo.sha, "variants": {
        variant: {"hash": hash_ or variant_hash(repo.listing(variant)), "hash_type": "git_lfs_concat"}}}
    (folder / "kernels.lock").write_text(json.dumps([entry]))
    return folder / "kernels.lock"


def test_an_exact_pin_never_falls_back_to_the_reference(manager: object, fake_hub: FakeHub) -> None:
    repo = cuda_only(fake_hub)
    with pytest.warns(UserWarning, match="portable reference kernel"):  # unpinned: it may
        module = kernel_plugins.load("activation", device="cpu")
    assert module.__kernel_provenance__.source == "reference"
    with pytest.raises(FallbackError, match=f"revision='{repo.sha}' is an exact pin"):
        kernel_plugins.load("activation", revision=repo.sha, device="cpu")


def test_the_fallback_is_said_once_per_kernel_and_process_naming_the_layers(
    manager: object, fake_hub: FakeHub
) -> None:
    import warnings

    from torch import nn

    from kernel_plugins.layers import LayerRepository, kernelize, use_kernel_forward_from_hub
    from kernel_plugins.layers import use_kernel_mapping as mapping

    cuda_only(fake_hub)

    @use_kernel_forward_from_hub("SiluAndMul")
    class SiluAndMul(nn.Module):
        def forward(self, x):
            return nn.functional.silu(x[..., : x.shape[-1] // 2]) * x[..., x.shape[-1] // 2:]

    @use_kernel_forward_from_hub("GeluAndMul")
    class GeluAndMul(nn.Module):
        def forward(self, x):
            return nn.functional.gelu(x[..., : x.shape[-1] // 2]) * x[..., x.shape[-1] // 2:]

    repos = {n: {"cpu": LayerRepository("kernels-community/activation", layer_name=n)}
             for n in ("SiluAndMul", "GeluAndMul")}
    model = nn.Sequential(SiluAndMul(), GeluAndMul(), SiluAndMul())
    with mapping(repos, inherit_mapping=False), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for training in (False, True, False):  # kernelize again after each train()/eval()
            kernelize(model.train(training))
        kernel_plugins.load("activation", device="cpu")
    said = [str(w.message) for w in caught if "portable reference" in str(w.message)]
    assert said == ["using the portable reference kernel for 'activation' on cpu, serving "
                    "`GeluAndMul`, `SiluAndMul`: no variant for cpu (cpu). Results come from plain "
                    "PyTorch ops, not an optimised kernel. Pass fallback='error' to refuse."]
    assert all(w.filename == __file__ for w in caught if "portable reference" in str(w.message))


def test_kernel_plugins_strict_refuses_the_reference(
    manager: object, fake_hub: FakeHub, monkeypatch: pytest.MonkeyPatch
) -> None:
    cuda_only(fake_hub)
    monkeypatch.setenv("KERNEL_PLUGINS_STRICT", "1")
    with pytest.raises(FallbackError, match="not used \\(KERNEL_PLUGINS_STRICT=1\\)"):
        kernel_plugins.load("activation", device="cpu")


def test_a_hub_load_acts_on_failed_file_checks(manager: object, fake_hub: FakeHub) -> None:
    kid = unique_id("tamper")
    repo = fake_hub.add("kernels-community/rule-tamper", {"torch-cpu": CODE}, kernel_id=kid)
    repo.served["torch-cpu"]["__init__.py"] = b"VALUE = 666\n"  # the cache holds other bytes
    with pytest.raises(IntegrityError, match="__init__.py"):
        kernel_plugins.load(repo.repo_id, device="cpu")
    assert module_name(kid) not in __import__("sys").modules
    repo.served["torch-cpu"]["__init__.py"] = CODE["__init__.py"].encode()
    assert kernel_plugins.load(repo.repo_id, device="cpu").VALUE == 7


def test_a_locks_hash_must_match(manager: object, fake_hub: FakeHub, tmp_path: Path) -> None:
    repo = fake_hub.add("kernels-community/rule-lockhash", {"torch-cpu": CODE})
    wrong = write_lock(tmp_path / "bad", repo, "torch-cpu", "sha256-" + "0" * 64)
    with pytest.raises(IntegrityError, match="lock"):
        kernel_plugins.load(repo.repo_id, lockfile=wrong, device="cpu")
    right = write_lock(tmp_path / "good", repo, "torch-cpu")
    module = kernel_plugins.load(repo.repo_id, lockfile=right, device="cpu")
    assert module.VALUE == 7
    assert f"locked by {right}" in module.__kernel_provenance__.notes  # which lock was used


def test_a_locks_commit_must_match(manager: object, fake_hub: FakeHub, tmp_path: Path) -> None:
    repo = fake_hub.add("kernels-community/rule-locksha", {"torch-cpu": CODE})
    lock = write_lock(tmp_path, repo, "torch-cpu")
    fake_hub.answer_sha = "f" * 40
    with pytest.raises(LockfileError, match=f"pins {repo.repo_id} at {repo.sha} but the Hub answered commit {'f' * 40}"):
        kernel_plugins.load(repo.repo_id, lockfile=lock, device="cpu")
    assert fake_hub.fetched == []


def test_download_checks_trust_before_fetching_anything(
    manager: object, fake_hub: FakeHub, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    good = fake_hub.add("kernels-community/rule-trusted", {"torch-cpu": CODE})
    evil = fake_hub.add("evil-org/rule-untrusted", {"torch-cpu": CODE})
    entries = []
    for repo in (good, evil):  # the trusted one first: nothing of it may be fetched either
        write_lock(tmp_path, repo, "torch-cpu")
        entries += json.loads((tmp_path / "kernels.lock").read_text())
    (tmp_path / "kernels.lock").write_text(json.dumps(entries))
    assert main(["download", str(tmp_path), "--all-variants"]) != 0
    assert "evil-org" in capsys.readouterr().err
    assert fake_hub.fetched == []
    assert main(["download", str(tmp_path), "--all-variants", "--trust-remote-code"]) == 0
    assert sorted(fake_hub.fetched) == [(evil.repo_id, "torch-cpu"), (good.repo_id, "torch-cpu")]


def test_a_tampered_kernel_with_a_reference_is_refused_not_replaced(manager: object, fake_hub: FakeHub) -> None:
    """An integrity error never lets the reference stand in: kernels-community/activation
    (which has one) with changed bytes in the cache is refused."""
    repo = fake_hub.add("kernels-community/activation", {"torch-cpu": CODE})
    repo.served["torch-cpu"]["__init__.py"] = b"VALUE = 666\n"
    with pytest.raises(IntegrityError, match="__init__.py"):
        kernel_plugins.load("activation", device="cpu")


def test_a_dependency_with_no_variant_for_the_device_never_lets_the_reference_stand_in(
    manager: object, fake_hub: FakeHub
) -> None:
    """Issue 36: kernels-community/activation (which has a reference) fits the device, but its
    dependency has no variant for it: that is the dependency's error, named, not a reason."""
    from kernel_plugins.errors import KernelDependencyError, NoCompatibleVariantError

    dep = fake_hub.add("kernels-community/cuda-dep", {"torch-cuda": CODE})
    top = fake_hub.add("kernels-community/activation", {"torch-cpu": CODE})
    meta = json.loads(top.published["torch-cpu"]["metadata.json"])
    meta["kernel-depends"] = [{"repo-id": dep.repo_id, "version": 1}]
    top.published["torch-cpu"]["metadata.json"] = top.served["torch-cpu"]["metadata.json"] = json.dumps(meta).encode()
    for how in ("reference", "error"):
        with pytest.raises(KernelDependencyError, match="depends on kernels-community/cuda-dep .*NoCompatibleVariantError") as e:
            kernel_plugins.load("activation", device="cpu", fallback=how)
        assert isinstance(e.value.__cause__, NoCompatibleVariantError) and not isinstance(e.value, NoCompatibleVariantError)


def test_fallback_error_refuses_the_reference(manager: object, fake_hub: FakeHub) -> None:
    cuda_only(fake_hub)
    with pytest.raises(FallbackError, match="not used \\(fallback='error'\\)") as err:
        kernel_plugins.load("activation", device="cpu", fallback="error")
    assert "torch-cuda: noarch variant for backend 'cuda'" in str(err.value)  # the whole trace


def test_version_n_lets_the_reference_stand_in_only_when_it_implements_n(manager: object, fake_hub: FakeHub) -> None:
    from kernel_plugins.reference import reference_repo

    cuda_only(fake_hub)
    implemented = json.loads((reference_repo("activation") / "build/torch-cpu/metadata.json").read_text())["version"]
    with pytest.warns(UserWarning, match="portable reference kernel"):
        module = kernel_plugins.load("activation", version=implemented, device="cpu")
    assert module.__kernel_provenance__.source == "reference"
    with pytest.raises(FallbackError, match=f"implements API version {implemented}, not the version="
                                            f"{implemented + 1} asked for"):
        kernel_plugins.load("activation", version=implemented + 1, device="cpu")
