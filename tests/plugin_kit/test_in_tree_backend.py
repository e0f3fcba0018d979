"""Issue 37, item 3: backends for device types PyTorch itself knows (``hpu``, ``xla``, ``mtia``...).

A :class:`PrivateUse1Backend` for such a name is refused where the plugin is loaded, with the
reason; a backend that writes its own hooks installs and lists, is never advised an emulation
that cannot run, ``--emulate hpu`` says why not, and the conformance suite skips what needs
emulation saying so while its other hook tests run (``TestGaudiHooks`` below)."""

from __future__ import annotations

import json
import re
import types
from pathlib import Path

import pytest
from kernel_plugins_testing import EmulationError, emulate, make_device_module
from kernel_plugins_testing.conformance import (
    EmulatedBackendConformance,
    Expected,
    PluginConformance,
    PluginFacts,
)
from kernel_plugins_testing.stand_ins import StandIns

from kernel_plugins import plugins
from kernel_plugins.cli.main import main
from kernel_plugins.detection import get_device
from kernel_plugins.emulation_registry import IN_TREE_DEVICE_TYPES
from kernel_plugins.errors import NoDeviceError, PluginError, UnknownDeviceError
from kernel_plugins.plugin_kit import PrivateUse1Backend
from tests.plugin_kit.gaudi_backend import VENDOR, Gaudi
from tests.support.fakes import FakeEntryPoint

WHY = "is a device type PyTorch itself knows (in-tree)"
GUIDE = "'Backends for in-tree device types' in docs/writing-a-backend.md"


def test_the_in_tree_names_are_those_torch_device_accepts() -> None:
    torch = pytest.importorskip("torch")
    with pytest.raises(RuntimeError, match="Expected one of") as e:
        torch.device("surely_not_a_device")
    listed = str(e.value).split("Expected one of ", 1)[1].split(" device type", 1)[0].split(", ")
    slot = torch._C._get_privateuse1_backend_name()  # renamed where a device is emulated
    assert {*listed} - {slot} == IN_TREE_DEVICE_TYPES - {"privateuseone"}


def test_a_privateuse1_backend_for_an_in_tree_name_is_refused_when_loaded(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import importlib.metadata

    def hpu() -> PrivateUse1Backend:
        return PrivateUse1Backend(name="hpu", display_name="Intel Gaudi", vendor_module=VENDOR, import_hint="")

    monkeypatch.setattr(importlib.metadata, "entry_points",
                        lambda group=None: [FakeEntryPoint("hpu", hpu)] if group == "kernel_plugins" else [])
    monkeypatch.delenv("KERNEL_PLUGINS_LOAD", raising=False)
    old = plugins.reset_manager(plugins.PluginManager())
    try:
        assert "hpu" not in plugins.get_manager().backends()
        (failure,) = [f for f in plugins.get_manager().failures() if f.name == "hpu"]
        assert "cannot be a PrivateUse1Backend" in failure.describe() and WHY in failure.describe()
        with pytest.raises(UnknownDeviceError) as e:
            get_device("hpu")
        text = " ".join(str(e.value).split())
        assert "The hpu plugin is installed but failed" in text and WHY in text and GUIDE in text
        assert "--emulate" not in text.replace("(kernel-plugins-testing, --emulate)", "")
    finally:
        plugins.reset_manager(old)
    assert PrivateUse1Backend(name="gcu", display_name="G", vendor_module="torch_gcu", import_hint="").dtype == "gcu"
    with pytest.raises(PluginError, match=re.escape(WHY)):
        PrivateUse1Backend(name="gaudi", device_type="hpu", display_name="G", vendor_module=VENDOR, import_hint="")


def test_a_hand_written_in_tree_backend_lists_and_is_never_advised_an_emulation(
    manager: plugins.PluginManager, capsys: pytest.CaptureFixture[str],
) -> None:
    manager.register(Gaudi(), name="hpu", distribution="kernel-plugins-hpu", version="1")
    manager.register(Gaudi("gcu"), name="gcu", distribution="kernel-plugins-gcu", version="1")
    assert main(["list-backends", "--json"]) == 0
    rows = {r["name"]: r for r in json.loads(capsys.readouterr().out)["backends"]}
    assert rows["hpu"]["status"] == rows["gcu"]["status"] == "no device"
    for name, advised in (("hpu", False), ("gcu", True)):  # the out-of-tree twin is advised it
        with pytest.raises(NoDeviceError) as e:
            get_device(name)
        assert (f"--emulate {name}" in str(e.value)) is advised, str(e.value)
    with pytest.raises(EmulationError, match=re.escape(WHY)):  # refused before PyTorch is touched
        emulate("hpu")
    assert main(["--emulate", "hpu", "list-backends"]) != 0
    err = " ".join(capsys.readouterr().err.split())
    assert WHY in err and GUIDE in err, err


def _stand_ins(count: int) -> StandIns:
    package = types.ModuleType(VENDOR)
    package.__spec__ = None
    return StandIns(package=package, device_module=make_device_module(
        "hpu", count, properties=[{"name": "HL-225", "major": 1, "minor": 0}] * count or None))


HPU = PluginFacts(hooks=Gaudi(), backend="hpu", display_name="Intel Gaudi", arch_tokens=(),
                  vendor_module=VENDOR, build_stand_ins=_stand_ins, package="tests.plugin_kit",
                  modules=("gaudi_backend",), distribution="kernel-plugins-hpu")


class TestGaudiHooks(PluginConformance):
    """The hook-level conformance tests, run on the in-tree backend (two skip, saying why)."""

    plugin = HPU


def test_the_conformance_suite_skips_what_needs_emulation_saying_why(monkeypatch: pytest.MonkeyPatch) -> None:
    class Emulated(EmulatedBackendConformance):
        scenario = Path("never-run.py")
        expected = Expected(backend="hpu", no_variant_reason="unused")

    names = [n for n in vars(EmulatedBackendConformance) if n.startswith("test_")]
    assert len(names) >= 10
    for name in names:
        with pytest.raises(pytest.skip.Exception, match=re.escape(WHY)):
            getattr(Emulated(), name)()
    for name in ("test_another_backend_owning_privateuse1_is_reported_without_importing",
                 "test_emulate_device_hook_needs_an_emulated_module"):
        with pytest.raises(pytest.skip.Exception, match=re.escape(WHY)):
            getattr(TestGaudiHooks(), name)(monkeypatch, *(("tmp",) if "owning" in name else ()))
