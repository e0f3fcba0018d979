"""What ``kernel-plugins download PROJECT_DIR`` fetches, the real HF ``kernels`` finds offline
(``HF_HUB_OFFLINE=1``) with the same ``kernels.lock``: the pinned release (0.19.1, in .venv)
and 0.17.2 (installed once, without dependencies, by ``tests/support/releases.py``; skipped
with a clear message only when pip cannot install it, and never under CI).

Both ask huggingface_hub's ``snapshot_download(local_files_only=True)`` for the locked commit
and load the variant for this machine from the snapshot; the repository has a variant for
another device too, which ``download`` leaves out.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest

from kernel_plugins.cli.main import main
from tests.lock.conftest import KernelRepo, write_pyproject
from tests.support.forks import python_c
from tests.support.hub import HubServer
from tests.support.pins import kernels_pin
from tests.support.releases import release

OLD = "0.17.2"  #: the release before the pinned one that users still run

LOAD = r"""
import json, sys
import kernels
module = kernels.load_kernel(sys.argv[1], lockfile=sys.argv[2])
print(json.dumps({"kernels": kernels.__version__, "value": module.VALUE, "file": module.__file__}))
"""


@pytest.fixture(scope="session")
def kernels_old() -> Path:
    """A folder holding kernels 0.17.2 alone (its dependencies are .venv's), for PYTHONPATH."""
    return release("kernels", OLD)


def _load_offline(project: Path, repo_id: str, cache: Path, home: Path, pythonpath: Path | None) -> dict[str, object]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("KERNEL_PLUGINS", "KERNELS_", "PYTHONPATH"))}
    env.update(HF_HUB_OFFLINE="1", HF_HUB_CACHE=str(cache), HF_HOME=str(home), HF_ENDPOINT="http://127.0.0.1:9")
    if pythonpath is not None:
        env["PYTHONPATH"] = str(pythonpath)
    done = python_c(LOAD, repo_id, project / "kernels.lock", env=env, cwd=project)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def test_kernels_loads_offline_what_download_fetched(
    manager: object, hub_env: HubServer, hf_cache: Path, tmp_path: Path, kernels_old: Path,
    kernel_repo: Callable[..., KernelRepo], capsys: pytest.CaptureFixture[str],
) -> None:
    repo = kernel_repo(org="kernels-community", value=7)
    project = write_pyproject(tmp_path / "proj", {repo.repo_id: 1})
    assert main(["lock", str(project)]) == 0
    assert main(["download", str(project)]) == 0  # torch-cpu only: torch-cuda is not this machine's
    capsys.readouterr()
    snapshot = hf_cache / f"kernels--{repo.repo_id.replace('/', '--')}" / "snapshots" / repo.sha / "build"
    assert sorted(p.name for p in snapshot.iterdir()) == ["torch-cpu"]
    home = tmp_path / "hf-home"
    for path, version in ((None, kernels_pin()), (kernels_old, OLD)):
        got = _load_offline(project, repo.repo_id, hf_cache, home, path)
        assert (got["kernels"], got["value"]) == (version, 7), got
        assert Path(str(got["file"])).is_relative_to(snapshot / "torch-cpu"), got
