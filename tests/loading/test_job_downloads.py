"""One download per job: four gloo ranks on two simulated nodes, with a cache folder per node
and with one folder every node shares (as on NFS or Lustre), counted on the loopback Hub."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from tests.support.hub import HubServer, make_kernel_repo
from tests.support.variant_dirs import metadata, unique_id


def repo(server: HubServer, name: str, value: int) -> tuple[str, list[str]]:
    repo_id = f"kernels-community/job-{name}"
    files = {"__init__.py": f"VALUE = {value}\n", "data.bin": bytes(range(256)) * 64,
             "metadata.json": json.dumps(metadata(unique_id("job"), name="job-probe"))}
    make_kernel_repo(server, repo_id, variants={"torch-cpu": files, "torch-cuda": {"__init__.py": "X = 0\n"}})
    return repo_id, sorted(files)


def downloads(server: HubServer, repo_id: str) -> Counter[str]:
    return Counter(p.rsplit("/build/", 1)[1] for p in server.paths("GET") if f"/{repo_id}/resolve/" in p)


def test_one_download_per_node_or_per_job_when_nodes_share_the_cache(hub_env: HubServer, tmp_path: Path) -> None:
    from tests.loading._job_workers import job_rank
    from tests.support.ranks import run_ranks

    separate, files = repo(hub_env, "separate", 1)
    shared, _ = repo(hub_env, "shared", 2)
    per_node = [str(tmp_path / f"node{rank // 2}") for rank in range(4)]
    one = [str(tmp_path / "shared-fs")] * 4
    out = tmp_path / "out"
    out.mkdir()
    run_ranks(job_rank, (4, str(tmp_path / "init"), [(separate, per_node), (shared, one)], str(out)), 4)
    reports = [json.loads((out / f"rank{r}.json").read_text()) for r in range(4)]
    assert [[value for value, _ in r] for r in reports] == [[1, 2]] * 4
    assert [Path(r[0][1]).is_relative_to(per_node[rank]) for rank, r in enumerate(reports)] == [True] * 4
    assert downloads(hub_env, separate) == Counter({f"torch-cpu/{f}": 2 for f in files})  # one per node
    assert downloads(hub_env, shared) == Counter({f"torch-cpu/{f}": 1 for f in files})  # one per job
    assert not list((tmp_path / "shared-fs" / ".locks").glob("kernel-plugins-rank-*"))  # marks removed
