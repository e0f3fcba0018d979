"""Kernels from organisations outside the allowlist need an explicit opt-in, on every path."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

import kernel_plugins
from kernel_plugins.cli.main import main
from kernel_plugins.errors import TrustError
from kernel_plugins.registry import module_name
from kernel_plugins.trust import TRUSTED_ORGS_ENV, check_trusted, is_trusted
from tests.lock.conftest import KernelRepo, cpu_variant, write_pyproject
from tests.support.hub import HubServer, make_kernel_repo


def test_default_allowlist_and_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(TRUSTED_ORGS_ENV, raising=False)
    assert is_trusted("kernels-community/activation")
    assert is_trusted("Kernels-Community/activation")
    assert not is_trusted("acme/activation")
    assert not is_trusted("kernels-community-fork/activation")
    monkeypatch.setenv(TRUSTED_ORGS_ENV, " acme , ,other-org/only-this")
    assert is_trusted("acme/anything")
    assert is_trusted("other-org/only-this")
    assert not is_trusted("other-org/something-else")


def test_refusal_explains_both_ways_to_allow(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(TRUSTED_ORGS_ENV, raising=False)
    with pytest.raises(TrustError) as info:
        check_trusted("acme/activation")
    message = str(info.value)
    assert "'acme' is not trusted (trusted: kernels-community)" in message
    assert "trust_remote_code=True" in message and "--trust-remote-code" in message
    assert f"{TRUSTED_ORGS_ENV}=acme" in message
    check_trusted("acme/activation", trust_remote_code=True)


@pytest.fixture
def untrusted(
    kernel_repo: Callable[..., KernelRepo], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> tuple[KernelRepo, Path]:
    """An ``acme/...`` repository and a project locking it."""
    monkeypatch.delenv(TRUSTED_ORGS_ENV, raising=False)
    repo = kernel_repo(org="acme")
    project = write_pyproject(tmp_path / "proj", {repo.repo_id: 1})
    assert main(["lock", str(project)]) == 0
    return repo, project


@pytest.mark.parametrize("path", ["load", "locked-load"])
def test_untrusted_org_refused_on_load_paths(
    manager: object, hub_env: HubServer, untrusted: tuple[KernelRepo, Path], path: str
) -> None:
    repo, project = untrusted
    kwargs = {"version": 1} if path == "load" else {"lockfile": project}
    hub_env.clear_requests()
    with pytest.raises(TrustError, match=repo.repo_id):
        kernel_plugins.load(repo.repo_id, device="cpu", **kwargs)
    assert hub_env.paths() == ["/api/organizations/acme/overview"]  # nothing was fetched
    assert module_name(repo.kernel_id) not in sys.modules
    module = kernel_plugins.load(repo.repo_id, device="cpu", trust_remote_code=True, **kwargs)
    assert module.VALUE == 1


def test_untrusted_org_refused_by_download_command(
    hub_env: HubServer, hf_cache: Path, untrusted: tuple[KernelRepo, Path],
    capsys: pytest.CaptureFixture[str],
) -> None:
    repo, project = untrusted
    hub_env.clear_requests()
    assert main(["download", str(project)]) == 1
    assert f"Refusing to load kernel code from '{repo.repo_id}'" in capsys.readouterr().err
    assert hub_env.paths() == ["/api/organizations/acme/overview"]  # nothing was fetched
    assert main(["download", str(project), "--trust-remote-code"]) == 0


def test_environment_allowlist_lets_the_org_load(
    manager: object, hub_env: HubServer, untrusted: tuple[KernelRepo, Path],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    repo, project = untrusted
    monkeypatch.setenv(TRUSTED_ORGS_ENV, "acme")
    assert kernel_plugins.load(repo.repo_id, lockfile=project, device="cpu").VALUE == 1


LAYERS = """
from torch import nn


class Double(nn.Module):
    def forward(self, x):
        return x * 2
"""


def test_untrusted_org_refused_through_layers(
    manager: object, hub_env: HubServer, hub_server: HubServer, tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import torch
    from torch import nn

    from kernel_plugins.layers import (
        KernelRepository,
        LayerRepository,
        LockedLayerRepository,
        Mode,
        kernel_choice,
        kernelize,
        use_kernel_forward_from_hub,
        use_kernel_mapping,
    )

    monkeypatch.delenv(TRUSTED_ORGS_ENV, raising=False)
    repo_id = "acme/lk-layers-trust"
    files = cpu_variant("_lk_layers_trust_v1", 1)
    files["__init__.py"] = b"from . import layers\n"
    files["layers.py"] = LAYERS.encode()
    make_kernel_repo(hub_server, repo_id, variants={"torch-cpu": files}, branches=("v1",))
    project = write_pyproject(tmp_path / "proj", {repo_id: 1})
    assert main(["lock", str(project)]) == 0

    @use_kernel_forward_from_hub("LkDouble")
    class Double(nn.Module):
        def forward(self, x):
            return x + x

    class Mine(KernelRepository):
        """A user's own repository type: it goes through the same trust check (a truthy
        ``trust_remote_code`` that is not ``True`` grants nothing, as on the built-in ones)."""

        member = "Double"

        def target(self) -> str:
            return repo_id

        def load_options(self) -> dict[str, object]:
            return {"version": 1, "trust_remote_code": "yes"}

    repos = {
        "layer": LayerRepository(repo_id, layer_name="Double", version=1),
        "locked": LockedLayerRepository(
            repo_id, layer_name="Double", lockfile=project / "kernels.lock"
        ),
        "a user's subclass": Mine(),
    }
    for repo in repos.values():
        model = Double()
        with use_kernel_mapping({"LkDouble": {"cpu": repo}}):
            with pytest.raises(TrustError, match=repo_id):
                kernelize(model, mode=Mode.INFERENCE, device="cpu")
            kernelize(model, mode=Mode.INFERENCE, device="cpu", trust_remote_code=True)
        assert kernel_choice(model).uses_kernel
    monkeypatch.setenv(TRUSTED_ORGS_ENV, "acme")
    for repo in repos.values():
        model = Double()
        with use_kernel_mapping({"LkDouble": {"cpu": repo}}):
            kernelize(model, mode=Mode.INFERENCE, device="cpu")
        assert kernel_choice(model).uses_kernel
        assert torch.equal(model(torch.ones(2)), torch.full((2,), 2.0))


def test_local_kernels_and_local_paths_are_exempt(
    manager: object, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(TRUSTED_ORGS_ENV, raising=False)
    variant = tmp_path / "kernel" / "build" / "torch-cpu"
    for rel, content in cpu_variant("_lk_local_exempt_v1", 1).items():
        (variant / rel).parent.mkdir(parents=True, exist_ok=True)
        (variant / rel).write_bytes(content)
    assert json.loads((variant / "metadata.json").read_text())["id"] == "_lk_local_exempt_v1"
    assert kernel_plugins.load(tmp_path / "kernel", device="cpu").VALUE == 1
    monkeypatch.setenv("LOCAL_KERNELS", f"acme/not-on-any-hub={tmp_path / 'kernel'}")
    assert kernel_plugins.load("acme/not-on-any-hub", device="cpu").VALUE == 1
