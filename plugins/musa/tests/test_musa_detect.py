"""Detection of the MUSA stack with detection-level stand-ins (no PrivateUse1 device).

Stand-ins are put in place with ``monkeypatch``: a ``torch_musa`` module in
``sys.modules`` (the same object as ``torch.musa``, as with the real package) and
``torch.version.musa``. The standard checks come from the conformance suite
(:class:`~kernel_plugins_testing.conformance.PluginConformance`); the tests after it
are the MUSA-specific ones.
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

from kernel_plugins_musa import hooks
from kernel_plugins_musa.emulation import build_stand_ins

Install = Callable[..., types.ModuleType]

PLUGIN = PluginFacts(
    hooks=hooks,
    backend="musa",
    display_name="Moore Threads MUSA",
    arch_tokens=("musa",),
    vendor_module="torch_musa",
    build_stand_ins=build_stand_ins,
    runtime_version="4030",
    version_attrs=("musa",),
    other_privateuse1="mlu",
    foreign_variants=("torch213-cxx11-mlu313-x86_64-linux",),
)


class TestMusaPlugin(PluginConformance):
    """The standard hook-level checks, for the musa plugin."""

    plugin = PLUGIN


@pytest.fixture
def no_stack(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make sure no torch_musa (real or stand-in) is visible."""
    PLUGIN.hide(monkeypatch)


@pytest.fixture
def install(monkeypatch: pytest.MonkeyPatch, no_stack: None) -> Install:
    """Put the stand-ins for ``count`` devices in place; returns torch.musa."""

    def _install(count: int = 2, **facts: Any) -> types.ModuleType:
        return PLUGIN.put_in_place(monkeypatch, build_stand_ins(count, facts))

    return _install


def test_broken_vendor_install_is_an_error_naming_the_cause(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, no_stack: None
) -> None:
    pkg = tmp_path / "torch_musa"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("raise OSError('libmusart.so.4: not found')\n", "utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(PluginError, match="libmusart.so.4"):
        hooks.detect_device()
    assert PLUGIN.manager().detect("musa").status == "error"


def test_two_devices(install: Install) -> None:
    musa = install(2)
    info = hooks.detect_device()
    assert info is not None
    assert (info.backend, info.device_type, info.count) == ("musa", "musa", 2)
    assert (info.name, info.capability) == ("MTT S4000", (2, 2))
    assert info.runtime_version == "4030"
    assert info.extension_version == "2.7.1+5ee0a64"
    assert info.emulated is True and info.notes == ()
    assert sys.modules["torch_musa"] is musa  # torch.musa is the vendor package itself
    assert musa.get_arch_list() == ["mp_22"] and musa.is_bf16_supported() is True


def test_qy1_device_without_bf16(install: Install) -> None:
    musa = install(1, device_name="MTT S80", capability=(2, 1), runtime="5012")
    info = hooks.detect_device()
    assert info is not None
    assert (info.name, info.capability, info.runtime_version) == ("MTT S80", (2, 1), "5012")
    assert musa.is_bf16_supported() is False
    props = musa.get_device_properties(0)
    assert (props.is_multi_gpu_board, props.is_integrated) == (False, False)


def test_missing_runtime_version_is_a_note(install: Install) -> None:
    install(1, runtime=None)
    info = hooks.detect_device()
    assert info is not None and info.runtime_version is None
    assert any(
        n.startswith("MUSA version unknown (torch.version.musa is None): only torch-musa")
        for n in info.notes
    ), info.notes


def test_malformed_runtime_version_is_reported_not_guessed(install: Install) -> None:
    install(1, runtime="4.3-beta")
    info = hooks.detect_device()
    assert info is not None
    assert info.runtime_version == "4.3-beta"
    assert any("unparsable torch.version.musa '4.3-beta'" in n for n in info.notes)


def test_hand_made_stack_shaped_like_the_vendor(
    monkeypatch: pytest.MonkeyPatch, no_stack: None
) -> None:
    """A stand-in written from docs/vendors.md alone, independent of the plugin's emulation."""
    props = types.SimpleNamespace(name="MTT S3000", major=2, minor=1, total_memory=32 << 30)
    vendor = types.ModuleType("torch_musa")
    vendor.__spec__ = None
    vendor.__version__ = "2.9.0.post1+musa5.1.2mp22"  # type: ignore[attr-defined]
    vendor.is_available = lambda: True  # type: ignore[attr-defined]
    vendor.device_count = lambda: 8  # type: ignore[attr-defined]
    vendor.get_device_properties = lambda i: props  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "torch_musa", vendor)
    monkeypatch.setattr(torch, "musa", vendor, raising=False)
    monkeypatch.setattr(torch.version, "musa", "5010", raising=False)
    info = hooks.detect_device()
    assert info is not None
    assert (info.count, info.name, info.capability, info.runtime_version, info.emulated) == (
        8, "MTT S3000", (2, 1), "5010", False,
    )
    assert info.extension_version == "2.9.0.post1+musa5.1.2mp22"


def test_unavailable_stack_is_no_device(monkeypatch: pytest.MonkeyPatch, no_stack: None) -> None:
    vendor = types.ModuleType("torch_musa")
    vendor.is_available = lambda: False  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "torch_musa", vendor)
    monkeypatch.setattr(torch, "musa", vendor, raising=False)
    assert hooks.detect_device() is None


def test_bad_emulation_facts_are_refused() -> None:
    from kernel_plugins_testing import EmulationError

    with pytest.raises(EmulationError, match="known facts: .*runtime"):
        build_stand_ins(1, {"sdk": "4030"})
    with pytest.raises(EmulationError, match="runtime"):
        build_stand_ins(1, {"runtime": 4030})


def test_synchronize_calls_torch_musa(install: Install) -> None:
    musa = install(2)
    info = hooks.detect_device()
    assert info is not None
    assert hooks.synchronize(info.replace(index=1)) is True
    assert musa.synchronize_calls == 1
