"""End-to-end: kernel_plugins.load() against a real Hub server (olah) on loopback."""

from __future__ import annotations

import json
import sys

import pytest

import kernel_plugins
from kernel_plugins.errors import NoCompatibleVariantError, OfflineError, VersionNotFoundError
from tests.support.hub import make_kernel_repo


def variant_files(name: str, kernel_id: str, backend: str, value: int) -> dict[str, str]:
    meta = {"name": name, "id": kernel_id, "version": 1, "license": "Apache-2.0",
            "python-depends": [], "backend": {"type": backend}}
    return {"metadata.json": json.dumps(meta), "__init__.py": f"VALUE = {value}\n"}


@pytest.fixture(scope="module")
def e2e_repo(hub_server):
    repo_id = "kernels-community/e2e-load"
    repo = make_kernel_repo(
        hub_server, repo_id,
        variants={
            "torch-cpu": variant_files("e2e-load", "_e2e_load_cpu_v1", "cpu", 1),
            "torch-cuda": variant_files("e2e-load", "_e2e_load_cuda_v1", "cuda", 1),
        },
        branches=("v1",), tags=("release-1",),
    )
    make_kernel_repo(
        hub_server, repo_id,
        variants={"torch-cpu": variant_files("e2e-load", "_e2e_load_cpu_v2", "cpu", 2)},
        branches=("v2",),
    )
    return repo_id, repo


def test_version_revision_tag_and_newest(manager, hub_env, e2e_repo):
    repo_id, _ = e2e_repo
    assert kernel_plugins.load(repo_id, version=1).VALUE == 1
    assert kernel_plugins.load(repo_id, revision="release-1").VALUE == 1
    newest = kernel_plugins.load(repo_id)
    assert newest.VALUE == 2
    prov = newest.__kernel_provenance__
    assert prov.source == "hub" and prov.variant == "torch-cpu" and len(prov.sha) == 40


def test_missing_version_lists_available(manager, hub_env, e2e_repo):
    with pytest.raises(VersionNotFoundError, match="available versions: 1, 2"):
        kernel_plugins.load(e2e_repo[0], version=3)


def test_only_the_chosen_variant_is_downloaded(manager, hub_env, e2e_repo):
    kernel_plugins.load(e2e_repo[0], version=1)
    gets = [p for p in hub_env.paths("GET") if "/resolve/" in p]
    assert gets and all("build/torch-cpu/" in p for p in gets)
    assert not any("torch-cuda" in p for p in gets)


def test_offline_reuse_makes_no_request(manager, hub_env, hub_offline, e2e_repo):
    first = kernel_plugins.load(e2e_repo[0], version=1)
    hub_env.clear_requests()
    hub_offline(True)
    again = kernel_plugins.load(e2e_repo[0], version=1)
    assert again.VALUE == 1 and again is first
    assert hub_env.requests == []


def test_a_warm_load_by_version_asks_without_huggingface_hubs_api_client(manager, hub_env, e2e_repo, monkeypatch):
    """Where branch v1 is: one plain request with huggingface_hub's headers (token, user
    agent), and huggingface_hub.hf_api (HfApi, a heavy import) is never needed."""
    first = kernel_plugins.load(e2e_repo[0], version=1)
    monkeypatch.setitem(sys.modules, "huggingface_hub.hf_api", None)  # importing it now fails
    monkeypatch.setenv("HF_TOKEN", "hf_test_token")
    hub_env.clear_requests()
    assert kernel_plugins.load(e2e_repo[0], version=1) is first
    (refs,) = hub_env.requests
    assert refs.path == f"/api/kernels/{e2e_repo[0]}/refs"
    assert refs.headers["authorization"] == "Bearer hf_test_token"
    assert refs.headers["user-agent"].startswith(f"kernel-plugins/{kernel_plugins.__version__}; hf_hub/")


def test_a_variant_verified_once_is_returned_without_taking_the_download_lock(manager, hub_env, e2e_repo, monkeypatch):
    from kernel_plugins import hub
    from kernel_plugins.hub import _fetch

    kernel_plugins.load(e2e_repo[0], version=1)
    ref = hub.resolve(e2e_repo[0], version=1)

    def locked(*args):
        raise AssertionError("the download lock was taken")

    monkeypatch.setattr(_fetch, "variant_lock", locked)
    assert _fetch.fetch_variant(ref, "torch-cpu") == hub.cached_variant_path(ref, "torch-cpu")
    hub.record_path(ref, "torch-cpu").unlink()  # never verified: another process may be downloading it
    with pytest.raises(AssertionError, match="download lock"):
        _fetch.fetch_variant(ref, "torch-cpu")


def test_no_variant_for_device_lists_hub_variants(manager, hub_env, e2e_repo):
    from tests.support.fakes import fake_backend

    manager.register(fake_backend("fakeacc"), name="fakeacc")
    with pytest.raises(NoCompatibleVariantError) as e:
        kernel_plugins.load(e2e_repo[0], version=1, device="fakeacc")
    text = str(e.value)
    assert "Source hub: kernels-community/e2e-load at" in text
    assert "torch-cpu: noarch variant for backend 'cpu'" in text


@pytest.fixture(scope="module")
def cuda_only_activation(hub_server):
    make_kernel_repo(
        hub_server, "kernels-community/activation",
        variants={"torch-cuda": variant_files("activation", "_activation_cuda_hub", "cuda", 1)},
        branches=("v1",),
    )


def test_reference_fallback_when_no_variant_fits(manager, hub_env, cuda_only_activation):
    import torch

    with pytest.warns(UserWarning, match="portable reference kernel for 'activation'.*no variant for cpu"):
        act = kernel_plugins.load("activation", version=1, device="cpu")
    prov = act.__kernel_provenance__
    assert prov.source == "reference" and "reference fallback" in prov.notes[0]
    x = torch.randn(4, 8)
    out = torch.empty(4, 4)
    act.silu_and_mul(out, x)
    assert torch.equal(out, torch.nn.functional.silu(x[:, :4]) * x[:, 4:])


def test_reference_fallback_refused_shows_trace(manager, hub_env, cuda_only_activation, monkeypatch):
    from kernel_plugins.errors import FallbackError

    with pytest.raises(FallbackError) as e:
        kernel_plugins.load("activation", version=1, device="cpu", fallback="error")
    assert "torch-cuda: noarch variant for backend 'cuda'" in str(e.value)
    assert "fallback='error'" in str(e.value)
    monkeypatch.setenv("KERNEL_PLUGINS_STRICT", "1")
    with pytest.raises(FallbackError, match="KERNEL_PLUGINS_STRICT=1"):
        kernel_plugins.load("activation", version=1, device="cpu")


def test_reference_fallback_when_hub_unreachable(manager, hf_cache, monkeypatch):
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "ENDPOINT", "http://127.0.0.1:9")
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")
    with pytest.warns(UserWarning, match="the Hub could not be reached"):
        mod = kernel_plugins.load("rmsnorm", device="cpu")
    assert mod.__kernel_provenance__.source == "reference"
    assert hasattr(mod, "apply_rms_norm")


@pytest.fixture(scope="module")
def later_fits(hub_server):
    """v1: torch-cuda; v2 and v3 add torch-cpu; v4: torch-cuda only again."""
    repo_id = "kernels-community/e2e-later"
    repo = hub_server.repo(repo_id)
    shas = {}
    for n in (1, 2, 3, 4):
        repo.write_files(variant_files("e2e-later", f"_e2e_later_cuda_v{n}", "cuda", n), "build/torch-cuda/")
        if n in (2, 3):
            repo.write_files(variant_files("e2e-later", f"_e2e_later_cpu_v{n}", "cpu", n), "build/torch-cpu/")
        else:
            repo.remove("build/torch-cpu")
        shas[n] = repo.commit(f"v{n}")
        repo.branch(f"v{n}")
    return repo_id, shas


def test_no_fit_names_the_newest_later_version_that_fits(manager, hub_env, later_fits):
    repo_id, shas = later_fits
    with pytest.raises(NoCompatibleVariantError) as e:
        kernel_plugins.load(repo_id, version=1, device="cpu")
    assert str(e.value).endswith(
        f"Version 3 of {repo_id} has a build for cpu (torch-cpu): pass version=3 to use it.")
    assert e.value.resolution is not None
    # after the failure: the version branches, then v4 and v3 listed, newest first
    assert [p.split("?")[0] for p in hub_env.paths()[2:]] == [
        f"/api/kernels/{repo_id}/refs",
        f"/api/kernels/{repo_id}/tree/{shas[4]}/build",
        f"/api/kernels/{repo_id}/tree/{shas[3]}/build",
    ]
    with pytest.raises(NoCompatibleVariantError) as e:  # nothing later fits: nothing said
        kernel_plugins.load(repo_id, version=4, device="cpu")
    assert "pass version=" not in str(e.value)
    assert kernel_plugins.load(repo_id, version=3, device="cpu").VALUE == 3


def test_offline_the_later_version_comes_from_the_cache_without_a_request(
    manager, hub_env, hub_offline, later_fits
):
    from kernel_plugins import hub

    repo_id, _ = later_fits
    kernel_plugins.load(repo_id, version=2, device="cpu")  # v2 cached; v3 and v4 are not
    hub.download_variant(hub.resolve(repo_id, version=1), "torch-cuda", progress=False)
    hub_env.clear_requests()
    hub_offline(True)
    with pytest.raises(NoCompatibleVariantError) as e:
        kernel_plugins.load(repo_id, version=1, device="cpu")
    assert "Version 2 of kernels-community/e2e-later has a build for cpu (torch-cpu)" in str(e.value)
    assert hub_env.requests == []


def test_a_model_type_repository_loads_only_when_asked_for(manager, hub_env):
    from kernel_plugins.errors import HubError

    repo_id = "kernels-community/e2e-model-type"
    make_kernel_repo(hub_env, repo_id, repo_type="model", branches=("v1",), variants={
        "torch-cpu": variant_files("e2e-model-type", "_e2e_model_type_cpu", "cpu", 7)})
    with pytest.raises(HubError, match="as a kernel repository"):
        kernel_plugins.load(repo_id, version=1, device="cpu")
    assert hub_env.paths() == [f"/api/kernels/{repo_id}/refs"]  # a miss costs one request
    hub_env.clear_requests()
    module = kernel_plugins.load(repo_id, version=1, device="cpu", repo_type="model")
    assert module.VALUE == 7 and module.__kernel_provenance__.source == "hub"
    assert hub_env.paths()[0] == f"/api/models/{repo_id}/refs"
    assert not any("/kernels/" in p for p in hub_env.paths())


def test_kernels_cache_holds_every_file_and_ranks_before_hf_hub_cache(
    manager, hub_env, hub_offline, e2e_repo, hf_cache, tmp_path, monkeypatch
):
    from pathlib import Path

    cache = tmp_path / "kernels-cache"
    monkeypatch.setenv("KERNELS_CACHE", str(cache))
    first = kernel_plugins.load(e2e_repo[0], revision="release-1", device="cpu")
    assert Path(first.__kernel_provenance__.path).is_relative_to(cache / "kernels--kernels-community--e2e-load")
    assert list(hf_cache.iterdir()) == []  # HF_HUB_CACHE is not used
    hub_env.clear_requests()
    hub_offline(True)
    again = kernel_plugins.load(e2e_repo[0], revision="release-1", device="cpu")
    assert again.__kernel_provenance__.path == first.__kernel_provenance__.path
    assert hub_env.requests == []
    monkeypatch.setenv("KERNELS_CACHE", "")  # empty: as unset, HF_HUB_CACHE is the cache
    with pytest.raises(OfflineError, match=f"nothing of kernels-community/e2e-load is in the local cache \\({hf_cache}\\)"):
        kernel_plugins.load(e2e_repo[0], revision="release-1", device="cpu")
