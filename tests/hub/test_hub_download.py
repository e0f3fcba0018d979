"""Listing and downloading build variants from a real Hub server (olah) on loopback."""

from __future__ import annotations

import time
import types
from pathlib import Path

import pytest

from kernel_plugins import hub
from kernel_plugins.errors import HubError, SourceError
from tests.hub.conftest import BIG_SIZE, CPU_FILES, HubRepos
from tests.support.hub import HubServer


def files_under(folder: Path) -> list[str]:
    return sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file())


def resolve_gets(server: HubServer) -> list[str]:
    """Repository paths of the files fetched with GET .../resolve/<sha>/<path>."""
    out = []
    for path in server.paths("GET"):
        if "/resolve/" in path:
            out.append(path.split("/resolve/", 1)[1].split("/", 1)[1])
    return sorted(out)


@pytest.fixture
def no_retry_sleep(monkeypatch: pytest.MonkeyPatch) -> None:
    """huggingface_hub sleeps 1 s before resuming a broken download; skip the wait."""
    from huggingface_hub import file_download

    fast = types.SimpleNamespace(
        **{k: getattr(time, k) for k in dir(time) if not k.startswith("_")}
    )
    fast.sleep = lambda seconds: None
    monkeypatch.setattr(file_download, "time", fast)


def test_list_variant_names_is_one_tree_call(hub_env: HubServer, hub_repos: HubRepos) -> None:
    ref = hub.resolve(hub_repos.multi, version=2)
    hub_env.clear_requests()
    assert hub.list_variant_names(ref) == ["torch-cpu", "torch-cpu-extra", "torch-cuda"]
    assert hub_env.paths() == [  # one recursive listing of build/: every file's hash
        f"/api/kernels/{hub_repos.multi}/tree/{ref.sha}/build?recursive=true&expand=false"
    ]
    assert set(hub.cached_tree_files(ref) or {}) >= {f"build/torch-cpu/{f}" for f in CPU_FILES}  # kept: the
    hub_env.clear_requests()  # download and the checks ask no more
    hub.download_variant(ref, "torch-cpu", progress=False)
    assert all("/resolve/" in p for p in hub_env.paths()) and len(hub_env.paths()) == len(CPU_FILES)


def test_download_fetches_only_the_chosen_variant(
    hub_env: HubServer, hub_repos: HubRepos, hf_cache: Path
) -> None:
    ref = hub.resolve(hub_repos.multi, version=2)
    hub_env.clear_requests()
    path = hub.download_variant(ref, "torch-cpu", progress=False)

    snapshot = hf_cache / "kernels--tests-org--multi" / "snapshots" / ref.sha
    assert path == snapshot / "build" / "torch-cpu"
    assert files_under(path) == sorted(CPU_FILES)
    assert (path / "__init__.py").read_text() == "VERSION = 2\n"
    # nothing of torch-cpu-extra (same prefix), torch-cuda or README.md
    assert files_under(snapshot) == sorted(f"build/torch-cpu/{f}" for f in CPU_FILES)
    assert resolve_gets(hub_env) == sorted(f"build/torch-cpu/{f}" for f in CPU_FILES)


def test_second_download_makes_no_request(hub_env: HubServer, hub_repos: HubRepos) -> None:
    ref = hub.resolve(hub_repos.multi, version=1)
    assert hub.cached_variant_path(ref, "torch-cpu") is None
    first = hub.download_variant(ref, "torch-cpu", progress=False)
    hub_env.clear_requests()
    assert hub.download_variant(ref, "torch-cpu", progress=False) == first
    assert hub.cached_variant_path(ref, "torch-cpu") == first
    # the commit's file listing is cached too: listing variants needs no request either
    assert hub.list_variant_names(ref) == ["torch-cpu", "torch-cpu-extra", "torch-cuda"]
    assert hub_env.requests == []


def test_another_variant_of_a_cached_commit_is_fetched(
    hub_env: HubServer, hub_repos: HubRepos
) -> None:
    ref = hub.resolve(hub_repos.multi, version=1)
    hub.download_variant(ref, "torch-cpu", progress=False)
    hub_env.clear_requests()
    path = hub.download_variant(ref, "torch-cuda", progress=False)
    assert (path / "__init__.py").read_text() == "CUDA = True\n"
    assert resolve_gets(hub_env) == ["build/torch-cuda/__init__.py"]


def test_cached_variant_with_a_missing_file_is_not_complete(
    hub_env: HubServer, hub_repos: HubRepos
) -> None:
    ref = hub.resolve(hub_repos.multi, version=1)
    path = hub.download_variant(ref, "torch-cpu", progress=False)
    (path / "sub" / "deep" / "helper.py").unlink()
    assert hub.cached_variant_path(ref, "torch-cpu") is None
    hub_env.clear_requests()
    assert hub.download_variant(ref, "torch-cpu", progress=False) == path
    assert (path / "sub" / "deep" / "helper.py").read_text() == "HELPER = True\n"


def test_missing_variant_is_a_source_error_listing_variants(
    hub_env: HubServer, hub_repos: HubRepos
) -> None:
    ref = hub.resolve(hub_repos.multi, version=1)
    with pytest.raises(SourceError) as info:
        hub.download_variant(ref, "torch-rocm", progress=False)
    message = str(info.value)
    assert "'torch-rocm'" in message and hub_repos.multi in message
    assert "torch-cpu, torch-cpu-extra, torch-cuda" in message


def test_repo_without_build_folder_is_a_source_error(hub_env: HubServer) -> None:
    from tests.support.hub import make_kernel_repo

    repo = make_kernel_repo(hub_env, "tests-org/no-build", variants={}, branches=["v1"])
    ref = hub.resolve("tests-org/no-build", version=1)
    assert ref.sha == repo.head()
    with pytest.raises(SourceError, match="offers no build variants"):
        hub.list_variant_names(ref)


def test_model_repo_downloads_like_a_kernel_repo(
    hub_env: HubServer, hub_repos: HubRepos, hf_cache: Path
) -> None:
    ref = hub.resolve(hub_repos.legacy, repo_type="model")
    assert (ref.repo_type, ref.version) == ("model", 2)
    assert hub.list_variant_names(ref) == ["torch-cpu"]
    path = hub.download_variant(ref, "torch-cpu", progress=False)
    assert path.is_relative_to(hf_cache / "models--tests-org--legacy")
    assert (path / "__init__.py").read_text() == "VALUE = 2\n"


def test_progress_flag_controls_progress_bars(
    hub_env: HubServer,
    hub_repos: HubRepos,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("TQDM_POSITION", "-1")  # force huggingface_hub's bars on without a TTY
    ref = hub.resolve(hub_repos.multi, version=1)
    hub.download_variant(ref, "torch-cuda", progress=False)
    assert "Fetching" not in capsys.readouterr().err
    hub.download_variant(ref, "torch-cpu", progress=True)
    assert "Fetching 3 files" in capsys.readouterr().err


def test_interrupted_transfer_is_resumed(
    hub_env: HubServer, hub_repos: HubRepos, no_retry_sleep: None
) -> None:
    ref = hub.resolve(hub_repos.big, version=1)
    hub_env.cut_responses("blob.bin", after_bytes=BIG_SIZE // 3, times=1)
    path = hub.download_variant(ref, "torch-cpu", progress=False)
    assert (path / "blob.bin").read_bytes() == hub_repos.big_blob
    assert resolve_gets(hub_env) == ["build/torch-cpu/blob.bin"] * 2


def test_server_dying_mid_download_is_a_hub_error_and_retry_works(
    hub_env: HubServer, hub_repos: HubRepos, no_retry_sleep: None
) -> None:
    ref = hub.resolve(hub_repos.big, version=1)
    hub_env.cut_responses("blob.bin", after_bytes=0, times=20)
    with pytest.raises(HubError) as info:
        hub.download_variant(ref, "torch-cpu", progress=False)
    assert hub_repos.big in str(info.value) and hub_env.endpoint in str(info.value)
    assert hub.cached_variant_path(ref, "torch-cpu") is None

    hub_env.clear_requests()  # also drops the remaining cuts
    path = hub.download_variant(ref, "torch-cpu", progress=False)
    assert (path / "blob.bin").read_bytes() == hub_repos.big_blob


def test_missing_variant_of_a_cached_commit_needs_no_request(
    hub_env: HubServer, hub_repos: HubRepos
) -> None:
    ref = hub.resolve(hub_repos.multi, version=1)
    hub.download_variant(ref, "torch-cpu", progress=False)
    hub_env.clear_requests()
    with pytest.raises(SourceError, match="'torch-rocm'.*torch-cpu, torch-cpu-extra"):
        hub.download_variant(ref, "torch-rocm", progress=False)
    assert hub_env.requests == []
