"""emulate(): argument checks, a stack without devices, and the backend plugin hook.

Scenarios that rename PrivateUse1 run in fresh interpreters; argument checks happen
before any rename, so they run in this process.
"""

from __future__ import annotations

import dataclasses
import json
import types

import pytest
from kernel_plugins_testing import (
    EmulatedDevice,
    EmulationError,
    emulate,
    emulated_devices,
    run_in_fresh_interpreter,
)

from kernel_plugins.errors import KernelPluginsError

from .scenario import error_of, run_scenario


@pytest.mark.parametrize("name", ["MLU", "1mlu", "ml-u", "", "a" * 33, None, "mlu:0"])
def test_invalid_names_are_refused_before_any_rename(name: object) -> None:
    before = emulated_devices()
    with pytest.raises(EmulationError, match="lowercase identifier"):
        emulate(name, devices=1)  # type: ignore[arg-type]
    assert emulated_devices() == before


@pytest.mark.parametrize("devices", [-1, 1.5, True, "2"])
def test_invalid_device_counts_are_refused(devices: object) -> None:
    before = emulated_devices()
    with pytest.raises(EmulationError, match="whole number >= 0"):
        emulate("mlu", devices=devices)  # type: ignore[arg-type]
    assert emulated_devices() == before


@pytest.mark.parametrize("name", ["cuda", "meta", "linalg", "nn"])
def test_names_torch_already_uses_are_refused_before_any_rename(name: str) -> None:
    import torch

    before = torch._C._get_privateuse1_backend_name()
    with pytest.raises(EmulationError, match=name):
        emulate(name, devices=1)
    assert torch._C._get_privateuse1_backend_name() == before
    assert name not in [d.name for d in emulated_devices()]


def test_emulation_error_is_a_kernel_plugins_error() -> None:
    assert issubclass(EmulationError, KernelPluginsError)


def test_emulated_device_is_frozen() -> None:
    dev = EmulatedDevice("mlu", 2, types.MappingProxyType({"a": 1}))
    with pytest.raises(dataclasses.FrozenInstanceError):
        dev.devices = 3  # type: ignore[misc]
    assert "EMULATED" in dev.summary() and "not real hardware" in dev.summary()


def test_run_in_fresh_interpreter_passes_env_and_captures_output() -> None:
    proc = run_in_fresh_interpreter(
        "import os, sys, kernel_plugins_testing as t\n"
        "print(os.environ['KP_PROBE'], 'torch' in sys.modules)\n"
        "sys.exit(3)",
        env={"KP_PROBE": "hello"},
    )
    assert proc.returncode == 3
    # importing kernel_plugins_testing must not import torch
    assert proc.stdout.split() == ["hello", "False"]


NO_DEVICE = """
import torch
from kernel_plugins import emulation_registry as _emulation
from kernel_plugins_testing import emulate

dev = emulate("foo", devices=0)
check("dev", lambda: [dev.name, dev.devices])
check("module", lambda: [torch.foo.device_count(), torch.foo.is_available(),
                         torch.foo.__kernel_plugins_emulated__])
check("tensor", lambda: torch.ones(1, device="foo"))
check("recorded", lambda: [_emulation.is_emulated("foo"), _emulation.emulated_count("foo")])
check("backend_name", lambda: torch._C._get_privateuse1_backend_name())
"""


def test_zero_devices_emulates_a_stack_without_devices() -> None:
    res = run_scenario(NO_DEVICE)
    assert res["dev"] == ["foo", 0]
    assert res["module"] == [0, False, True]
    err = error_of(res["tensor"])
    assert err is not None and err[0] == "RuntimeError" and "No foo devices" in err[1]
    assert res["recorded"] == [True, 0]
    assert res["backend_name"] == "foo"


PLUGIN_HOOK = """
import sys, types
import torch
from kernel_plugins import plugins
from kernel_plugins.device import BackendSpec
from kernel_plugins.hookspecs import hookimpl
from kernel_plugins_testing import configure_device_module, emulate

calls = []
fake = types.ModuleType("fake_accel_backend")

@hookimpl
def backend_spec():
    return BackendSpec(name="fakeacc", device_type="fakeacc", display_name="Fake Accel")

@hookimpl
def emulate_device(count, facts):
    calls.append([count, dict(facts)])
    # what a vendor plugin does: vendor attributes on torch.<name>, a stand-in package
    configure_device_module(torch.fakeacc, properties=[{"name": "Fake-1", "major": 3,
                            "minor": 7, "cores": 64}], extra={"vendor_version": "9.9"})
    sys.modules["torch_fakeacc"] = types.ModuleType("torch_fakeacc")
    return True

fake.backend_spec = backend_spec
fake.emulate_device = emulate_device
manager = plugins.PluginManager(entry_points=False, builtins=False)
plugins.reset_manager(manager)
check("registered", lambda: manager.register(fake, name="fakeacc") is not None)
dev = emulate("fakeacc", devices=3, sdk="1.2.3")
check("calls", lambda: calls)
check("vendor_stand_ins", lambda: dev.vendor_stand_ins)
check("props", lambda: [torch.fakeacc.get_device_properties(2).name,
                        torch.fakeacc.get_device_capability(2),
                        torch.fakeacc.get_device_properties(0).cores,
                        torch.fakeacc.vendor_version, "torch_fakeacc" in sys.modules])
check("again", lambda: [emulate("fakeacc", devices=3, sdk="1.2.3") is dev, len(calls)])
"""


def test_the_owning_backend_plugin_installs_vendor_stand_ins() -> None:
    res = run_scenario(PLUGIN_HOOK)
    # a fake backend that cannot be registered is a failure of this setup, never a skip
    assert res.get("registered") is True, f"the fake backend was not registered: {res.get('registered')}"
    assert res["calls"] == [[3, {"sdk": "1.2.3"}]], json.dumps(res)
    assert res["vendor_stand_ins"] is True
    assert res["props"] == ["Fake-1", [3, 7], 64, "9.9", True]
    assert res["again"] == [True, 1]
