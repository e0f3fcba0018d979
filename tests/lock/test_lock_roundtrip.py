"""lock -> download -> load against olah; hand-written locks; no requests once pinned."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

import kernel_plugins
from kernel_plugins.cli.main import main
from kernel_plugins.errors import LockfileError
from kernel_plugins.integrity.varianthash import FileHash, split_listing, variant_hash
from tests.lock.conftest import KernelRepo, resolve_gets, snapshot_variant, write_pyproject
from tests.support.hub import HubServer


def git_variant_hashes(repo: KernelRepo) -> dict[str, str]:
    """Variant hashes computed from git's own blob ids (independent of the Hub and of us)."""
    out = repo.git.git("ls-tree", "-r", repo.sha)
    entries = [(line.split("\t")[1], FileHash("git", line.split()[2])) for line in out.splitlines()]
    return {v: variant_hash(files) for v, files in split_listing(entries).items()}


def test_lock_download_load_round_trip(
    manager: object, hub_env: HubServer, hf_cache: Path, kernel_repo: Callable[..., KernelRepo],
    tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    repo = kernel_repo(org="kernels-community")
    project = write_pyproject(tmp_path / "proj", {repo.repo_id: 1})

    assert main(["lock", str(project)]) == 0
    written = json.loads((project / "kernels.lock").read_text())
    assert written == [{"dependency": {"repo-id": repo.repo_id, "version": 1}, "lock": {"commit": repo.sha}}]
    assert json.loads((project / "kernels.lock.variants").read_text()) == [{
        "repo_id": repo.repo_id,
        "sha": repo.sha,
        "variants": {
            name: {"hash": h, "hash_type": "git_lfs_concat"}
            for name, h in sorted(git_variant_hashes(repo).items())
        },
    }]

    hub_env.clear_requests()
    assert main(["download", str(project)]) == 0
    assert f"{repo.repo_id} torch-cpu: OK sha256-" in capsys.readouterr().out
    assert snapshot_variant(hf_cache, repo).is_dir()
    assert not snapshot_variant(hf_cache, repo, "torch-cuda").exists()  # this machine's only
    assert len(resolve_gets(hub_env)) == len(repo.cpu_files) - 1  # lock fetched metadata.json

    # the branch moves on; the lock still loads the pinned commit, with no request at all
    repo.git.write("build/torch-cpu/__init__.py", "VALUE = 2\n").commit("v1 moves")
    repo.git.branch("v1")
    hub_env.clear_requests()
    module = kernel_plugins.load(repo.repo_id, lockfile=project / "kernels.lock", device="cpu")
    assert (module.VALUE, module.DATA_SIZE, module.HELPER) == (1, 200 * 1024, "helper")
    assert module.__kernel_provenance__.sha == repo.sha
    assert hub_env.requests == []

    assert main(["verify", str(project)]) == 0
    out = capsys.readouterr().out
    assert f"{repo.repo_id} torch-cpu: OK" in out
    assert f"{repo.repo_id} torch-cuda: not downloaded" in out

    assert main(["download", str(project), "--all-variants", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert [(r["variant"], r["status"]) for r in report["variants"]] == [
        ("torch-cpu", "ok"), ("torch-cuda", "ok")
    ]
    assert (report["checked"], report["failed"]) == (2, 0)
    assert snapshot_variant(hf_cache, repo, "torch-cuda").is_dir()


def test_hand_written_lock_in_the_existing_format_loads(
    manager: object, hub_env: HubServer, kernel_repo: Callable[..., KernelRepo], tmp_path: Path
) -> None:
    repo = kernel_repo(org="kernels-community")
    hashes = git_variant_hashes(repo)
    lockfile = tmp_path / "kernels.lock"
    lockfile.write_text(
        "[\n  {\n"
        f'    "repo_id": "{repo.repo_id}",\n'
        f'    "sha": "{repo.sha}",\n'
        '    "variants": {\n'
        f'      "torch-cpu": {{"hash": "{hashes["torch-cpu"]}", "hash_type": "git_lfs_concat"}},\n'
        f'      "torch-cuda": {{"hash": "{hashes["torch-cuda"]}", "hash_type": "git_lfs_concat"}}\n'
        "    }\n  }\n]\n"
    )
    module = kernel_plugins.load(repo.repo_id, lockfile=lockfile, device="cpu")
    assert module.VALUE == 1
    assert module.__kernel_provenance__.revision == f"locked:{repo.sha}"


def test_cached_pinned_sha_and_offline_make_no_request(
    manager: object, hub_env: HubServer, kernel_repo: Callable[..., KernelRepo], tmp_path: Path,
    hub_offline: Callable[[bool], None],
) -> None:
    repo = kernel_repo(org="kernels-community")
    project = write_pyproject(tmp_path / "proj", {repo.repo_id: 1})
    assert main(["lock", str(project)]) == 0
    kernel_plugins.load(repo.repo_id, version=1, device="cpu")

    hub_env.clear_requests()
    by_sha = kernel_plugins.load(repo.repo_id, revision=repo.sha, device="cpu")
    locked = kernel_plugins.load(repo.repo_id, lockfile=project, device="cpu")
    assert hub_env.requests == []
    assert by_sha is locked

    hub_offline(True)
    for kwargs in ({"version": 1}, {"lockfile": project}, {"revision": repo.sha}):
        assert kernel_plugins.load(repo.repo_id, device="cpu", **kwargs).VALUE == 1
    assert main(["verify", str(project)]) == 0
    assert hub_env.requests == []


def test_lock_misuse_is_a_lockfile_error(
    manager: object, hub_env: HubServer, tmp_path: Path, kernel_repo: Callable[..., KernelRepo]
) -> None:
    repo = kernel_repo(org="kernels-community")
    (tmp_path / "kernels.lock").write_text("[]")
    with pytest.raises(LockfileError, match=f"does not pin {repo.repo_id}"):
        kernel_plugins.load(repo.repo_id, lockfile=tmp_path, device="cpu")
    with pytest.raises(LockfileError, match=f"does not pin {repo.repo_id} \\(version 1\\)"):
        kernel_plugins.load(repo.repo_id, lockfile=tmp_path, version=1, device="cpu")
    assert hub_env.requests == []


def test_lock_command_reports_a_missing_table(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_pyproject(tmp_path, '[project]\nname = "x"\n')
    assert main(["lock", str(tmp_path)]) == 1
    assert r"no [tool.kernels.dependencies] table" in capsys.readouterr().err
    assert not (tmp_path / "kernels.lock").exists()


def test_verify_repo_at_a_revision(
    hub_env: HubServer, hf_cache: Path, kernel_repo: Callable[..., KernelRepo],
    capsys: pytest.CaptureFixture[str],
) -> None:
    from kernel_plugins import hub
    from kernel_plugins.fetching import commit_offer
    from kernel_plugins.verification import fetch_checked

    repo = kernel_repo(org="kernels-community")
    fetch_checked(commit_offer(hub.resolve(repo.repo_id, version=1), ["torch-cpu"]), "torch-cpu", progress=False)
    assert main(["verify", repo.repo_id, "--revision", "v1"]) == 0
    out = capsys.readouterr().out
    assert f"{repo.repo_id} torch-cpu: OK {git_variant_hashes(repo)['torch-cpu']}" in out
    (snapshot_variant(hf_cache, repo) / "sub" / "helper.py").write_text("HELPER = 'evil'\n")
    assert main(["verify", repo.repo_id, "--revision", "v1"]) == 1
    out = capsys.readouterr().out
    assert f"{repo.repo_id} torch-cpu: FAILED: sub/helper.py: content changed" in out
    # --version N: the tip of branch vN, as for the other commands
    assert main(["verify", repo.repo_id, "--version", "1"]) == 1
    assert f"{repo.repo_id} torch-cpu: FAILED: sub/helper.py: content changed" in capsys.readouterr().out
    repo.git.write("build/torch-cpu/__init__.py", "VALUE = 2\n").commit("v2")
    repo.git.branch("v2")
    assert main(["verify", repo.repo_id, "--version", "2", "--json"]) == 1  # nothing downloaded: nothing checked
    capsys.readouterr()
    assert main(["verify", repo.repo_id, "--version", "2", "--json", "--allow-missing"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["target"] == f"{repo.repo_id}@{repo.git.head()[:12]} (v2)"
    assert [(r["variant"], r["status"]) for r in report["variants"]] == [("torch-cpu", "skipped"), ("torch-cuda", "skipped")]
    assert main(["verify", repo.repo_id, "--version", "1", "--revision", "v1"]) == 2  # one or the other
    capsys.readouterr()


def test_verify_version_applies_to_a_repository_not_a_project(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "kernels.lock").write_text("[]")
    assert main(["verify", str(tmp_path), "--version", "1"]) == 2
    assert "is a local folder: its kernels.lock pins the commits; --version applies to a Hub repository" in (
        capsys.readouterr().err)
