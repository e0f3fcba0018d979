"""Detection of the native Neuron backend with detection-level stand-ins.

The PrivateUse1 name cannot be changed twice in one process, so these tests replace
``torch._C._get_privateuse1_backend_name`` and ``torch.accelerator`` with stand-ins
through ``monkeypatch``; the real rename is exercised in ``test_neuron_emulated.py``.
The standard checks come from the conformance suite
(:class:`~kernel_plugins_testing.conformance.PluginConformance`); the tests after it
are the Neuron-specific ones.
"""

from __future__ import annotations

import sys
import types
from pathlib import Path

import pytest
import torch
from kernel_plugins.errors import PluginError
from kernel_plugins_testing.conformance import PluginConformance, PluginFacts

from kernel_plugins_neuron import hooks
from kernel_plugins_neuron.emulation import build_stand_ins

PLUGIN = PluginFacts(
    hooks=hooks,
    backend="neuron",
    display_name="AWS Neuron",
    arch_tokens=(),
    vendor_module="torch_neuronx",
    build_stand_ins=build_stand_ins,
    other_privateuse1_is_error=False,  # another PrivateUse1 owner means no native neuron
    foreign_variants=(),  # every arch variant is refused with a reason (noarch only)
)


class TestNeuronPlugin(PluginConformance):
    """The standard hook-level checks, for the neuron plugin."""

    plugin = PLUGIN


@pytest.fixture
def no_stack(monkeypatch: pytest.MonkeyPatch) -> None:
    """No torch_neuronx, no torch.neuron, PrivateUse1 unnamed."""
    PLUGIN.hide(monkeypatch)


def _native_backend(
    monkeypatch: pytest.MonkeyPatch, count: int, current: str = "neuron"
) -> types.SimpleNamespace:
    """Pretend PrivateUse1 is named ``neuron`` and torch.accelerator reports ``count``."""
    accelerator = types.SimpleNamespace(
        is_available=lambda: count > 0,
        current_accelerator=lambda: types.SimpleNamespace(type=current) if count > 0 else None,
        device_count=lambda: count,
        synchronize=lambda index=None: None,
    )
    monkeypatch.setattr(torch._C, "_get_privateuse1_backend_name", lambda: "neuron")
    monkeypatch.setattr(torch, "accelerator", accelerator)
    return accelerator


def _vendor(monkeypatch: pytest.MonkeyPatch, version: str = "2.14.0.2.33") -> types.ModuleType:
    vendor = types.ModuleType("torch_neuronx")
    vendor.__version__ = version  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "torch_neuronx", vendor)
    return vendor


def test_xla_stack_is_not_the_native_backend(
    monkeypatch: pytest.MonkeyPatch, no_stack: None
) -> None:
    _vendor(monkeypatch, "2.1.2.2.20.0")  # the older XLA-based torch-neuronx: no neuron device
    assert hooks.detect_device() is None


def test_broken_vendor_install_is_an_error(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, no_stack: None
) -> None:
    pkg = tmp_path / "torch_neuronx"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("raise ImportError('libnrt.so.1: not found')\n", "utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(PluginError, match="libnrt.so.1"):
        hooks.detect_device()
    assert PLUGIN.manager().detect("neuron").status == "error"


def test_native_backend_through_torch_accelerator(
    monkeypatch: pytest.MonkeyPatch, no_stack: None
) -> None:
    _vendor(monkeypatch)
    _native_backend(monkeypatch, 3)
    stand = build_stand_ins(5, {"device_name": "Trainium3"})
    monkeypatch.setattr(torch, "neuron", stand.device_module, raising=False)
    info = hooks.detect_device()
    assert info is not None
    assert (info.backend, info.device_type) == ("neuron", "neuron")
    assert info.count == 3  # torch.accelerator comes first
    assert info.name == "Trainium3"
    assert info.extension_version == "2.14.0.2.33"
    assert (info.runtime_version, info.capability) == (None, None)
    assert info.notes == ()


def test_native_backend_with_zero_devices_is_no_device(
    monkeypatch: pytest.MonkeyPatch, no_stack: None
) -> None:
    _vendor(monkeypatch)
    _native_backend(monkeypatch, 0)
    assert hooks.detect_device() is None
    assert PLUGIN.manager().detect("neuron").status == "no device"


def test_other_current_accelerator_falls_back_to_torch_neuron(
    monkeypatch: pytest.MonkeyPatch, no_stack: None
) -> None:
    """A CUDA build of torch with GPUs reports cuda first; torch.neuron still counts."""
    _vendor(monkeypatch)
    _native_backend(monkeypatch, 8, current="cuda")
    stand = build_stand_ins(2)
    monkeypatch.setattr(torch, "neuron", stand.device_module, raising=False)
    info = hooks.detect_device()
    assert info is not None and info.count == 2


def test_torch_neuron_module_without_privateuse1_name(
    monkeypatch: pytest.MonkeyPatch, no_stack: None
) -> None:
    stand = build_stand_ins(4)
    monkeypatch.setattr(torch, "neuron", stand.device_module, raising=False)
    info = hooks.detect_device()
    assert info is not None
    assert (info.count, info.name, info.emulated) == (4, "Trainium2", True)
    assert info.notes == (
        "torch_neuronx is not installed; the neuron device was found through PyTorch alone",
    )


def test_torch_neuron_module_with_zero_devices(
    monkeypatch: pytest.MonkeyPatch, no_stack: None
) -> None:
    stand = build_stand_ins(0)
    monkeypatch.setattr(torch, "neuron", stand.device_module, raising=False)
    assert hooks.detect_device() is None


def test_neuron_device_count_order(monkeypatch: pytest.MonkeyPatch, no_stack: None) -> None:
    assert hooks.neuron_device_count(torch) is None
    _native_backend(monkeypatch, 6)
    assert hooks.neuron_device_count(torch) == 6


def test_capability_is_not_a_neuron_fact() -> None:
    from kernel_plugins_testing import EmulationError

    with pytest.raises(EmulationError, match="no compute capability"):
        build_stand_ins(1, {"capability": (2, 0)})


def test_synchronize_prefers_torch_neuron(monkeypatch: pytest.MonkeyPatch, no_stack: None) -> None:
    stand = build_stand_ins(2)
    monkeypatch.setattr(torch, "neuron", stand.device_module, raising=False)
    info = hooks.detect_device()
    assert info is not None
    assert hooks.synchronize(info.replace(index=1)) is True
    assert stand.device_module.synchronize_calls == 1


def test_synchronize_without_torch_neuron_uses_torch_accelerator(
    monkeypatch: pytest.MonkeyPatch, no_stack: None
) -> None:
    calls: list[object] = []
    accelerator = _native_backend(monkeypatch, 1)
    accelerator.synchronize = lambda index=None: calls.append(index)
    from kernel_plugins.device import DeviceInfo

    info = DeviceInfo(backend="neuron", device_type="neuron", count=1, index=0)
    assert hooks.synchronize(info) is True
    assert calls == [0]
