"""Detection of the Cambricon stack with detection-level stand-ins (no PrivateUse1 device).

Stand-ins are put in place with ``monkeypatch``: a ``torch_mlu`` module in
``sys.modules``, ``torch.mlu``, ``torch.version.mlu`` and ``NEUWARE_HOME``. The
standard checks come from the conformance suite
(:class:`~kernel_plugins_testing.conformance.PluginConformance`); the tests after it
are the Cambricon-specific ones.
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

from kernel_plugins_mlu import hooks
from kernel_plugins_mlu.emulation import build_stand_ins
from kernel_plugins_mlu.versions import TOOLKIT_ENV

Install = Callable[..., types.ModuleType]

PLUGIN = PluginFacts(
    hooks=hooks,
    backend="mlu",
    display_name="Cambricon MLU",
    arch_tokens=("mlu",),
    vendor_module="torch_mlu",
    build_stand_ins=build_stand_ins,
    runtime_version="3.13.5",
    version_attrs=("mlu",),
    environ=(TOOLKIT_ENV,),
)


class TestMluPlugin(PluginConformance):
    """The standard hook-level checks, for the mlu plugin."""

    plugin = PLUGIN


@pytest.fixture
def no_stack(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make sure no torch_mlu (real or stand-in) is visible."""
    PLUGIN.hide(monkeypatch)


@pytest.fixture
def install(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, no_stack: None) -> Install:
    """Put the stand-ins for ``count`` devices in place; returns torch.mlu."""

    def _install(count: int = 2, **facts: Any) -> types.ModuleType:
        return PLUGIN.put_in_place(monkeypatch, build_stand_ins(count, facts, workdir=tmp_path))

    return _install


def test_blocked_vendor_module_counts_as_absent(
    monkeypatch: pytest.MonkeyPatch, no_stack: None
) -> None:
    monkeypatch.setitem(sys.modules, "torch_mlu", None)
    assert hooks.detect_device() is None


def test_broken_vendor_install_is_an_error_naming_the_cause(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, no_stack: None
) -> None:
    pkg = tmp_path / "site" / "torch_mlu"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text(
        "raise ImportError('libcnrt.so: cannot open shared object file')\n", encoding="utf-8"
    )
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    with pytest.raises(PluginError, match="libcnrt.so") as info:
        hooks.detect_device()
    assert "NEUWARE_HOME" in str(info.value)
    outcome = PLUGIN.manager().detect("mlu")
    assert outcome.status == "error"
    assert outcome.error is not None and "libcnrt.so" in outcome.error


def test_vendor_without_torch_mlu_module_is_an_error(
    monkeypatch: pytest.MonkeyPatch, no_stack: None
) -> None:
    fake = types.ModuleType("torch_mlu")
    fake.__spec__ = None
    monkeypatch.setitem(sys.modules, "torch_mlu", fake)
    with pytest.raises(PluginError, match="torch.mlu does not exist"):
        hooks.detect_device()


def test_two_devices(install: Install) -> None:
    install(2)
    info = hooks.detect_device()
    assert info is not None
    assert (info.backend, info.device_type, info.count) == ("mlu", "mlu", 2)
    assert info.name == "MLU590-H8"
    assert info.capability == (5, 0)
    assert info.runtime_version == "3.13.5"
    assert info.extension_version is not None and info.extension_version.startswith("1.22.0+torch")
    assert info.emulated is True
    assert info.notes == ()
    assert PLUGIN.manager().detect("mlu").status == "available"


def test_vendor_facts_are_reported(install: Install) -> None:
    mlu = install(3, device_name="MLU370-X8", capability=(3, 0), toolkit="3.9.0")
    info = hooks.detect_device()
    assert info is not None
    assert (info.count, info.name, info.capability, info.runtime_version) == (
        3, "MLU370-X8", (3, 0), "3.9.0",
    )
    assert mlu.is_bf16_supported() is False
    props = mlu.get_device_properties(2)
    assert props.cluster_count * props.core_num_per_cluster == props.multi_processor_count


def test_torch_version_mlu_is_none(install: Install) -> None:
    install(1)
    assert hasattr(torch.version, "mlu") and torch.version.mlu is None


def test_malformed_extension_version_is_a_note(install: Install) -> None:
    install(1, version="1.22.0")
    info = hooks.detect_device()
    assert info is not None
    assert info.extension_version == "1.22.0"
    assert any("unparsable torch_mlu.__version__ '1.22.0'" in n for n in info.notes)


def test_extension_built_for_another_torch_is_a_note(install: Install) -> None:
    install(1, version="1.22.0+torch2.4.0")
    info = hooks.detect_device()
    assert info is not None
    assert any("built for torch 2.4.0" in n for n in info.notes)


def test_unreadable_toolkit_is_none_with_a_note(install: Install) -> None:
    install(1, toolkit=None)
    info = hooks.detect_device()
    assert info is not None
    assert info.runtime_version is None
    assert any("CNToolkit version unknown" in n and TOOLKIT_ENV in n for n in info.notes)


def test_explicit_toolkit_variable_overrides_the_file(
    install: Install, monkeypatch: pytest.MonkeyPatch
) -> None:
    install(1, toolkit="3.9.0")
    monkeypatch.setenv(TOOLKIT_ENV, "3.13.5")
    info = hooks.detect_device()
    assert info is not None and info.runtime_version == "3.13.5"


def test_hand_made_stack_shaped_like_the_vendor(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, no_stack: None
) -> None:
    """A stand-in written from docs/vendors.md alone, independent of the plugin's emulation."""
    props = types.SimpleNamespace(
        name="MLU370-S4", major=3, minor=0, multi_processor_count=8, total_memory=24 << 30,
        cluster_count=2, core_num_per_cluster=4,
    )
    mlu = types.SimpleNamespace(
        is_available=lambda: True, device_count=lambda: 4, get_device_properties=lambda i: props
    )
    vendor = types.ModuleType("torch_mlu")
    vendor.__spec__ = None
    vendor.__version__ = "1.24.1-torch2.13.0"  # type: ignore[attr-defined]
    (tmp_path / "version.txt").write_text("Neuware Version 3.15.2\n", encoding="utf-8")
    monkeypatch.setitem(sys.modules, "torch_mlu", vendor)
    monkeypatch.setattr(torch, "mlu", mlu, raising=False)
    monkeypatch.setenv("NEUWARE_HOME", str(tmp_path))
    info = hooks.detect_device()
    assert info is not None
    assert (info.count, info.name, info.capability, info.runtime_version, info.emulated) == (
        4, "MLU370-S4", (3, 0), "3.15.2", False,
    )
    assert info.notes == ()


def test_unknown_emulation_fact_is_refused(tmp_path: Path) -> None:
    from kernel_plugins_testing import EmulationError

    with pytest.raises(EmulationError, match="cluster_count"):
        build_stand_ins(1, {"clusters": 4}, workdir=tmp_path)
    with pytest.raises(EmulationError, match="capability"):
        build_stand_ins(1, {"capability": "5.0"}, workdir=tmp_path)


def test_synchronize_calls_torch_mlu(install: Install) -> None:
    mlu = install(2)
    info = hooks.detect_device()
    assert info is not None
    assert hooks.synchronize(info) is True
    assert hooks.synchronize(info.replace(index=1)) is True
    assert mlu.synchronize_calls == 2
