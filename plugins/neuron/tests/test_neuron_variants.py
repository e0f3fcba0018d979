"""Noarch-only variants, rejection reasons and resolution for the neuron backend."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from kernel_plugins import plugins
from kernel_plugins.device import DeviceInfo, PyDepend, SystemInfo
from kernel_plugins.resolving import resolve_variants
from kernel_plugins.sources import local_variants
from kernel_plugins.variants import parse_variant
from kernel_plugins_testing.conformance import plugin_manager, process_manager
from kernel_plugins_testing.kernel_repos import make_repo

from kernel_plugins_neuron import hooks

SYSTEM = SystemInfo(cpu="x86_64", os="linux", torch_version=(2, 13), cxx11_abi=True)
DEVICE = DeviceInfo(backend="neuron", device_type="neuron", count=2)


@pytest.fixture
def manager(monkeypatch: pytest.MonkeyPatch) -> Iterator[plugins.PluginManager]:
    """Built-in backends plus this plugin, as the process-wide manager."""
    monkeypatch.delenv("KERNEL_PLUGINS_STRICT", raising=False)
    with process_manager(plugin_manager(hooks, name="neuron")) as pm:
        yield pm


def test_backend_spec_knows_nki() -> None:
    """Names and tokens are checked by the conformance suite (test_neuron_detect.py)."""
    spec = hooks.backend_spec()
    assert spec.python_depends == {"nki": PyDepend("nki", "nki")}


def test_priority_is_above_cuda(manager: plugins.PluginManager) -> None:
    """The Neuron extension can load into a CUDA build of torch: Neuron must win."""
    backends = manager.backends()
    assert backends["neuron"].spec.priority > backends["cuda"].spec.priority


@pytest.mark.parametrize(
    "system",
    [SYSTEM, SystemInfo(cpu="aarch64", os="linux", torch_version=(2, 14), cxx11_abi=True),
     SystemInfo(cpu="x86_64", os="linux")],
)
def test_variants_are_noarch_only(system: SystemInfo) -> None:
    assert hooks.list_variants(DEVICE, system) == ["torch-neuron", "torch-universal"]


def test_explain_arch_variant() -> None:
    arch = parse_variant("torch213-cxx11-neuron-x86_64-linux")
    reason = hooks.explain_variant(DEVICE, SYSTEM, arch)
    assert reason is not None
    assert "loads no arch variants (token neuron)" in reason and "torch-neuron" in reason


def test_resolution_against_a_fixture_repo(tmp_path: Path, manager: plugins.PluginManager) -> None:
    repo = make_repo(
        tmp_path / "repo",
        [
            "torch213-cxx11-neuron-x86_64-linux",
            "torch213-cxx11-cu128-x86_64-linux",
            "torch-neuron",
            "torch-cuda",
            "torch-npu",
            "torch-universal",
        ],
    )
    res = resolve_variants(local_variants(repo).variants, device=DEVICE, system=SYSTEM)
    assert res.accepted == ("torch-neuron", "torch-universal")
    reasons = {d.variant: d.reason for d in res.decisions if not d.accepted}
    assert "loads no arch variants" in reasons["torch213-cxx11-neuron-x86_64-linux"]
    assert reasons["torch213-cxx11-cu128-x86_64-linux"] == (
        "built for backend 'cuda' (token cu128); the device is 'neuron'"
    )
    assert "noarch variant for backend 'cuda'" in reasons["torch-cuda"]
    assert "noarch variant for backend 'npu'" in reasons["torch-npu"]


def test_universal_only_repo(tmp_path: Path, manager: plugins.PluginManager) -> None:
    repo = make_repo(tmp_path / "repo", ["torch-universal", "torch-cpu"])
    res = resolve_variants(local_variants(repo).variants, device=DEVICE, system=SYSTEM)
    assert res.accepted == ("torch-universal",)

