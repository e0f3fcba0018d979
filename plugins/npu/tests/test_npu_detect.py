"""Detection of the Ascend stack with detection-level stand-ins (no PrivateUse1 device).

Stand-ins are put in place with ``monkeypatch``: a ``torch_npu`` module in
``sys.modules``, ``torch.npu`` and ``torch.version.cann``. The standard checks come
from the conformance suite
(:class:`~kernel_plugins_testing.conformance.PluginConformance`); the tests after it
are the Ascend-specific ones.
"""

from __future__ import annotations

import sys
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import torch
from kernel_plugins.errors import PluginError
from kernel_plugins_testing.conformance import PluginConformance, PluginFacts

from kernel_plugins_npu import hooks
from kernel_plugins_npu.emulation import build_stand_ins

Install = Callable[..., types.ModuleType]

PLUGIN = PluginFacts(
    hooks=hooks,
    backend="npu",
    display_name="Huawei Ascend NPU",
    arch_tokens=("cann",),
    vendor_module="torch_npu",
    build_stand_ins=build_stand_ins,
    runtime_version="8.3.RC1",
    version_attrs=("cann",),
    other_privateuse1="musa",
    foreign_variants=("torch213-cxx11-cu128-aarch64-linux",),
)


class TestNpuPlugin(PluginConformance):
    """The standard hook-level checks, for the npu plugin."""

    plugin = PLUGIN


@pytest.fixture
def no_stack(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make sure no torch_npu (real or stand-in) is visible."""
    PLUGIN.hide(monkeypatch)


@pytest.fixture
def install(monkeypatch: pytest.MonkeyPatch, no_stack: None) -> Install:
    """Put the stand-ins for ``count`` devices in place; returns torch.npu."""

    def _install(count: int = 2, **facts: Any) -> types.ModuleType:
        return PLUGIN.put_in_place(monkeypatch, build_stand_ins(count, facts))

    return _install


def test_broken_vendor_install_is_an_error_naming_the_cause(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, no_stack: None
) -> None:
    pkg = tmp_path / "torch_npu"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("raise ImportError('libhccl.so: not found')\n", "utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(PluginError, match="libhccl.so") as info:
        hooks.detect_device()
    assert "set_env.sh" in str(info.value)


def test_two_devices(install: Install) -> None:
    npu = install(2)
    info = hooks.detect_device()
    assert info is not None
    assert (info.backend, info.device_type, info.count) == ("npu", "npu", 2)
    assert info.name == "Ascend910B2"
    assert info.runtime_version == "8.3.RC1"
    assert info.capability is None  # Ascend reports no compute capability
    assert info.extension_version == torch.__version__.split("+")[0]
    assert info.emulated is True
    assert info.notes == ("SoC version 222 (Ascend 910B family)",)
    props = npu.get_device_properties(1)
    assert (props.cube_core_num, props.vector_core_num) == (24, 48)
    assert props.L2_cache_size == 192 * 1024**2


@pytest.mark.parametrize(("cann", "runtime"), [("8.5.0", "8.5.0"), ("10.0.RC1", "10.0.RC1")])
def test_cann_versions_are_reported_as_given(install: Install, cann: str, runtime: str) -> None:
    install(1, cann=cann, soc_version=250)
    info = hooks.detect_device()
    assert info is not None
    assert info.runtime_version == runtime
    assert info.notes == ("SoC version 250 (Ascend 910_93 family)",)


@pytest.mark.parametrize("cann", ["not known", None])
def test_unknown_cann_is_a_note(install: Install, cann: str | None) -> None:
    install(1, cann=cann)
    info = hooks.detect_device()
    assert info is not None
    assert any(n.startswith("CANN version unknown") for n in info.notes)
    assert hooks.list_variants(info, _system()) == ["torch-npu", "torch-universal"]


def test_malformed_cann_is_reported_not_guessed(install: Install) -> None:
    install(1, cann="8.three")
    info = hooks.detect_device()
    assert info is not None
    assert info.runtime_version == "8.three"
    assert any("unparsable torch.version.cann '8.three'" in n for n in info.notes)


def test_hand_made_stack_shaped_like_the_vendor(
    monkeypatch: pytest.MonkeyPatch, no_stack: None
) -> None:
    """A stand-in written from docs/vendors.md alone, independent of the plugin's emulation."""
    props = types.SimpleNamespace(
        name="Ascend910B3", total_memory=64 << 30, cube_core_num=20, vector_core_num=40
    )
    npu = types.SimpleNamespace(
        is_available=lambda: True,
        device_count=lambda: 8,
        get_device_properties=lambda i: props,
        get_soc_version=lambda: 223,
    )
    vendor = types.ModuleType("torch_npu")
    vendor.__version__ = "2.7.1.post1"  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "torch_npu", vendor)
    monkeypatch.setattr(torch, "npu", npu, raising=False)
    monkeypatch.setattr(torch.version, "cann", "8.2.RC1", raising=False)
    info = hooks.detect_device()
    assert info is not None
    assert (info.count, info.name, info.runtime_version, info.capability, info.emulated) == (
        8, "Ascend910B3", "8.2.RC1", None, False,
    )
    assert info.extension_version == "2.7.1.post1"
    assert info.notes == ("SoC version 223 (Ascend 910B family)",)


def test_capability_is_not_an_npu_fact() -> None:
    from kernel_plugins_testing import EmulationError

    with pytest.raises(EmulationError, match="no compute capability"):
        build_stand_ins(1, {"capability": (2, 0)})


def test_synchronize_calls_torch_npu(install: Install) -> None:
    npu = install(2)
    info = hooks.detect_device()
    assert info is not None
    assert hooks.synchronize(info) is True
    assert npu.synchronize_calls == 1


def _system() -> Any:
    from kernel_plugins.device import SystemInfo

    return SystemInfo(cpu="x86_64", os="linux", torch_version=(2, 13), cxx11_abi=True)
