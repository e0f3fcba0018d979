"""``verify PROJECT`` is not green when it checked nothing: a pinned kernel with no
downloaded variant fails the command unless ``--allow-missing`` says that is fine."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from kernel_plugins.cli.main import main
from tests.lock.conftest import KernelRepo, write_pyproject
from tests.support.hub import HubServer


def test_verify_fails_until_a_pinned_kernel_is_downloaded(
    manager: object, hub_env: HubServer, hf_cache: Path, kernel_repo: Callable[..., KernelRepo],
    tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    repo = kernel_repo(org="kernels-community")
    project = write_pyproject(tmp_path / "proj", {repo.repo_id: 1})
    assert main(["lock", str(project)]) == 0
    capsys.readouterr()

    assert main(["verify", str(project)]) == 1
    out, err = capsys.readouterr()
    assert "0 checked, 0 failed" in out
    assert f"nothing was checked for {repo.repo_id}" in err
    assert "kernel-plugins download PROJECT" in err and "--allow-missing" in err

    assert main(["verify", str(project), "--json"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert (report["checked"], report["unchecked"]) == (0, [repo.repo_id])

    assert main(["verify", str(project), "--allow-missing"]) == 0
    capsys.readouterr()

    assert main(["download", str(project)]) == 0
    capsys.readouterr()
    # this machine's variant is checked; the others of the lock may stay not downloaded
    assert main(["verify", str(project)]) == 0
    out, err = capsys.readouterr()
    assert "torch-cuda: not downloaded" in out and "nothing was checked" not in err
