"""make_device_module / configure_device_module: the generic ``torch.<name>`` module.

These build plain modules (nothing is registered with torch), so they run in process.
"""

from __future__ import annotations

import types

import pytest
from kernel_plugins_testing import (
    EmulatedDeviceProperties,
    EmulationError,
    configure_device_module,
    make_device_module,
)


def test_counts_and_availability() -> None:
    mod = make_device_module("foo", 3)
    assert mod.__name__ == "torch.foo"
    assert mod.__kernel_plugins_emulated__ is True
    assert mod.device_count() == 3 and mod.is_available() is True
    none = make_device_module("foo", 0)
    assert none.device_count() == 0 and none.is_available() is False
    with pytest.raises(EmulationError, match=">= 0"):
        make_device_module("foo", -1)


def test_current_device_set_device_and_context_manager() -> None:
    mod = make_device_module("foo", 3)
    assert mod.current_device() == 0
    mod.set_device(2)
    assert mod.current_device() == 2
    mod.set_device("foo:1")
    assert mod.current_device() == 1
    with mod.device(2):
        assert mod.current_device() == 2
        with mod.device(types.SimpleNamespace(index=0)):
            assert mod.current_device() == 0
        assert mod.current_device() == 2
    assert mod.current_device() == 1
    with pytest.raises(RuntimeError, match="invalid device ordinal 3"):
        mod.set_device(3)
    assert mod.current_device() == 1


def test_default_properties_and_capability() -> None:
    mod = make_device_module("foo", 2)
    props = mod.get_device_properties(1)
    assert props.name == "Emulated foo device" == mod.get_device_name(1)
    assert props.total_memory == 16 * 1024**3
    assert (props.major, props.minor) == (1, 0) == mod.get_device_capability()
    assert props.multi_processor_count == 8
    assert mod.is_bf16_supported() is True
    with pytest.raises(RuntimeError, match="invalid device ordinal"):
        mod.get_device_properties(2)


def test_properties_from_dicts_objects_and_one_for_all() -> None:
    obj = types.SimpleNamespace(
        name="B", total_memory=2, major=3, minor=1, multi_processor_count=4, cores=9
    )
    mod = make_device_module("foo", 2, properties=[{"name": "A", "major": 7, "lanes": 32}, obj])
    first = mod.get_device_properties(0)
    assert isinstance(first, EmulatedDeviceProperties)
    assert (first.name, first.major, first.minor, first.lanes) == ("A", 7, 0, 32)
    assert first.as_dict()["lanes"] == 32 and "lanes=32" in repr(first)
    assert mod.get_device_properties(1) is obj and mod.get_device_capability(1) == (3, 1)
    shared = make_device_module("foo", 3, properties=[{"name": "Same"}])
    assert [shared.get_device_name(i) for i in range(3)] == ["Same"] * 3


def test_bad_properties_are_refused() -> None:
    with pytest.raises(EmulationError, match="2 device properties for 3"):
        make_device_module("foo", 3, properties=[{"name": "A"}, {"name": "B"}])
    with pytest.raises(EmulationError, match="lack total_memory"):
        make_device_module("foo", 1, properties=[types.SimpleNamespace(name="x", major=1)])


def test_synchronize_is_counted() -> None:
    mod = make_device_module("foo", 2)
    assert mod.synchronize_calls == 0
    mod.synchronize()
    mod.synchronize(1)
    assert mod.synchronize_calls == 2
    with pytest.raises(RuntimeError, match="invalid device ordinal"):
        mod.synchronize(5)
    assert mod.synchronize_calls == 2


def test_extra_attributes_and_configure() -> None:
    mod = make_device_module("foo", 1, extra={"is_bf16_supported": lambda: False, "sdk": "1.0"})
    assert mod.is_bf16_supported() is False and mod.sdk == "1.0"
    configure_device_module(mod, properties=[{"name": "New", "major": 9}], extra={"sdk": "2.0"})
    assert mod.get_device_name(0) == "New" and mod.get_device_capability(0) == (9, 0)
    assert mod.sdk == "2.0"
    with pytest.raises(EmulationError, match="not an emulated device module"):
        configure_device_module(types.ModuleType("torch.real"), extra={"x": 1})


def test_zero_devices_ignore_properties() -> None:
    mod = make_device_module("foo", 0, properties=[{"name": "ghost"}])
    assert mod.device_count() == 0
    with pytest.raises(RuntimeError, match="invalid device ordinal 0"):
        mod.get_device_properties(0)
