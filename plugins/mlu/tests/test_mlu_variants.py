"""Variant names, rejection reasons and resolution for the mlu backend."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from kernel_plugins import plugins
from kernel_plugins.device import DeviceInfo, SystemInfo
from kernel_plugins.resolving import resolve_variants
from kernel_plugins.sources import local_variants
from kernel_plugins.variants import parse_variant, resolve
from kernel_plugins_testing.conformance import plugin_manager, process_manager
from kernel_plugins_testing.kernel_repos import make_repo

from kernel_plugins_mlu import hooks

SYSTEM = SystemInfo(cpu="x86_64", os="linux", torch_version=(2, 13), cxx11_abi=True)


def _device(runtime: str | None = "3.13.5") -> DeviceInfo:
    return DeviceInfo(backend="mlu", device_type="mlu", count=1, runtime_version=runtime)


@pytest.fixture
def manager(monkeypatch: pytest.MonkeyPatch) -> Iterator[plugins.PluginManager]:
    """Built-in backends plus this plugin, as the process-wide manager."""
    monkeypatch.delenv("KERNEL_PLUGINS_STRICT", raising=False)
    with process_manager(plugin_manager(hooks, name="mlu")) as pm:
        yield pm


def test_backend_spec_priority_and_depends() -> None:
    """Names and tokens are checked by the conformance suite (test_mlu_detect.py)."""
    spec = hooks.backend_spec()
    assert 0 < spec.priority < 100  # below CUDA: a CUDA build of torch with GPUs wins
    assert spec.python_depends == {}


def test_variants_for_toolkit_3_13() -> None:
    names = hooks.list_variants(_device("3.13.5"), SYSTEM)
    assert names[0] == "torch-stable-abi213-mlu313-x86_64-linux"
    assert names[-5:] == [
        "torch-stable-abi29-mlu313-x86_64-linux",
        "torch213-mlu313-x86_64-linux",
        "torch213-cxx11-mlu313-x86_64-linux",
        "torch-mlu",
        "torch-universal",
    ]
    assert all("mlu313" in n for n in names[:-2])


@pytest.mark.parametrize(
    ("runtime", "token"), [("5.0.1", "mlu50"), ("3.9", "mlu39"), ("4.12.0", "mlu412")]
)
def test_variants_name_the_exact_toolkit(runtime: str, token: str) -> None:
    names = hooks.list_variants(_device(runtime), SYSTEM)
    tokens = {parse_variant(n).token for n in names} - {None}
    assert tokens == {token}


@pytest.mark.parametrize("runtime", [None, "unknown", "3"])
def test_unknown_toolkit_gives_noarch_only(runtime: str | None) -> None:
    assert hooks.list_variants(_device(runtime), SYSTEM) == ["torch-mlu", "torch-universal"]


def test_variants_without_torch_are_noarch_only() -> None:
    system = SystemInfo(cpu="aarch64", os="linux")
    assert hooks.list_variants(_device(), system) == ["torch-mlu", "torch-universal"]


def test_explain_other_toolkit() -> None:
    v = parse_variant("torch213-cxx11-mlu312-x86_64-linux")
    assert hooks.explain_variant(_device("3.13.5"), SYSTEM, v) == (
        "CNToolkit 3.12 does not match the system's CNToolkit 3.13 (an exact match is required)"
    )


def test_explain_with_unknown_system_toolkit_names_the_fix() -> None:
    v = parse_variant("torch213-cxx11-mlu313-x86_64-linux")
    reason = hooks.explain_variant(_device(None), SYSTEM, v)
    assert reason is not None
    assert "CNToolkit 3.13 cannot be checked" in reason
    assert "KERNEL_PLUGINS_MLU_TOOLKIT_VERSION" in reason


def test_explain_token_without_version() -> None:
    v = parse_variant("torch213-cxx11-mlu3-x86_64-linux")
    reason = hooks.explain_variant(_device(), SYSTEM, v)
    assert reason == "backend token 'mlu3' does not encode a CNToolkit version"


REPO_VARIANTS = [
    "torch-stable-abi211-mlu313-x86_64-linux",
    "torch213-mlu313-x86_64-linux",
    "torch213-cxx11-mlu313-x86_64-linux",
    "torch213-cxx11-mlu312-x86_64-linux",
    "torch213-cxx11-mlu313-aarch64-linux",
    "torch212-cxx11-mlu313-x86_64-linux",
    "torch-stable-abi214-mlu313-x86_64-linux",
    "torch213-cxx11-cu128-x86_64-linux",
    "torch213-cxx11-cann83-x86_64-linux",
    "torch-mlu",
    "torch-cuda",
    "torch-npu",
    "torch-universal",
]


def test_resolution_against_a_fixture_repo(tmp_path: Path, manager: plugins.PluginManager) -> None:
    repo = make_repo(tmp_path / "repo", REPO_VARIANTS)
    available = local_variants(repo).variants
    res = resolve_variants(available, device=_device("3.13.5"), system=SYSTEM)
    assert res.accepted == (
        "torch-stable-abi211-mlu313-x86_64-linux",
        "torch213-mlu313-x86_64-linux",
        "torch213-cxx11-mlu313-x86_64-linux",
        "torch-mlu",
        "torch-universal",
    )
    reasons = {d.variant: d.reason for d in res.decisions if not d.accepted}
    assert reasons["torch213-cxx11-mlu312-x86_64-linux"] == (
        "CNToolkit 3.12 does not match the system's CNToolkit 3.13 (an exact match is required)"
    )
    assert reasons["torch213-cxx11-mlu313-aarch64-linux"] == (
        "built for CPU aarch64, the system is x86_64"
    )
    assert "built for torch 2.12" in reasons["torch212-cxx11-mlu313-x86_64-linux"]
    assert "needs torch >= 2.14" in reasons["torch-stable-abi214-mlu313-x86_64-linux"]
    assert reasons["torch213-cxx11-cu128-x86_64-linux"] == (
        "built for backend 'cuda' (token cu128); the device is 'mlu'"
    )
    assert "cann83" in reasons["torch213-cxx11-cann83-x86_64-linux"]
    assert "noarch variant for backend 'cuda'" in reasons["torch-cuda"]
    assert "noarch variant for backend 'npu'" in reasons["torch-npu"]


def test_resolution_on_another_toolkit_falls_to_noarch(
    tmp_path: Path, manager: plugins.PluginManager
) -> None:
    repo = make_repo(tmp_path / "repo", REPO_VARIANTS)
    res = resolve_variants(local_variants(repo).variants, device=_device("3.9.0"), system=SYSTEM)
    assert res.accepted == ("torch-mlu", "torch-universal")
    reasons = {d.variant: d.reason for d in res.decisions if not d.accepted}
    assert reasons["torch213-cxx11-mlu313-x86_64-linux"] == (
        "CNToolkit 3.13 does not match the system's CNToolkit 3.9 (an exact match is required)"
    )


def test_mlu_variants_are_rejected_for_cuda_with_the_owner(manager: plugins.PluginManager) -> None:
    cuda = DeviceInfo(backend="cuda", device_type="cuda", count=1, runtime_version="12.8")
    res = resolve_variants(
        ["torch213-cxx11-mlu313-x86_64-linux", "torch-mlu"], device=cuda, system=SYSTEM
    )
    assert res.accepted == ()
    reasons = {d.variant: d.reason for d in res.decisions}
    assert reasons["torch213-cxx11-mlu313-x86_64-linux"] == (
        "built for backend 'mlu' (token mlu313); the device is 'cuda'"
    )


def test_resolve_with_the_hooks_directly() -> None:
    device = _device("5.0.0")
    res = resolve(
        [
            "torch213-cxx11-mlu50-x86_64-linux",
            "torch213-cxx11-mlu313-x86_64-linux",
            "torch-universal",
        ],
        device,
        SYSTEM,
        hooks.list_variants(device, SYSTEM),
        explain=lambda v: hooks.explain_variant(device, SYSTEM, v),
    )
    assert res.best == "torch213-cxx11-mlu50-x86_64-linux"
    assert res.accepted[-1] == "torch-universal"
