"""Offline mode (HF_HUB_OFFLINE=1) and pinned commits: answers from the cache, no request."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from kernel_plugins import hub
from kernel_plugins.errors import HubError, RevisionError, SourceError, VersionNotFoundError
from tests.hub.conftest import HubRepos
from tests.support.hub import HubServer

Offline = Callable[[bool], None]


def test_offline_reuses_the_cache_with_zero_requests(
    hub_env: HubServer, hub_repos: HubRepos, hub_offline: Offline
) -> None:
    online = hub.resolve(hub_repos.multi, version=2)
    path = hub.download_variant(online, "torch-cpu", progress=False)
    hub_env.clear_requests()

    hub_offline(True)
    assert hub.resolve(hub_repos.multi, version=2) == online
    newest_cached = hub.resolve(hub_repos.multi)
    assert (newest_cached.sha, newest_cached.version) == (online.sha, 2)
    assert hub.list_variant_names(online) == ["torch-cpu"]  # only what is cached
    assert hub.download_variant(online, "torch-cpu") == path
    assert hub_env.requests == []


def test_offline_revision_and_tag_come_from_refs(
    hub_env: HubServer, hub_repos: HubRepos, hub_offline: Offline
) -> None:
    tag = hub.resolve(hub_repos.multi, revision="release-1")
    hub.download_variant(tag, "torch-cuda", progress=False)
    hub_env.clear_requests()
    hub_offline(True)
    assert hub.resolve(hub_repos.multi, revision="release-1").sha == hub_repos.multi_shas["v1"]
    with pytest.raises(RevisionError, match="HF_HUB_OFFLINE"):
        hub.resolve(hub_repos.multi, revision="v2")
    assert hub_env.requests == []


def test_offline_missing_version_lists_cached_versions(
    hub_env: HubServer, hub_repos: HubRepos, hub_offline: Offline
) -> None:
    hub.resolve(hub_repos.multi, version=1)
    hub.resolve(hub_repos.multi, version=10)
    hub_offline(True)
    with pytest.raises(VersionNotFoundError) as info:
        hub.resolve(hub_repos.multi, version=2)
    assert "cached versions: 1, 10" in str(info.value)
    assert "HF_HUB_OFFLINE" in str(info.value)


def test_offline_without_cache_explains_how_to_fix(hf_cache: Path, hub_offline: Offline) -> None:
    hub_offline(True)
    with pytest.raises(SourceError, match="unset HF_HUB_OFFLINE"):
        hub.resolve("tests-org/multi", version=1, endpoint="http://127.0.0.1:9")


def test_offline_uncached_variant_is_a_source_error(
    hub_env: HubServer, hub_repos: HubRepos, hub_offline: Offline
) -> None:
    ref = hub.resolve(hub_repos.multi, version=1)
    hub.download_variant(ref, "torch-cpu", progress=False)
    hub_offline(True)
    with pytest.raises(SourceError, match="'torch-cuda'.*HF_HUB_OFFLINE"):
        hub.download_variant(ref, "torch-cuda")
    assert hub.cached_variant_path(ref, "torch-cuda") is None


def test_pinned_sha_in_cache_makes_no_request_online(
    hub_env: HubServer, hub_repos: HubRepos
) -> None:
    sha = hub_repos.multi_shas["v2"]
    path = hub.download_variant(hub.resolve(hub_repos.multi, revision=sha), "torch-cpu")
    hub_env.clear_requests()

    ref = hub.resolve(hub_repos.multi, revision=sha)
    assert (ref.sha, ref.repo_type) == (sha, "kernel")
    assert hub.list_variant_names(ref) == ["torch-cpu", "torch-cpu-extra", "torch-cuda"]
    assert hub.download_variant(ref, "torch-cpu", progress=False) == path
    assert hub_env.requests == []


def test_pinned_sha_of_model_repo_in_cache_makes_no_request(
    hub_env: HubServer, hub_repos: HubRepos
) -> None:
    sha = hub_repos.legacy_shas["v1"]
    hub.download_variant(hub.resolve(hub_repos.legacy, revision=sha, repo_type="model"), "torch-cpu")
    hub_env.clear_requests()
    assert hub.resolve(hub_repos.legacy, revision=sha, repo_type="model").repo_type == "model"
    assert hub_env.requests == []
    with pytest.raises(HubError, match="as a kernel repository"):  # the model cache is not
        hub.resolve(hub_repos.legacy, revision=sha)  # a kernel repository's: asked as such
    assert [r.path for r in hub_env.requests] == [f"/api/kernels/{hub_repos.legacy}/revision/{sha}"]


def test_offline_in_a_fresh_process_reads_env_at_import(
    hub_env: HubServer, hub_repos: HubRepos, hf_cache: Path
) -> None:
    ref = hub.resolve(hub_repos.multi, version=10)
    path = hub.download_variant(ref, "torch-cpu", progress=False)
    hub_env.clear_requests()
    code = (
        "import json\n"
        "from kernel_plugins import hub\n"
        "ref = hub.resolve('tests-org/multi')\n"
        "print(json.dumps([ref.sha, ref.version, hub.list_variant_names(ref),\n"
        "                  str(hub.download_variant(ref, 'torch-cpu'))]))\n"
    )
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_HUB_CACHE": str(hf_cache)}
    env["HF_ENDPOINT"] = hub_env.endpoint  # would be used if anything went online
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    )
    assert json.loads(out.stdout.strip().splitlines()[-1]) == [
        ref.sha,
        10,
        ["torch-cpu"],
        str(path),
    ]
    assert hub_env.requests == []
