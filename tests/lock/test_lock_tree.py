"""``kernel-plugins lock`` locks the kernels a kernel depends on, and kernels 0.17.2 loads
from that lock, offline, against the cache ``download`` filled (olah)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from kernel_plugins.cli.main import main
from kernel_plugins.lock import read_lockfile
from tests.lock.conftest import cpu_variant, write_pyproject
from tests.reference.test_hf_kernels_compat import kernels_python  # noqa: F401 - fixture
from tests.support.forks import python_c
from tests.support.hub import HubServer

LOAD_SCRIPT = r'''
import json, sys
from pathlib import Path
import kernels
from kernels._rust import KernelLocks

lock = Path(sys.argv[2])
parsed = KernelLocks.from_json(lock.read_text())
module = kernels.load_kernel(sys.argv[1], lockfile=lock)
print(json.dumps({"entries": len(parsed), "value": module.VALUE}))
'''


def _repo(hub: HubServer, repo_id: str, value: int, depends: list[dict[str, object]]) -> str:
    kid = f"_lt_{repo_id.replace('/', '_').replace('-', '_')}_{os.getpid()}_v{value}"
    files = cpu_variant(kid, value)
    meta = json.loads(files["metadata.json"])
    files["metadata.json"] = json.dumps({**meta, "kernel-depends": depends}).encode()
    repo = hub.repo(repo_id, "kernel")  # only the variant: kernels loads offline from a complete snapshot
    repo.write_files(files, prefix="build/torch-cpu/").commit("build torch-cpu")
    return repo.branch("v1").head()


def test_lock_follows_kernel_depends_and_kernels_loads_from_our_lock_offline(
    manager: object, hub_env: HubServer, hf_cache: Path, tmp_path: Path, kernels_python: Path,  # noqa: F811
    capsys: pytest.CaptureFixture[str],
) -> None:
    uid = tmp_path.name[-10:].replace("_", "-").strip("-").lower()
    app, dep, leaf = (f"kernels-community/lt-{n}-{uid}" for n in ("app", "dep", "leaf"))
    shas = {leaf: _repo(hub_env, leaf, 3, [])}
    shas[dep] = _repo(hub_env, dep, 2, [{"repo-id": leaf, "revision": "v1"}])
    shas[app] = _repo(hub_env, app, 1, [{"repo-id": dep, "version": 1}, {"repo-id": leaf, "revision": "v1"}])
    project = write_pyproject(tmp_path / "proj", {app: 1})

    assert main(["lock", str(project), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert [(k["repo_id"], k["version"], k["revision"], k["sha"]) for k in doc["kernels"]] == [
        (app, 1, None, shas[app]), (dep, 1, None, shas[dep]), (leaf, None, "v1", shas[leaf])]
    assert doc["lockfile"] == str(project / "kernels.lock")
    assert all(set(k["variants"]) == {"torch-cpu"} for k in doc["kernels"])
    locks = read_lockfile(project)
    assert locks.hashes == project / "kernels.lock.variants"
    assert locks.entry(leaf, revision="v1").variants["torch-cpu"].hash == doc["kernels"][2]["variants"]["torch-cpu"]["hash"]

    assert main(["download", str(project)]) == 0  # every kernel of the tree
    capsys.readouterr()
    env = {k: v for k, v in os.environ.items() if not k.startswith("KERNEL_PLUGINS")}
    env.update(HF_HUB_OFFLINE="1", HF_HUB_CACHE=str(hf_cache), HF_HOME=str(tmp_path / "hf-home"))
    done = python_c(LOAD_SCRIPT, app, project / "kernels.lock", env=env, cwd=tmp_path, python=kernels_python)
    assert done.returncode == 0, done.stderr[-3000:]
    assert json.loads(done.stdout.strip().splitlines()[-1]) == {"entries": 3, "value": 1}
