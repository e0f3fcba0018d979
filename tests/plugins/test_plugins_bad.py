"""Misbehaving plugins: each is reported and skipped, or raises PluginError in strict mode."""

from __future__ import annotations

import re
import types
from collections.abc import Callable
from typing import Any

import pytest

from kernel_plugins import detection, plugins
from kernel_plugins.device import BackendSpec, DeviceInfo, SystemInfo
from kernel_plugins.errors import NoDeviceError, PluginError
from kernel_plugins.hookspecs import hookimpl
from tests.support.inputs import unvalidated_device

SYSTEM = SystemInfo(cpu="x86_64", os="linux", torch_version=(2, 13), cxx11_abi=True)


def fake_plugin(name: str = "mlu", **hooks: Callable[..., Any]) -> types.ModuleType:
    """A hooks module for backend ``name``; ``hooks`` override or add hook functions."""
    module = types.ModuleType(f"fake_{name}")

    def backend_spec() -> BackendSpec:
        return BackendSpec(name=name, device_type=name, display_name=name.upper())

    def detect_device() -> DeviceInfo:
        return DeviceInfo(backend=name, device_type=name, count=1)

    def list_variants(device: DeviceInfo, system: SystemInfo) -> list[str]:
        return [f"torch-{name}"]

    funcs = {"backend_spec": backend_spec, "detect_device": detect_device,
             "list_variants": list_variants, **hooks}
    for hook, fn in funcs.items():
        fn.__name__ = hook
        setattr(module, hook, hookimpl(fn))
    return module


@pytest.fixture
def pm(manager: plugins.PluginManager) -> plugins.PluginManager:
    """The process-wide manager of ``tests/conftest.py`` (built-in backends only)."""
    return manager


@pytest.fixture
def strict(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KERNEL_PLUGINS_STRICT", "1")


def boom(*args: Any, **kwargs: Any) -> Any:
    raise RuntimeError("vendor library exploded")


class FakeEntryPoint:
    """Stands in for importlib.metadata.EntryPoint of a broken distribution."""

    name = "mlu"
    dist = types.SimpleNamespace(name="kernel-plugins-mlu", version="0.1.0")

    def load(self) -> Any:
        raise ImportError("No module named 'torch_mlu'")


def with_broken_entry_point(monkeypatch: pytest.MonkeyPatch) -> plugins.PluginManager:
    import importlib.metadata

    monkeypatch.setattr(importlib.metadata, "entry_points", lambda group: [FakeEntryPoint()])
    return plugins.PluginManager(entry_points=True, builtins=False)


def test_import_error_is_recorded_with_distribution(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("KERNEL_PLUGINS_STRICT", raising=False)
    manager = with_broken_entry_point(monkeypatch)
    assert manager.backends() == {}
    [failure] = manager.failures()
    assert (failure.name, failure.distribution, failure.version, failure.stage) == (
        "mlu", "kernel-plugins-mlu", "0.1.0", "import")
    assert "ImportError: No module named 'torch_mlu'" in failure.describe()


def test_import_error_raises_in_strict_mode(monkeypatch: pytest.MonkeyPatch, strict: None) -> None:
    manager = with_broken_entry_point(monkeypatch)
    with pytest.raises(PluginError, match=r"kernel-plugins-mlu 0\.1\.0\) failed in import"):
        manager.backends()


def test_backend_spec_raising_is_skipped(pm: plugins.PluginManager) -> None:
    assert pm.register(fake_plugin(backend_spec=boom), name="mlu") is None
    [failure] = pm.failures()
    assert failure.stage == "backend_spec" and "vendor library exploded" in failure.message
    assert "mlu" not in pm.backends() and "cpu" in pm.backends()


def test_backend_spec_of_the_wrong_type(pm: plugins.PluginManager) -> None:
    assert pm.register(fake_plugin(backend_spec=lambda: {"name": "mlu"}), name="mlu") is None
    assert "returned dict, expected kernel_plugins.BackendSpec" in pm.failures()[0].message


def test_detect_device_raising_is_this_backends_error(pm: plugins.PluginManager) -> None:
    pm.register(fake_plugin(detect_device=boom), name="mlu")
    outcome = pm.detect("mlu")
    assert outcome.status == "error" and "vendor library exploded" in (outcome.error or "")
    with pytest.raises(NoDeviceError, match="error: detect_device raised RuntimeError"):
        detection.get_device("mlu")
    assert detection.get_device("cpu").backend == "cpu"  # the others still work


def test_detect_device_raising_in_strict_mode(pm: plugins.PluginManager, strict: None) -> None:
    pm.register(fake_plugin(detect_device=boom), name="mlu")
    with pytest.raises(PluginError, match="failed in detect_device: RuntimeError"):
        pm.detect("mlu")


def test_negative_device_count_from_the_constructor_is_refused(pm: plugins.PluginManager) -> None:
    def negative() -> DeviceInfo:
        return DeviceInfo(backend="mlu", device_type="mlu", count=-1)

    pm.register(fake_plugin(detect_device=negative), name="mlu")
    outcome = pm.detect("mlu")
    assert outcome.device is None
    assert "count: must be an integer >= 0 (got -1)" in (outcome.error or "")


def test_negative_device_count_that_skipped_validation_is_refused(
    pm: plugins.PluginManager,
) -> None:
    def sneaky() -> DeviceInfo:
        return unvalidated_device(backend="mlu", device_type="mlu", count=-1)

    pm.register(fake_plugin(detect_device=sneaky), name="mlu")
    outcome = pm.detect("mlu")
    assert outcome.device is None
    assert "returned an invalid DeviceInfo: count: must be an integer >= 0 (got -1)" in (
        outcome.error or ""
    )
    with pytest.raises(NoDeviceError):
        detection.get_device("mlu")


def test_wrong_detect_return_type(pm: plugins.PluginManager, strict: None) -> None:
    pm.register(fake_plugin(detect_device=lambda: "1 device"), name="mlu")
    with pytest.raises(PluginError, match="returned str, expected DeviceInfo or None"):
        pm.detect("mlu")


@pytest.mark.parametrize(
    ("names", "fragment"),
    [([1, "torch-mlu"], "must be a string, got int"),
     (["../torch-cpu"], "path separator"),
     ("torch-mlu", "returned str, expected list[str]")],
)
def test_bad_list_variants_answers(pm: plugins.PluginManager, names: Any, fragment: str) -> None:
    pm.register(fake_plugin(list_variants=lambda device, system: names), name="mlu")
    device = pm.detect("mlu").device
    assert device is not None
    with pytest.raises(PluginError, match=re.escape(fragment)):
        pm.list_variants(device, SYSTEM)


def test_two_plugins_claiming_one_backend(pm: plugins.PluginManager) -> None:
    first = pm.register(fake_plugin(), name="mlu", distribution="kernel-plugins-mlu")
    assert first is not None
    assert pm.register(fake_plugin(), name="mlu", distribution="other-mlu") is None
    [failure] = pm.failures()
    assert failure.distribution == "other-mlu"
    assert "already provided by plugin 'mlu' (kernel-plugins-mlu ?)" in failure.message
    assert pm.record("mlu").distribution == "kernel-plugins-mlu"


def test_spec_name_must_match_the_entry_point_name(pm: plugins.PluginManager) -> None:
    assert pm.register(fake_plugin("mlu"), name="musa") is None
    assert "declares backend 'mlu' but is registered as 'musa'" in pm.failures()[0].message


def test_hooks_that_do_not_exist(pm: plugins.PluginManager) -> None:
    def detect_devices() -> None:
        return None

    assert pm.register(fake_plugin(detect_devices=detect_devices), name="mlu") is None
    message = pm.failures()[0].message
    assert message.startswith("implements hooks that do not exist: detect_devices")
    assert "known hooks: backend_spec, check_arch, detect_device" in message


def test_strict_mode_raises_for_registration_failures(pm: plugins.PluginManager,
                                                       strict: None) -> None:
    def typo() -> None:
        return None

    with pytest.raises(PluginError, match="KERNEL_PLUGINS_STRICT=1"):
        pm.register(fake_plugin(lsit_variants=typo), name="mlu")
    with pytest.raises(PluginError, match="failed in backend_spec"):
        pm.register(fake_plugin(backend_spec=boom), name="musa")
    assert pm.failures() == []


def test_a_failed_plugin_leaves_nothing_registered(pm: plugins.PluginManager) -> None:
    module = fake_plugin(backend_spec=boom)
    pm.register(module, name="mlu")
    assert "mlu" not in pm.backends()
    # the same module can be registered again once fixed: nothing half-registered remains
    module.backend_spec = hookimpl(lambda: BackendSpec(name="mlu", device_type="mlu",
                                                       display_name="MLU"))
    assert pm.register(module, name="mlu") is not None
