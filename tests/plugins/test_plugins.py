"""Plugin manager: lazy loading, failure isolation, allowlist, strict mode."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from kernel_plugins import plugins
from kernel_plugins.detection import get_device
from kernel_plugins.device import DeviceInfo
from kernel_plugins.errors import DeviceError, NoDeviceError, PluginError, UnknownDeviceError
from kernel_plugins.hookspecs import hookimpl
from tests.support.fakes import FakeEntryPoint, fake_backend


@pytest.fixture
def with_entry_points(monkeypatch):
    """Install fake entry points and return a fresh manager factory."""
    import importlib.metadata

    def install(eps):
        monkeypatch.setattr(importlib.metadata, "entry_points", lambda group=None: [e for e in eps if group == "kernel_plugins"])
        pm = plugins.PluginManager()
        plugins.reset_manager(pm)
        return pm

    old = plugins.reset_manager(None)
    monkeypatch.delenv("KERNEL_PLUGINS_STRICT", raising=False)
    monkeypatch.delenv("KERNEL_PLUGINS_LOAD", raising=False)
    yield install
    plugins.reset_manager(old)


def test_the_cpu_is_detected_without_starting_a_process(manager, monkeypatch):
    """``platform.processor()`` runs ``uname -p``: a fork of a process holding torch, on every load."""
    import platform

    def no_process(*args, **kwargs):
        raise AssertionError(f"a subprocess was started: {args}")

    monkeypatch.setattr(subprocess, "Popen", no_process)
    monkeypatch.setattr(platform, "_uname_cache", None, raising=False)
    device = get_device("cpu")
    assert device.backend == "cpu" and device.name == (platform.machine() or None)


def test_builtins_are_plugins_and_loading_is_lazy(manager):
    assert manager._loaded is False
    assert list(manager.backends()) == ["cpu", "cuda", "rocm", "xpu", "metal"]
    assert manager._loaded is True
    assert all(r.builtin and r.distribution == "kernel-plugins" for r in manager.backends().values())
    manager.load()  # idempotent
    assert len(manager.backends()) == 5


def test_import_does_not_load_torch_hub_or_plugins():
    code = (
        "import sys, json, kernel_plugins, kernel_plugins.plugins as p;"
        "print(json.dumps({'torch': 'torch' in sys.modules, 'hub': 'huggingface_hub' in sys.modules,"
        " 'manager': p._manager is not None}))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert json.loads(out.stdout) == {"torch": False, "hub": False, "manager": False}


def test_entry_point_plugin_is_loaded_with_distribution(with_entry_points):
    pm = with_entry_points([FakeEntryPoint("fake", lambda: fake_backend("fake"))])
    rec = pm.backends()["fake"]
    assert (rec.distribution, rec.version, rec.builtin) == ("kernel-plugins-fake", "9.9", False)
    dev = get_device("fake")
    assert dev.backend == "fake" and dev.count == 1
    # the highest-priority available device is preferred over cpu
    assert get_device().backend == "fake"


def test_import_error_is_reported_and_skipped(with_entry_points):
    def boom():
        raise ImportError("No module named 'torch_fake'")

    pm = with_entry_points([FakeEntryPoint("broken", boom), FakeEntryPoint("fake", lambda: fake_backend("fake"))])
    assert "fake" in pm.backends() and "broken" not in pm.backends()
    (failure,) = pm.failures()
    text = failure.describe()
    assert "plugin 'broken'" in text and "kernel-plugins-fake 9.9" in text
    assert "import" in text and "No module named 'torch_fake'" in text


def test_strict_mode_raises_plugin_error(with_entry_points, monkeypatch):
    monkeypatch.setenv("KERNEL_PLUGINS_STRICT", "1")

    def boom():
        raise RuntimeError("kaputt")

    pm = with_entry_points([FakeEntryPoint("broken", boom)])
    with pytest.raises(PluginError, match="plugin 'broken'.*kaputt"):
        pm.backends()


def test_allowlist_limits_entry_points(with_entry_points, monkeypatch):
    eps = [FakeEntryPoint("fake", lambda: fake_backend("fake")), FakeEntryPoint("other", lambda: fake_backend("other"))]
    monkeypatch.setenv("KERNEL_PLUGINS_LOAD", "other")
    assert "fake" not in with_entry_points(eps).backends()
    assert "other" in plugins.get_manager().backends()
    monkeypatch.setenv("KERNEL_PLUGINS_LOAD", "")
    assert list(with_entry_points(eps).backends()) == ["cpu", "cuda", "rocm", "xpu", "metal"]


def test_duplicate_backend_name_second_is_skipped(manager):
    assert manager.register(fake_backend("dup"), name="dup", distribution="first", version="1") is not None
    assert manager.register(fake_backend("dup"), name="dup", distribution="second", version="2") is None
    (failure,) = manager.failures()
    assert failure.distribution == "second"
    assert "already provided by plugin 'dup' (first 1)" in failure.message
    assert manager.backends()["dup"].distribution == "first"


def test_plugin_with_unknown_hook_is_rejected(manager):
    @hookimpl
    def detect_devices_typo():
        return None

    mod = fake_backend("typo", extra_hooks={"detect_devices_typo": detect_devices_typo})
    assert manager.register(mod, name="typo") is None
    assert "hooks that do not exist: detect_devices_typo" in manager.failures()[0].message


def test_spec_name_must_match_entry_point_name(manager):
    assert manager.register(fake_backend("a", spec_name="b"), name="a") is None
    assert "declares backend 'b' but is registered as 'a'" in manager.failures()[0].message


def test_detect_raising_is_that_backends_error_only(manager, monkeypatch):
    def boom():
        raise RuntimeError("driver exploded")

    manager.register(fake_backend("bad", detect=boom), name="bad")
    outcome = manager.detect("bad")
    assert outcome.status == "error" and "driver exploded" in outcome.error
    assert get_device().backend == "cpu"  # everything else keeps working
    with pytest.raises(NoDeviceError, match="driver exploded"):
        get_device("bad")
    monkeypatch.setenv("KERNEL_PLUGINS_STRICT", "1")
    with pytest.raises(PluginError, match="driver exploded"):
        manager.detect("bad", refresh=True)


@pytest.mark.parametrize(
    "result,fragment",
    [
        ("not a device", "returned str, expected DeviceInfo or None"),
        (DeviceInfo(backend="cpu", device_type="cpu", count=1), "expected 'wrong' / 'wrong'"),
    ],
)
def test_detect_wrong_type_is_reported(manager, result, fragment):
    manager.register(fake_backend("wrong", detect=lambda: result), name="wrong")
    outcome = manager.detect("wrong")
    assert outcome.status == "error" and fragment in outcome.error


def test_negative_count_device_info_is_rejected():
    with pytest.raises(ValueError, match=r"count: must be an integer >= 0 \(got -1\)"):
        DeviceInfo(backend="x", device_type="x", count=-1)


def test_list_variants_wrong_types_raise_plugin_error(manager):
    manager.register(fake_backend("v", variants=lambda d, s: ["torch-v", 3]), name="v")
    with pytest.raises(PluginError, match="plugin 'v'.*bad name"):
        manager.list_variants(get_device("v"), None)


def test_zero_devices_means_no_device(manager):
    manager.register(fake_backend("zero", count=0), name="zero")
    assert manager.detect("zero").status == "no device"
    with pytest.raises(NoDeviceError, match="no 'zero' device is available.*no device present"):
        get_device("zero")


@pytest.mark.parametrize("dev,err,fragment", [
    ("foo", UnknownDeviceError, "Installed backends: cpu, cuda, rocm (cuda), xpu, metal (mps)"),
    ("mlu", UnknownDeviceError, "pip install kernel-plugins-mlu"),
    ("tpu", UnknownDeviceError, "pip install kernel-plugins-tpu"),
    ("cuda", NoDeviceError, "no 'cuda' device is available"),
    ("cpu:1", DeviceError, "cpu has 1 device(s)"),
    ("mlu:x", DeviceError, "invalid device string 'mlu:x'"),
    ("cuda:-1", DeviceError, "invalid device string 'cuda:-1'"),
    (3, DeviceError, "got int"),
])
def test_device_request_errors(manager, dev, err, fragment):
    with pytest.raises(err) as e:
        get_device(dev)
    assert fragment in str(e.value)


def test_device_by_torch_device_and_index(manager):
    import torch

    assert get_device(torch.device("cpu")).backend == "cpu"
    assert get_device("cpu:0").index == 0
    assert get_device("cpu:0").torch_device == "cpu:0"


# -- one isolation for every hook call (issue: explain_no_device calling sys.exit) ---------


def _exits(*args, **kwargs):
    raise SystemExit(4)


def test_explain_no_device_calling_sys_exit_kills_nothing(manager, capsys, tmp_path):
    """list-backends, get_device() and load() go on; the reason is simply unknown."""
    import kernel_plugins
    from kernel_plugins.cli.main import main

    manager.register(fake_backend("quitter", detect=lambda: None,
                                  extra_hooks={"explain_no_device": hookimpl(_exits)}),
                     name="quitter")
    outcome = manager.detect("quitter")
    assert (outcome.status, outcome.error, outcome.reason) == ("no device", None, None)
    assert main(["list-backends"]) == 0
    import re

    assert re.search(r"^quitter\s.*\bno device\b", capsys.readouterr().out, re.M)
    with pytest.raises(NoDeviceError):
        get_device("quitter")
    assert get_device().backend == "cpu"
    from tests.support.variant_dirs import write_variant

    write_variant(tmp_path / "k", {"__init__.py": "VALUE = 1\n"})
    assert kernel_plugins.load(tmp_path / "k", device="cpu").VALUE == 1


@pytest.mark.parametrize("hook", ["synchronize", "explain_variant", "load_kernel", "emulate_device"])
def test_every_owner_hook_turns_sys_exit_into_that_plugins_error(manager, hook):
    from kernel_plugins.variants import parse_variant

    manager.register(fake_backend("quitter", extra_hooks={hook: hookimpl(_exits)}), name="quitter")
    device = manager.detect("quitter").device
    if hook == "explain_variant":
        reason = manager.explain_variant(device, None, parse_variant("torch-universal"))
        assert reason == "(backend 'quitter' could not explain: SystemExit: 4)"
        return
    call = {
        "synchronize": lambda: manager.synchronize(device),
        "load_kernel": lambda: manager.load_kernel(device, None),
        "emulate_device": lambda: manager.emulate_device("quitter", 1, {}),
    }[hook]
    with pytest.raises(PluginError, match=f"plugin 'quitter' .* failed in {hook}: SystemExit: 4"):
        call()


def test_backend_spec_calling_sys_exit_is_a_registration_failure(manager):
    assert manager.register(fake_backend("quitter", extra_hooks={"backend_spec": hookimpl(_exits)}),
                            name="quitter") is None
    (failure,) = manager.failures()
    assert (failure.stage, failure.message) == ("backend_spec", "SystemExit: 4")


# -- locate_kernel answers (issue: "" made a load use the working directory) -------------


@pytest.mark.parametrize(
    ("answer", "fragment"),
    [
        ("", "an empty path"),
        ("  ", "an empty path"),
        ("relative/kernel", "the relative path 'relative/kernel'"),
        (".", "the relative path '.'"),
        ("FILE", "which is not an existing folder"),
        ("MISSING", "which is not an existing folder"),
        (b"/tmp", "bytes"),
    ],
)
def test_locate_kernel_must_answer_an_absolute_folder(manager, tmp_path, monkeypatch, answer, fragment):
    from kernel_plugins.sources import find

    (tmp_path / "file").write_text("x")
    (tmp_path / "build").mkdir()  # the working directory looks like a kernel repository
    monkeypatch.chdir(tmp_path)
    answer = {"FILE": str(tmp_path / "file"), "MISSING": str(tmp_path / "gone")}.get(answer, answer)
    manager.register(fake_backend("shipper", count=0, extra_hooks={
        "locate_kernel": hookimpl(lambda repo_id, device: answer)}), name="shipper")
    assert manager.locate_kernel("acme/x", get_device("cpu")) is None
    assert find("acme/x", device=get_device("cpu")).kind == "hub"
    failures = [f for f in manager.failures() if f.stage == "locate_kernel"]
    assert len(failures) == 2  # one per question: the plugin is skipped, never trusted
    for failure in failures:
        assert failure.name == "shipper" and fragment in failure.message
        assert "expected None or the absolute path of a kernel repository folder" in failure.message


def test_locate_kernel_folder_is_used(manager, tmp_path):
    folder = tmp_path / "shipped"
    folder.mkdir()
    manager.register(fake_backend("shipper", count=0, extra_hooks={
        "locate_kernel": hookimpl(lambda repo_id, device: str(folder))}), name="shipper")
    assert manager.locate_kernel("acme/x", get_device("cpu"))[::2] == (folder, False)  # not its own files
    assert manager.failures() == []


# -- a plugin whose hooks did not register is reported as failing -----------------------


def test_plugin_object_without_hooks_is_named_as_failing(with_entry_points):
    import types

    empty = types.ModuleType("kernel_plugins_broken.hooks")  # e.g. its hooks never got defined
    pm = with_entry_points([FakeEntryPoint("broken", lambda: empty)])
    assert "broken" not in pm.backends()
    (failure,) = pm.failures()
    assert failure.stage == "register"
    assert "has no backend_spec hook" in failure.message
    assert "module kernel_plugins_broken.hooks: none" in failure.message
    assert "returned list" not in failure.message


def test_plugin_object_with_hook_methods_registers(with_entry_points):
    from kernel_plugins.device import BackendSpec

    class Backend:
        @hookimpl
        def backend_spec(self):
            return BackendSpec(name="obj", device_type="obj", display_name="Obj", priority=1)

        @hookimpl
        def detect_device(self):
            return DeviceInfo(backend="obj", device_type="obj", count=1)

    plugin = Backend()
    pm = with_entry_points([FakeEntryPoint("obj", lambda: plugin)])
    assert pm.backends()["obj"].plugin is plugin
    assert pm.detect("obj").status == "available"


def test_emulate_names_the_failed_plugin_or_the_distribution(with_entry_points, capsys):
    import types

    from kernel_plugins.cli.main import main

    with_entry_points([FakeEntryPoint("npu", lambda: types.ModuleType("kernel_plugins_npu.hooks"))])
    assert main(["--emulate", "npu", "list-backends"]) == 2
    err = capsys.readouterr().err
    assert "the npu plugin is installed but failed" in err.lower() and "has no backend_spec hook" in err
    assert "not installed" not in err.replace("is installed but", "")
    with_entry_points([])
    assert main(["--emulate", "npu", "list-backends"]) == 2
    err = capsys.readouterr().err
    assert "pip install kernel-plugins-npu" in err and "xpu" not in err.split("Installed")[0]


def test_an_emulated_device_is_labelled_emulated_whatever_its_plugin_says(manager, monkeypatch):
    from kernel_plugins import emulation_registry

    says_real = fake_backend("liar", detect=lambda: DeviceInfo(
        backend="liar", device_type="liar", count=1, runtime_version="1.0", emulated=False))
    manager.register(says_real, name="liar")
    assert manager.detect("liar").device.emulated is False  # not emulated: its word stands
    monkeypatch.setitem(emulation_registry._EMULATED, "liar", 1)
    device = manager.detect("liar", refresh=True).device
    assert device is not None and device.emulated is True
