"""The neuron plugin against the conformance suite, with the AWS Neuron facts of conformance.toml.

The suite (:mod:`kernel_plugins_testing.conformance`) runs every standard check with
these facts. Neuron's own detection (the native TorchNeuron backend: the PrivateUse1
name and ``torch.accelerator`` first, ``torch.neuron`` second) is checked by the methods
below; the PrivateUse1 name cannot change twice in one process, so they replace
``torch._C._get_privateuse1_backend_name`` and ``torch.accelerator`` through
``monkeypatch`` (the real rename runs in ``test_neuron_emulated.py``).
"""

from __future__ import annotations

import sys
import types
from pathlib import Path

import pytest
import torch
from kernel_plugins.device import DeviceInfo
from kernel_plugins_testing.conformance import declared_suites

from kernel_plugins_neuron.hooks import NEURON, neuron_device_count

SUITES = declared_suites(NEURON, Path(__file__).with_name("conformance.toml"))


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


def _vendor(monkeypatch: pytest.MonkeyPatch, version: str = "2.14.0.2.33") -> None:
    vendor = types.ModuleType("torch_neuronx")
    vendor.__version__ = version  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "torch_neuronx", vendor)


class TestNeuronPlugin(SUITES.plugin):  # type: ignore[name-defined,misc]
    """Hook-level checks of the neuron plugin, and its native-backend detection."""

    def _torch_neuron(self, monkeypatch: pytest.MonkeyPatch, count: int, **facts: object) -> None:
        """Only ``torch.neuron`` (the stand-in device module), no vendor package."""
        self.plugin.hide(monkeypatch)
        stand = self.plugin.stand_ins(count, **facts)
        monkeypatch.setattr(torch, "neuron", stand.device_module, raising=False)

    def test_xla_stack_is_not_the_native_backend(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.plugin.hide(monkeypatch)
        _vendor(monkeypatch, "2.1.2.2.20.0")  # the older XLA-based torch-neuronx: no device
        assert NEURON.detect_device() is None

    def test_native_backend_through_torch_accelerator(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        self._torch_neuron(monkeypatch, 5, device_name="Trainium3")
        _vendor(monkeypatch)
        _native_backend(monkeypatch, 3)
        info = NEURON.detect_device()
        assert info is not None
        assert (info.backend, info.device_type) == ("neuron", "neuron")
        assert info.count == 3  # torch.accelerator comes first
        assert (info.name, info.extension_version) == ("Trainium3", "2.14.0.2.33")
        assert (info.runtime_version, info.capability, info.notes) == (None, None, ())

    def test_native_backend_with_zero_devices_is_no_device(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        self.plugin.hide(monkeypatch)
        _vendor(monkeypatch)
        _native_backend(monkeypatch, 0)
        assert NEURON.detect_device() is None
        assert self.plugin.manager().detect("neuron").status == "no device"

    def test_other_current_accelerator_falls_back_to_torch_neuron(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """A CUDA build of torch with GPUs reports cuda first; torch.neuron still counts."""
        self._torch_neuron(monkeypatch, 2)
        _vendor(monkeypatch)
        _native_backend(monkeypatch, 8, current="cuda")
        info = NEURON.detect_device()
        assert info is not None and info.count == 2

    def test_torch_neuron_module_without_the_vendor_package(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        self._torch_neuron(monkeypatch, 4)
        info = NEURON.detect_device()
        assert info is not None
        assert (info.count, info.name, info.emulated) == (4, "Trainium2", True)
        assert info.notes == (
            "torch_neuronx is not installed; the neuron device was found through PyTorch alone",
        )

    def test_torch_neuron_module_with_zero_devices(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self._torch_neuron(monkeypatch, 0)
        assert NEURON.detect_device() is None

    def test_neuron_device_count_order(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.plugin.hide(monkeypatch)
        assert neuron_device_count(torch) is None
        _native_backend(monkeypatch, 6)
        assert neuron_device_count(torch) == 6

    def test_synchronize_without_torch_neuron_uses_torch_accelerator(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        self.plugin.hide(monkeypatch)
        calls: list[object] = []
        accelerator = _native_backend(monkeypatch, 1)
        accelerator.synchronize = lambda index=None: calls.append(index)
        info = DeviceInfo(backend="neuron", device_type="neuron", count=1, index=0)
        assert NEURON.synchronize(info) is True
        assert calls == [0]
