"""Many processes into one empty cache; many gloo ranks; an interrupted download."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest

import kernel_plugins
from kernel_plugins.errors import HubError
from kernel_plugins.registry import module_name
from tests.lock.conftest import DATA_SIZE, KernelRepo, resolve_gets, snapshot_variant
from tests.support.hub import HubServer

ROOT = Path(__file__).resolve().parents[2]
N_PROCESSES = 16


def test_sixteen_processes_into_an_empty_cache(
    hub_env: HubServer, hf_cache: Path, tmp_path: Path, kernel_repo: Callable[..., KernelRepo]
) -> None:
    repo = kernel_repo(org="kernels-community")
    go = tmp_path / "go"
    path = os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])
    env = {**os.environ, "PYTHONPATH": path}
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "tests.lock._workers", repo.repo_id,
             str(tmp_path / f"ready{i}"), str(go)],
            cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )
        for i in range(N_PROCESSES)
    ]
    try:
        deadline = time.monotonic() + 60
        while not all((tmp_path / f"ready{i}").exists() for i in range(N_PROCESSES)):
            assert time.monotonic() < deadline, "children did not start"
            assert all(p.poll() is None for p in procs), [p.communicate() for p in procs]
            time.sleep(0.01)
        go.touch()
        results = [p.communicate(timeout=120) for p in procs]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
    failures = [err for p, (_, err) in zip(procs, results, strict=True) if p.returncode != 0]
    assert not failures, failures[0]
    reports = [json.loads(out.strip().splitlines()[-1]) for out, _ in results]
    assert {json.dumps(r, sort_keys=True) for r in reports} == {json.dumps({
        "sha": repo.sha, "value": 1, "data_size": DATA_SIZE, "helper": "helper", "torch": False,
    }, sort_keys=True)}
    gets = Counter(p.rsplit("/build/torch-cpu/", 1)[1] for p in resolve_gets(hub_env))
    assert gets == Counter({rel: 1 for rel in repo.cpu_files})
    blobs = snapshot_variant(hf_cache, repo).parents[3] / "blobs"
    assert not [p for p in blobs.iterdir() if p.name.endswith(".incomplete")]


def test_ranks_share_rank0_resolution_when_the_branch_moves(
    hub_env: HubServer, tmp_path: Path, kernel_repo: Callable[..., KernelRepo]
) -> None:
    from tests.lock._workers import distributed_rank
    from tests.support.ranks import run_ranks

    repo = kernel_repo(org="kernels-community")
    old_sha = repo.sha
    repo.git.write("build/torch-cpu/__init__.py", "VALUE = 2\n")
    new_sha = repo.git.commit("a newer build, not yet on v1")
    out = tmp_path / "out"
    out.mkdir()
    run_ranks(distributed_rank, (4, str(tmp_path / "init"), repo.repo_id, str(repo.git.path), new_sha, str(out)), 4)
    reports = [json.loads((out / f"rank{r}.json").read_text()) for r in range(4)]
    assert repo.git.git("rev-parse", "v1") == new_sha  # the branch did move
    assert {r["sha"] for r in reports} == {old_sha}
    assert {r["value"] for r in reports} == {1}
    assert [r["resolve_calls"] for r in reports] == [1, 0, 0, 0]
    # a failed resolution on rank 0 fails every rank the same way (and nobody hangs)
    assert {r["missing_error"] for r in reports} == {"HubError"}
    assert [r["calls_after_missing"] for r in reports] == [2, 0, 0, 0]
    gets = Counter(p.rsplit("/build/torch-cpu/", 1)[1] for p in resolve_gets(hub_env))
    assert gets == Counter({rel: 1 for rel in repo.cpu_files})  # one rank downloaded


def test_download_cut_off_then_server_restarted(
    manager: object, hub_env: HubServer, hf_cache: Path, kernel_repo: Callable[..., KernelRepo]
) -> None:
    repo = kernel_repo(org="kernels-community")
    hub_env.cut_responses("/build/torch-cpu/data.bin", after_bytes=50_000, times=100)
    with pytest.raises(HubError, match="broke off"):
        kernel_plugins.load(repo.repo_id, version=1, device="cpu")
    assert module_name(repo.kernel_id) not in sys.modules
    variant = snapshot_variant(hf_cache, repo)
    assert not (variant / "data.bin").exists()  # nothing that looks complete
    assert not (variant.parents[3] / "kernel-plugins").exists()

    hub_env.restart()  # the server dies and comes back
    hub_env.clear_requests()
    module = kernel_plugins.load(repo.repo_id, version=1, device="cpu")
    assert (module.VALUE, module.DATA_SIZE) == (1, DATA_SIZE)
    assert (variant / "data.bin").read_bytes() == repo.cpu_files["data.bin"]
