"""hub.resolve against a real Hub server (olah) on loopback."""

from __future__ import annotations

import logging
import sys
from pathlib import Path

import pytest

from kernel_plugins import hub
from kernel_plugins.errors import HubError, RevisionError, VersionNotFoundError
from tests.hub.conftest import HubRepos
from tests.support.hub import HubServer, make_kernel_repo


def api_paths(server: HubServer) -> list[str]:
    return [f"{r.method} {r.path}" for r in server.requests]


def test_branch_revision_resolves_to_its_tip(hub_env: HubServer, hub_repos: HubRepos) -> None:
    ref = hub.resolve(hub_repos.multi, revision="v2")
    assert ref == hub.HubRef(hub_repos.multi, "kernel", "v2", hub_repos.multi_shas["v2"], 2, None)
    assert api_paths(hub_env) == [f"GET /api/kernels/{hub_repos.multi}/refs"]


def test_tag_revision_resolves_without_a_version(hub_env: HubServer, hub_repos: HubRepos) -> None:
    ref = hub.resolve(hub_repos.multi, revision="release-1")
    assert (ref.sha, ref.version, ref.requested) == (hub_repos.multi_shas["v1"], None, "release-1")


def test_sha_revision_is_checked_once_and_kept(hub_env: HubServer, hub_repos: HubRepos) -> None:
    sha = hub_repos.multi_shas["v2"]
    ref = hub.resolve(hub_repos.multi, revision=sha)
    assert (ref.sha, ref.requested, ref.version, ref.repo_type) == (sha, sha, None, "kernel")
    assert api_paths(hub_env) == [f"GET /api/kernels/{hub_repos.multi}/revision/{sha}"]


def test_version_selects_branch_vn(hub_env: HubServer, hub_repos: HubRepos) -> None:
    ref = hub.resolve(hub_repos.multi, version=2)
    assert (ref.sha, ref.version, ref.requested) == (hub_repos.multi_shas["v2"], 2, "v2")
    assert len(hub_env.requests) == 1


def test_every_online_resolution_works_without_huggingface_hubs_api_client(
    hub_env: HubServer, hub_repos: HubRepos, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "huggingface_hub.hf_api", None)  # importing HfApi fails
    shas, repo = hub_repos.multi_shas, hub_repos.multi
    assert hub.resolve(repo, version=1).sha == hub.resolve(repo, revision="release-1").sha == shas["v1"]
    assert hub.resolve(repo, revision=shas["v2"]).sha == shas["v2"]  # uncached sha: /revision/
    assert hub.resolve(repo).version == 10
    assert hub.versions(repo) == {1: shas["v1"], 2: shas["v2"], 10: shas["v10"]}
    assert hub.resolve(hub_repos.legacy, version=2, repo_type="model").sha == hub_repos.legacy_shas["v2"]


def test_no_version_picks_newest_version_branch_not_main(
    hub_env: HubServer, hub_repos: HubRepos, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.INFO, logger="kernel_plugins"):
        ref = hub.resolve(hub_repos.multi)
    assert ref.sha == hub_repos.multi_shas["v10"] != hub_repos.multi_shas["main"]
    assert (ref.version, ref.requested) == (10, None)
    assert "version=10" in caplog.text  # tells how to pin it


def test_older_version_logs_a_notice(
    hub_env: HubServer, hub_repos: HubRepos, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.INFO, logger="kernel_plugins"):
        hub.resolve(hub_repos.multi, version=1)
    assert "newer version 10" in caplog.text


def test_missing_version_lists_available_versions_numerically(
    hub_env: HubServer, hub_repos: HubRepos
) -> None:
    with pytest.raises(VersionNotFoundError) as info:
        hub.resolve(hub_repos.multi, version=3)
    assert f"Version 3 of {hub_repos.multi} not found; available versions: 1, 2, 10" in str(
        info.value
    )


def test_repo_without_version_branches_uses_main(hub_env: HubServer, hub_repos: HubRepos) -> None:
    ref = hub.resolve(hub_repos.plain)
    assert (ref.sha, ref.version, ref.requested) == (hub_repos.plain_main, None, None)


def test_missing_revision_names_branches_and_tags(hub_env: HubServer, hub_repos: HubRepos) -> None:
    with pytest.raises(RevisionError) as info:
        hub.resolve(hub_repos.multi, revision="no-such-branch")
    message = str(info.value)
    assert "'no-such-branch'" in message and hub_repos.multi in message
    assert "branch v10" in message and "tag release-1" in message


def test_missing_repo_names_repo_and_endpoint(hub_env: HubServer) -> None:
    with pytest.raises(HubError) as info:
        hub.resolve("tests-org/does-not-exist")
    message = str(info.value)
    assert "tests-org/does-not-exist" in message and hub_env.endpoint in message
    assert "as a kernel repository" in message and "repo_type='model'" in message
    assert api_paths(hub_env) == ["GET /api/kernels/tests-org/does-not-exist/refs"]  # no 2nd try


@pytest.mark.parametrize("revision", [None, "v1", "sha"])
def test_a_model_repository_is_found_only_when_asked_for(
    hub_env: HubServer, hub_repos: HubRepos, revision: str | None
) -> None:
    rev = hub_repos.legacy_shas["v1"] if revision == "sha" else revision
    with pytest.raises(HubError, match="as a kernel repository"):
        hub.resolve(hub_repos.legacy, revision=rev)  # the default is kernel only: one request
    assert [p.split(hub_repos.legacy)[0] for p in api_paths(hub_env)] == ["GET /api/kernels/"]
    hub_env.clear_requests()
    ref = hub.resolve(hub_repos.legacy, revision=rev, repo_type="model")
    assert (ref.repo_type, ref.sha) == ("model", hub_repos.legacy_shas["v1" if rev else "v2"])
    assert [p.split(hub_repos.legacy)[0] for p in api_paths(hub_env)] == ["GET /api/models/"]


def test_resolved_refs_are_recorded_in_the_cache(
    hub_env: HubServer, hub_repos: HubRepos, hf_cache: Path
) -> None:
    hub.resolve(hub_repos.multi, version=2)
    hub.resolve(hub_repos.multi, revision="release-1")
    refs = hf_cache / "kernels--tests-org--multi" / "refs"
    assert (refs / "v2").read_text() == hub_repos.multi_shas["v2"]
    assert (refs / "release-1").read_text() == hub_repos.multi_shas["v1"]


def test_moved_branch_is_followed(hub_env: HubServer) -> None:
    repo = make_kernel_repo(hub_env, "tests-org/moving", branches=["v1"])
    first = repo.head()
    assert hub.resolve("tests-org/moving", version=1).sha == first
    repo.write("build/torch-cpu/__init__.py", "VALUE = 2\n")
    second = repo.commit("fix")
    repo.branch("v1")
    assert hub.resolve("tests-org/moving", version=1).sha == second != first


def test_explicit_endpoint_overrides_the_default(hub_env: HubServer, hub_repos: HubRepos) -> None:
    ref = hub.resolve(hub_repos.multi, version=1, endpoint=hub_env.endpoint + "/")
    assert ref.endpoint == hub_env.endpoint + "/"
    assert len(hub_env.requests) == 1


def test_unreachable_hub_is_a_hub_error(hf_cache: Path) -> None:
    with pytest.raises(HubError) as info:
        hub.resolve("tests-org/multi", version=1, endpoint="http://127.0.0.1:9")
    message = str(info.value)
    assert "Could not reach the Hub at http://127.0.0.1:9" in message
    # nothing cached: offline alone would not help, so the advice is to download first
    assert "has files in the local cache" not in message
    assert ("download it first where the Hub is reachable (kernel-plugins download tests-org/multi "
            "--version N) and set HF_HUB_OFFLINE=1") in message


def test_unreachable_hub_suggests_offline_mode_when_cached(
    hub_env: HubServer, hub_repos: HubRepos
) -> None:
    hub.resolve(hub_repos.multi, version=1)  # writes refs/v1 into the cache
    with pytest.raises(HubError, match="set HF_HUB_OFFLINE=1"):
        hub.resolve(hub_repos.multi, version=1, endpoint="http://127.0.0.1:9")


def test_uncached_sha_of_model_repo_asks_the_model_api(
    hub_env: HubServer, hub_repos: HubRepos
) -> None:
    sha = hub_repos.legacy_shas["v1"]
    ref = hub.resolve(hub_repos.legacy, revision=sha, repo_type="model")
    assert (ref.repo_type, ref.sha) == ("model", sha)
    assert hub_env.paths() == [f"/api/models/{hub_repos.legacy}/revision/{sha}"]


@pytest.mark.parametrize("sha", [None, "../../etc", "A" * 40, 40])
def test_an_answer_without_a_commit_sha_is_refused_naming_it(sha: object) -> None:
    from kernel_plugins.hub._resolve import _sha_of

    with pytest.raises(HubError, match=rf"no commit sha for org/k at revision 'v1' \(got {sha!r}\)"):
        _sha_of("org/k", "v1", sha)
    assert _sha_of("org/k", "v1", "a" * 40) == "a" * 40
