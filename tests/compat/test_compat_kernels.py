"""kernel_plugins.compat.kernels: the HF ``kernels`` 0.19.1 API on kernel-plugins (names and
signatures: test_compat_kernels_parity.py)."""

from __future__ import annotations

import json
import os
import shutil
import threading
import warnings
from pathlib import Path

import pytest
import torch
from torch import nn

import kernel_plugins.compat.kernels as kernels
from kernel_plugins.device import DeviceInfo
from kernel_plugins.errors import LayerError, OfflineError, RevisionError, TrustError
from kernel_plugins.layers import kernel_choice, mapping
from kernel_plugins.reference import reference_repo
from tests.support.kernels import make_variant

ACTIVATION = reference_repo("activation")


@pytest.fixture(autouse=True)
def clean_mapping(manager, monkeypatch):
    monkeypatch.delenv("DISABLE_KERNEL_MAPPING", raising=False)
    monkeypatch.delenv("KERNEL_PLUGINS_TRUSTED_ORGS", raising=False)
    mapping.register_kernel_mapping({}, inherit_mapping=False)
    yield
    mapping.register_kernel_mapping({}, inherit_mapping=False)


@kernels.use_kernel_forward_from_hub("SiluAndMul")
class SiluAndMul(nn.Module):
    def forward(self, x):
        d = x.shape[-1] // 2
        return nn.functional.silu(x[..., :d]) * x[..., d:]


def test_layer_repository_needs_exactly_one_of_revision_and_version():
    with pytest.raises(ValueError, match="must be specified"):
        kernels.LayerRepository("kernels-community/activation", layer_name="SiluAndMul")
    with pytest.raises(ValueError, match="not both"):
        kernels.LayerRepository("a/b", layer_name="X", revision="main", version=1)
    repo = kernels.LayerRepository(
        "org/act", layer_name="X", version=1, trust_remote_code=["org/act"], user_agent={"a": 1}
    )
    assert repo.trust_remote_code == ("org/act",) and hash(repo) == hash(
        kernels.LayerRepository("org/act", layer_name="X", version=1, trust_remote_code=["org/act"])
    )


def test_layer_repository_load_returns_the_layer_class_with_the_fallback_warning():
    repo = kernels.LayerRepository("kernels-community/activation", layer_name="SiluAndMul", version=1)
    with pytest.warns(UserWarning, match="portable reference kernel for 'activation'"):
        cls = repo.load()
    assert cls.__name__ == "SiluAndMul" and issubclass(cls, nn.Module)
    local = kernels.LocalLayerRepository(ACTIVATION, layer_name="GeluAndMul").load()
    assert local.__name__ == "GeluAndMul"


def test_trust_is_enforced_on_every_path(hub_offline, hf_cache):
    hub_offline(True)
    untrusted = kernels.LayerRepository("someone/act", layer_name="SiluAndMul", version=1)
    with pytest.raises(TrustError, match="someone/act"):
        untrusted.load()
    with pytest.raises(TrustError):
        kernels.get_kernel("someone/act", version=1)
    with pytest.raises(TrustError):
        kernels.get_kernel("someone/act", version=1, trust_remote_code=["other/repo"])
    with pytest.raises(TrustError):
        kernels.has_kernel("someone/act", version=1)
    with pytest.raises(TrustError):
        kernels.install_kernel("someone/act", version=1)
    with kernels.use_kernel_mapping({"SiluAndMul": {"cpu": untrusted}}):
        with pytest.raises(TrustError):
            kernels.kernelize(SiluAndMul(), mode=kernels.Mode.INFERENCE, device="cpu")
    # trusted by the repository's own list: trust passes, then the (offline) Hub is asked
    listed = kernels.LayerRepository(
        "someone/act", layer_name="SiluAndMul", version=1, trust_remote_code=["someone/act"]
    )
    with pytest.raises(OfflineError, match="nothing of someone/act is in the local cache") as info:
        listed.load()
    assert not isinstance(info.value, TrustError)


def test_device_properties_become_capability_ranges():
    with pytest.raises(ValueError, match="only supported for 'cuda'"):
        kernels.Device(type="rocm", properties=kernels.CUDAProperties(75, 90))
    with pytest.raises(ValueError, match="must be <="):
        kernels.CUDAProperties(min_capability=90, max_capability=75)
    old = kernels.LayerRepository("kernels-community/a", layer_name="Old", version=1)
    new = kernels.LayerRepository("kernels-community/a", layer_name="New", version=1)
    any_gpu = kernels.LayerRepository("kernels-community/a", layer_name="Any", version=1)
    kernels.register_kernel_mapping({"SiluAndMul": {
        kernels.Device(type="cuda", properties=kernels.CUDAProperties(75, 89)): old,
        kernels.Device(type="cuda", properties=kernels.CUDAProperties(90, 121)): new,
        "cuda": any_gpu,
    }})  # fmt: skip

    def names(capability):
        dev = DeviceInfo(backend="cuda", device_type="cuda", count=1, capability=capability)
        cands = mapping.current_mapping().candidates("SiluAndMul", dev, kernels.Mode.INFERENCE)
        return [c.repo.layer_name for c in cands]

    assert names((8, 0)) == ["Old", "Any"]
    assert names((12, 1)) == ["New", "Any"]
    assert names((7, 0)) == ["Any"]


def test_kernelize_with_a_local_repository_and_the_fallback_flags():
    model = nn.Sequential(nn.Linear(8, 8), SiluAndMul())
    x = torch.randn(3, 8)
    expected = model(x)
    repo = kernels.LocalLayerRepository(ACTIVATION, layer_name="SiluAndMul")
    with kernels.use_kernel_mapping({"SiluAndMul": {"cpu": repo}}):
        kernels.kernelize(model, mode=kernels.Mode.INFERENCE)  # device from the parameters
    assert kernel_choice(model[1]).uses_kernel
    assert torch.equal(model(x), expected)
    with kernels.use_kernel_mapping({}, inherit_mapping=False):
        with pytest.raises(LayerError, match="no kernel fits layer `SiluAndMul`"):
            kernels.kernelize(model, mode=kernels.Mode.INFERENCE, use_fallback=kernels.KernelizeFallback.NONE)
        kernels.kernelize(model, mode=kernels.Mode.INFERENCE, use_fallback=kernels.KernelizeFallback.ALL)
    assert not kernel_choice(model[1]).uses_kernel
    with pytest.raises(ValueError, match="FALLBACK"):
        kernels.kernelize(model, mode=kernels.Mode.FALLBACK)


LENIENT_LAYERS = """
import torch


class ReLU(torch.nn.Module):
    kernel_properties = frozenset({"deterministic"})

    def forward(self, x):
        return torch.relu(x)
"""
EXAMPLE_RELU = Path(__file__).resolve().parents[2] / "examples" / "relu"


def test_what_kernels_refuses_works_with_a_warning_naming_it(tmp_path):
    make_variant(tmp_path / "lenient", "torch-cpu", name="lenient", code="from . import layers\n",
                 extra_files={"layers.py": LENIENT_LAYERS})
    with pytest.warns(DeprecationWarning, match="HF kernels 0.19.1 has no package_name"):
        repo = kernels.LocalLayerRepository(tmp_path / "lenient", layer_name="ReLU", package_name="x")
    refused = r"refuses this layer class \(\"must not contain additional members\"\): kernel_properties\."
    with pytest.warns(UserWarning, match=refused):
        assert repo.load().__name__ == "ReLU"

    @kernels.use_kernel_forward_from_hub("ReLU")
    class ReLU(nn.Module):
        def forward(self, x):
            return torch.relu(x)

    model = nn.Sequential(ReLU())
    with kernels.use_kernel_mapping({"ReLU": {"cpu": repo}}), pytest.warns(UserWarning, match=refused):
        kernels.kernelize(model, mode=kernels.Mode.INFERENCE)
    assert kernel_choice(model[0]).uses_kernel
    example = kernels.LocalLayerRepository(EXAMPLE_RELU, layer_name="ReLU")  # kernels accepts it
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        example.load()
        with kernels.use_kernel_mapping({"ReLU": {"cpu": example}}):
            kernels.kernelize(model, mode=kernels.Mode.INFERENCE)
    assert kernel_choice(model[0]).provenance.path.endswith("examples/relu/build/torch-cpu")


def test_use_kernelized_func_and_func_repository():
    @kernels.use_kernel_forward_from_hub("silu_and_mul_fn")
    def silu_and_mul(x):
        d = x.shape[-1] // 2
        return nn.functional.silu(x[..., :d]) * x[..., d:]

    @kernels.use_kernelized_func(silu_and_mul)
    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.proj = nn.Linear(8, 8)

        def forward(self, x):
            return silu_and_mul(self.proj(x))

    block = Block()
    assert block._kernel_funcs == {"silu_and_mul": silu_and_mul}
    x = torch.randn(2, 8)
    expected = block(x)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        layer_repo = kernels.LocalLayerRepository(ACTIVATION, layer_name="SiluAndMul")
    with kernels.use_kernel_mapping({"silu_and_mul_fn": {"cpu": layer_repo}}):
        kernels.kernelize(block, mode=kernels.Mode.INFERENCE)
    assert kernel_choice(silu_and_mul).uses_kernel
    assert torch.equal(block(x), expected)
    with pytest.raises(ValueError, match="Function `<lambda>` is not decorated"):
        kernels.use_kernelized_func(lambda x: x)


def test_loaded_kernels_and_metadata():
    module = kernels.get_local_kernel(ACTIVATION)
    loaded = [k for k in kernels.get_loaded_kernels() if k.module is module]
    assert loaded and loaded[0].metadata.name == "activation" and loaded[0].repo_info is None
    meta = kernels.Metadata.read_from_file(Path(module.__kernel_provenance__.path) / "metadata.json")
    assert module.__name__.split(".")[-1] == meta.id
    assert (meta.build_layout, meta.provenance, meta.version, meta.kernels_minver) == ("files", None, 1, None)
    assert meta.digest.algorithm == "sha256" and set(meta.digest.files) >= {"__init__.py", "layers.py"}
    assert meta.backend.type == "cpu" and meta.python_depends == [] and meta.license == "Apache-2.0"
    with pytest.raises(ValueError, match="not valid JSON"):
        kernels.Metadata.from_bytes(b"{")


def test_loaded_kernels_report_the_verified_metadata_not_the_files_of_now(tmp_path):
    repo = tmp_path / "repo"
    vdir = make_variant(repo, "torch-cpu", name="verified-meta")
    verified = json.loads((vdir / "metadata.json").read_text())
    module = kernels.get_local_kernel(repo)

    def reported() -> kernels.Metadata:
        (only,) = [k.metadata for k in kernels.get_loaded_kernels() if k.module is module]
        return only

    edited = {**verified, "name": "edited-afterwards", "license": "none", "version": 9}
    (vdir / "metadata.json").write_text(json.dumps(edited))
    meta = reported()
    assert (meta.name, meta.license, meta.version) == ("verified-meta", "Apache-2.0", 1)
    shutil.rmtree(repo)  # a cache cleanup: nothing left on disk
    meta = reported()
    assert meta.name == "verified-meta" and meta.id == verified["id"]
    assert module.__name__.split(".")[-1] == meta.id


def test_install_kernel_works_offline_for_that_call_only(monkeypatch, hf_cache):
    """local_files_only=True reaches the Hub layer of its own call; the process environment
    and other threads stay online."""
    from huggingface_hub import constants

    from kernel_plugins import hub

    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    real_resolve = hub.resolve
    inside, other_looked = threading.Event(), threading.Event()
    seen: dict[str, object] = {}
    errors: list[BaseException] = []

    def resolve(*args, **kwargs):
        seen["install"] = hub.is_offline()
        inside.set()
        assert other_looked.wait(30)
        return real_resolve(*args, **kwargs)

    def install() -> None:
        try:
            kernels.install_kernel("kernels-community/not-cached", version=1, local_files_only=True)
        except BaseException as e:  # noqa: BLE001 - handed to the main thread
            errors.append(e)

    monkeypatch.setattr(hub, "resolve", resolve)
    worker = threading.Thread(target=install)
    worker.start()
    try:
        assert inside.wait(30)
        seen["other thread"] = hub.is_offline()
        seen["environment"] = os.environ.get("HF_HUB_OFFLINE")
    finally:
        other_looked.set()
        worker.join(60)
    assert seen == {"install": True, "other thread": False, "environment": None}
    # the real resolve ran offline: nothing of the repository is cached, so it says so
    assert len(errors) == 1 and isinstance(errors[0], OfflineError), errors
    assert "not-cached" in str(errors[0])
    assert not hub.is_offline()


def test_get_kernel_dep_outside_loading_and_user_agent_type():
    with pytest.raises(RuntimeError, match="only works during kernel loading"):
        kernels.get_kernel_dep("kernels-community/activation")
    with pytest.raises(TypeError, match="user_agent"):
        kernels.get_kernel("kernels-community/activation", version=1, user_agent=3)


def test_errors_have_the_types_and_phrases_of_kernels(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(ValueError, match="A kernel version or revision must be specified"):
        kernels.get_kernel("kernels-community/activation")
    with pytest.raises(ValueError, match="A kernel version or revision must be specified"):
        kernels.has_kernel("kernels-community/activation")
    with pytest.raises(ValueError, match="Both revision='main' and version=1") as both:
        kernels.get_kernel("kernels-community/activation", version=1, revision="main")
    assert isinstance(both.value, RevisionError)
    with pytest.raises(ValueError, match="someone/act is not from a trusted publisher") as info:
        kernels.get_kernel("someone/act", version=1)
    assert isinstance(info.value, TrustError)  # still kernel-plugins' error too
    repo = kernels.LayerRepository("someone/act", layer_name="SiluAndMul", version=1)
    with pytest.raises(ValueError, match="not from a trusted publisher"):
        repo.load()
    with kernels.use_kernel_mapping({"SiluAndMul": {"cpu": repo}}):
        with pytest.raises(ValueError, match="not from a trusted publisher"):
            kernels.kernelize(SiluAndMul(), mode=kernels.Mode.INFERENCE, device="cpu")


def _hf_cache_snapshot(cache: Path, repo_folder: str, files: dict[str, str]) -> Path:
    """The layout huggingface_hub's cache has (what ``hf download`` prints): the files of
    ``snapshots/<sha>/`` are relative links into the repository's own ``blobs/``."""
    import hashlib

    repo = cache / repo_folder
    snapshot = repo / "snapshots" / ("ab" * 20)
    (repo / "blobs").mkdir(parents=True, exist_ok=True)
    for rel, text in files.items():
        blob = hashlib.sha256(text.encode()).hexdigest()
        (repo / "blobs" / blob).write_text(text)
        link = snapshot / rel
        link.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to(os.path.relpath(repo / "blobs" / blob, link.parent))
    return snapshot


def _snapshot_files(kernel_id: str) -> dict[str, str]:
    meta = {"name": "snapshot-k", "id": kernel_id, "version": 1, "license": "Apache-2.0",
            "python-depends": [], "backend": {"type": "cpu"}}
    return {"build/torch-cpu/metadata.json": json.dumps(meta),
            "build/torch-cpu/__init__.py": "VALUE = 11\n"}  # fmt: skip


def test_get_local_kernel_loads_a_huggingface_hub_cache_snapshot(tmp_path):
    snapshot = _hf_cache_snapshot(
        tmp_path / "hub", "kernels--org--snapshot-k", _snapshot_files("_snapshot_k_cache")
    )
    module = kernels.get_local_kernel(snapshot)
    assert module.VALUE == 11
    assert module.__kernel_provenance__.path == str(snapshot / "build" / "torch-cpu")


def test_snapshot_links_may_lead_only_into_their_own_repositorys_blobs(tmp_path):
    """Links into another repository's blobs, or a folder that is not laid out as a cache
    snapshot, stay refused."""
    from kernel_plugins.errors import IntegrityError

    cache = tmp_path / "hub"
    other = _hf_cache_snapshot(cache, "kernels--org--other", _snapshot_files("_snapshot_k_other"))
    mine = cache / "kernels--org--mine" / "snapshots" / ("cd" * 20)
    (mine.parent.parent / "blobs").mkdir(parents=True)
    shutil.copytree(other, mine, symlinks=False)  # real files first ...
    init = mine / "build" / "torch-cpu" / "__init__.py"
    init.unlink()  # ... then one link into the blobs of org/other
    init.symlink_to(os.path.relpath((other / "build/torch-cpu/__init__.py").resolve(), init.parent))
    with pytest.raises(IntegrityError, match="outside the variant folder"):
        kernels.get_local_kernel(mine)
    # the same links, in a folder whose name is not a commit sha: not a cache snapshot
    plain = _hf_cache_snapshot(tmp_path / "x", "kernels--org--plain", _snapshot_files("_snap_plain"))
    renamed = plain.parent / "not-a-sha"
    plain.rename(renamed)
    with pytest.raises(IntegrityError, match="outside the variant folder"):
        kernels.get_local_kernel(renamed)
