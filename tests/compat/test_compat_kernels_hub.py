"""kernel_plugins.compat.kernels against a real Hub server (olah) on loopback."""

from __future__ import annotations

import json

import pytest
import torch
from torch import nn

import kernel_plugins.compat.kernels as kernels
from tests.support.hub import make_kernel_repo

LAYERS = """
import torch
from torch import nn

class Double(nn.Module):
    has_backward = True
    def forward(self, x):
        return x * 2 + 1000
"""


def variant(kernel_id: str, backend: str) -> dict[str, str]:
    meta = {"name": "compat-k", "id": kernel_id, "version": 1, "license": "Apache-2.0",
            "python-depends": [], "backend": {"type": backend}}
    return {"metadata.json": json.dumps(meta), "__init__.py": "from . import layers\nVALUE = 7\n",
            "layers.py": LAYERS}  # fmt: skip


@pytest.fixture(scope="module")
def repos(hub_server):
    make_kernel_repo(
        hub_server, "kernels-community/compat-k",
        variants={"torch-cpu": variant("_compat_k_cpu", "cpu"),
                  "torch-cuda": variant("_compat_k_cuda", "cuda")},
        branches=("v1",),
    )  # fmt: skip
    make_kernel_repo(
        hub_server, "kernels-community/compat-cuda-only",
        variants={"torch-cuda": variant("_compat_cuda_only", "cuda")}, branches=("v1",),
    )  # fmt: skip
    make_kernel_repo(
        hub_server, "someone/compat-untrusted",
        variants={"torch-cpu": variant("_compat_untrusted", "cpu")}, branches=("v1",),
    )  # fmt: skip


@kernels.use_kernel_forward_from_hub("Doubler")
class Doubler(nn.Module):
    def forward(self, x):
        return x * 2


def test_get_kernel_and_loaded_kernels(manager, hub_env, repos):
    module = kernels.get_kernel("kernels-community/compat-k", version=1, user_agent="app/1.0")
    assert module.VALUE == 7
    (loaded,) = [k for k in kernels.get_loaded_kernels() if k.module is module]
    assert loaded.metadata.name == "compat-k"
    assert loaded.repo_info.repo_id == "kernels-community/compat-k"
    assert len(loaded.repo_info.revision) == 40


def test_has_kernel_and_variants(manager, hub_env, repos):
    assert kernels.has_kernel("kernels-community/compat-k", version=1)
    assert not kernels.has_kernel("kernels-community/compat-cuda-only", version=1)
    decisions = kernels.get_kernel_variants("kernels-community/compat-k", version=1)
    assert isinstance(decisions[0], kernels.VariantAccepted)
    assert decisions[0].variant.variant_str == "torch-cpu"
    rejected = [d for d in decisions if isinstance(d, kernels.VariantRejected)]
    assert [d.variant.variant_str for d in rejected] == ["torch-cuda"] and rejected[0].reason


def test_install_kernel_returns_the_variant_folder(manager, hub_env, repos):
    path = kernels.install_kernel("kernels-community/compat-k", version=1)
    assert path.name == "torch-cpu" and (path / "metadata.json").is_file()


def test_install_kernel_local_files_only_uses_the_cache_alone(manager, hub_env, repos):
    from kernel_plugins.errors import OfflineError

    with pytest.raises(OfflineError, match="kernels-community/compat-k"):
        kernels.install_kernel("kernels-community/compat-k", version=1, local_files_only=True)
    assert hub_env.requests == []
    online = kernels.install_kernel("kernels-community/compat-k", version=1)
    hub_env.clear_requests()
    offline = kernels.install_kernel("kernels-community/compat-k", version=1, local_files_only=True)
    assert offline == online and hub_env.requests == []


def test_get_local_kernel_on_the_folder_hf_download_prints(manager, hub_env, repos):
    """A huggingface_hub cache snapshot: its files are links into the repository's blobs/."""
    from pathlib import Path

    from huggingface_hub import snapshot_download

    snapshot = Path(snapshot_download(
        "kernels-community/compat-k", repo_type="kernel", revision="v1",
        allow_patterns=["build/torch-cpu/*"],
    ))  # fmt: skip
    assert (snapshot / "build" / "torch-cpu" / "__init__.py").is_symlink()
    module = kernels.get_local_kernel(snapshot)
    assert module.VALUE == 7 and module.__kernel_provenance__.source == "local"


def test_layer_repository_load_and_kernelize_with_trust(manager, hub_env, repos):
    repo = kernels.LayerRepository("kernels-community/compat-k", layer_name="Double", version=1)
    assert repo.load().__name__ == "Double"
    model = nn.Sequential(nn.Identity(), Doubler())
    with kernels.use_kernel_mapping({"Doubler": {"cpu": repo}}):
        kernels.kernelize(model, mode=kernels.Mode.INFERENCE)
    assert torch.equal(model(torch.ones(2)), torch.full((2,), 1002.0))
    untrusted = kernels.LayerRepository("someone/compat-untrusted", layer_name="Double", version=1)
    with pytest.raises(PermissionError, match="someone/compat-untrusted"):
        untrusted.load()
    trusted = kernels.LayerRepository(
        "someone/compat-untrusted", layer_name="Double", version=1, trust_remote_code=True
    )
    assert trusted.load().__name__ == "Double"
    assert kernels.get_kernel(
        "someone/compat-untrusted", version=1, trust_remote_code=["someone/compat-untrusted"]
    ).VALUE == 7


def test_locked_kernels(manager, hub_env, repos, tmp_path, monkeypatch):
    from kernel_plugins.cli.main import main
    from tests.lock.conftest import write_pyproject

    project = write_pyproject(tmp_path / "proj", {"kernels-community/compat-k": 1})
    assert main(["lock", str(project)]) == 0
    lockfile = project / "kernels.lock"
    by_version = kernels.get_kernel("kernels-community/compat-k", version=1)
    locked = kernels.get_locked_kernel("kernels-community/compat-k", lockfile=lockfile)
    assert locked is by_version  # the same commit: loaded once, listed once
    assert locked.VALUE == 7 and locked.__kernel_provenance__.sha
    (info,) = [k.repo_info for k in kernels.get_loaded_kernels() if k.module is locked]
    assert info == kernels.RepoInfo("kernels-community/compat-k", locked.__kernel_provenance__.sha)
    # lockfile=None: the nearest kernels.lock (here: the cwd's); tmp_path lies in the temp
    # folder, which lock discovery never searches, so that rule is lifted here
    monkeypatch.setattr("kernel_plugins.lock._discovery._temp_roots", lambda: [])
    monkeypatch.chdir(project)
    assert kernels.load_kernel("kernels-community/compat-k", lockfile=None).VALUE == 7
    repo = kernels.LockedLayerRepository("kernels-community/compat-k", layer_name="Double")
    assert repo.load().__name__ == "Double"
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ValueError, match="no kernels.lock found"):
        kernels.load_kernel("kernels-community/compat-k", lockfile=None)


def test_missing_version_and_variant_errors_as_in_kernels(manager, hub_env, repos):
    with pytest.raises(ValueError, match="Version 3 not found.*available versions: 1"):
        kernels.get_kernel("kernels-community/compat-k", version=3)
    with pytest.raises(FileNotFoundError, match="Cannot find a build variant"):
        kernels.get_kernel("kernels-community/compat-cuda-only", version=1)


# kernels' guide "Lock kernel versions" (docs/source/locking.md), its Python examples as
# written; run with the import changed and the repository one of this loopback Hub.
LOCKING_GUIDE = {
    "get_locked_kernel": """
from kernels import get_locked_kernel

activation = get_locked_kernel("kernels-community/activation")
""",
    "LockedLayerRepository": """
kernel_layer_mapping = {
    "SiluAndMul": {
        "cuda": LockedLayerRepository(
            repo_id="kernels-community/activation",
            layer_name="SiluAndMul",
        )
    }
}

register_kernel_mapping(kernel_layer_mapping)
""",
    "LockedFuncRepository": """
kernel_layer_mapping = {
    "silu_and_mul": {
        "cuda": LockedFuncRepository(
            repo_id="kernels-community/activation",
            func_name="silu_and_mul",
        )
    }
}

register_kernel_mapping(kernel_layer_mapping)
""",
    "load_kernel": """
from kernels import load_kernel

activation = load_kernel("kernels-community/activation")
""",
}


def test_the_locking_guides_examples(manager, hub_env, repos, tmp_path, monkeypatch):
    """As in kernels 0.19.1, ``lockfile`` is a required keyword of ``get_locked_kernel`` and
    ``load_kernel``: the guide's calls without it raise the same TypeError there and here;
    with ``lockfile=None`` (the caller's lock file) they load the locked kernel."""
    import kernels as hf_kernels

    from kernel_plugins.cli.main import main
    from kernel_plugins.layers import mapping
    from tests.lock.conftest import write_pyproject

    project = write_pyproject(tmp_path / "proj", {"kernels-community/compat-k": 1})
    assert main(["lock", str(project)]) == 0
    monkeypatch.setattr("kernel_plugins.lock._discovery._temp_roots", lambda: [])
    monkeypatch.chdir(project)
    mapping.register_kernel_mapping({}, inherit_mapping=False)
    for name, code in LOCKING_GUIDE.items():
        code = code.replace("from kernels import", "from kernel_plugins.compat.kernels import")
        code = code.replace("kernels-community/activation", "kernels-community/compat-k")
        namespace = {n: getattr(kernels, n) for n in kernels.__all__}  # the guide's imports
        if name in ("get_locked_kernel", "load_kernel"):
            with pytest.raises(TypeError, match="lockfile") as ours:
                exec(code, dict(namespace))  # noqa: S102
            with pytest.raises(TypeError) as theirs:
                getattr(hf_kernels, name)("kernels-community/compat-k")
            assert str(theirs.value).split("()")[-1] == str(ours.value).split("()")[-1]
            code = code.replace('/compat-k")', '/compat-k", lockfile=None)')
        exec(code, namespace)  # noqa: S102
        if "activation" in namespace:
            assert namespace["activation"].VALUE == 7 and namespace["activation"].__kernel_provenance__.sha
    names = set(mapping.current_mapping().layer_names())
    mapping.register_kernel_mapping({}, inherit_mapping=False)
    assert {"SiluAndMul", "silu_and_mul"} <= names
