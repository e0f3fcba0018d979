"""The pytest plugin: ``--emulate-device`` and the ``<backend>_only`` markers.

Each case runs pytest on a small generated test folder in a fresh interpreter.
"""

from __future__ import annotations

import json
from pathlib import Path

from kernel_plugins_testing import run_in_fresh_interpreter

PLUGIN = "kernel_plugins_testing.pytest_plugin"


def _run_pytest(folder: Path, *args: str) -> tuple[int, str]:
    """Run pytest on ``folder`` with the plugin opted in; return (exit code, output)."""
    # other installed pytest plugins only cost start-up time here
    quiet = ["-p", "no:cacheprovider", "-p", "no:hypothesispytest", "-p", "no:anyio"]
    argv = ["-p", PLUGIN, ".", *quiet, "-rA", *args]
    proc = run_in_fresh_interpreter(
        f"import sys, pytest\nsys.exit(pytest.main({json.dumps(argv)}))",
        env={"KERNEL_PLUGINS_LOAD": "", "TORCH_DEVICE_BACKEND_AUTOLOAD": "0"},
        cwd=folder,
    )
    return proc.returncode, proc.stdout + proc.stderr


def test_importing_the_plugin_does_not_import_torch() -> None:
    proc = run_in_fresh_interpreter(f"import sys, {PLUGIN}\nprint('torch' in sys.modules)")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "False"


FAKE_CONFTEST = """
import types
import kernel_plugins
import kernel_plugins.plugins
from kernel_plugins.errors import NoDeviceError, UnknownDeviceError

def _record(device_type):
    return types.SimpleNamespace(spec=types.SimpleNamespace(device_type=device_type))

class FakeManager:
    def backends(self):
        return {"cpu": _record("cpu"), "metal": _record("mps"), "fakeacc": _record("fakeacc"),
                "broken": _record("broken")}

asked = []

def get_device(name):
    asked.append(name)
    if name == "cpu":
        return object()
    if name == "metal":
        raise UnknownDeviceError("no backend is called metal here")
    if name == "mps":
        raise NoDeviceError("MPS is not available on this machine")
    if name == "broken":
        raise RuntimeError("driver exploded")
    raise NoDeviceError(f"no {name} device present")

kernel_plugins.plugins.get_manager = FakeManager
kernel_plugins.get_device = get_device
"""

FAKE_TESTS = """
import pytest
from conftest import asked

@pytest.mark.cpu_only
def test_cpu():
    pass

@pytest.mark.metal_only
def test_metal():
    pass

@pytest.mark.fakeacc_only
def test_fakeacc():
    pass

@pytest.mark.fakeacc_only
def test_fakeacc_again():
    pass

@pytest.mark.broken_only
def test_broken():
    pass

def test_plain():
    pass

def test_zz_detection_asked_once_per_backend():
    assert sorted(asked) == ["broken", "cpu", "fakeacc", "metal", "mps"]
"""


def test_backend_only_markers_skip_unless_the_device_is_detected(tmp_path: Path) -> None:
    (tmp_path / "conftest.py").write_text(FAKE_CONFTEST)
    (tmp_path / "test_markers.py").write_text(FAKE_TESTS)
    code, out = _run_pytest(tmp_path, "--strict-markers")
    assert code == 0, out
    assert "PASSED test_markers.py::test_cpu" in out
    assert "PASSED test_markers.py::test_plain" in out
    assert "PASSED test_markers.py::test_zz_detection_asked_once_per_backend" in out
    assert "metal_only: no metal device: MPS is not available" in out
    assert out.count("fakeacc_only: no fakeacc device: no fakeacc device present") == 2
    assert "broken_only: broken device detection failed: RuntimeError: driver exploded" in out
    assert "3 passed, 4 skipped" in out


BROKEN_MANAGER = """
import kernel_plugins.plugins

def get_manager():
    raise RuntimeError("plugin machinery broken")

kernel_plugins.plugins.get_manager = get_manager
"""


def test_a_broken_plugin_manager_registers_no_markers_and_crashes_nothing(tmp_path: Path) -> None:
    (tmp_path / "conftest.py").write_text(BROKEN_MANAGER)
    (tmp_path / "test_x.py").write_text(
        "import pytest\n\n@pytest.mark.cuda_only\ndef test_runs():\n    pass\n"
    )
    code, out = _run_pytest(tmp_path)
    assert code == 0, out
    assert "PASSED test_x.py::test_runs" in out


EMULATED_TESTS = """
import torch
from kernel_plugins import emulation_registry as _emulation

def test_device_is_emulated():
    assert torch.ones(2, device="foo:1").device.type == "foo"
    assert _emulation.is_emulated("foo")
    assert torch.foo.device_count() == 2
"""


def test_emulate_device_option_emulates_for_the_whole_run(tmp_path: Path) -> None:
    (tmp_path / "test_emulated.py").write_text(EMULATED_TESTS)
    code, out = _run_pytest(tmp_path, "--emulate-device", "foo")
    assert code == 0, out
    assert "PASSED test_emulated.py::test_device_is_emulated" in out
    assert "device 'foo' is EMULATED on CPU (not real hardware)" in out


def test_emulate_device_option_rejects_a_bad_name(tmp_path: Path) -> None:
    (tmp_path / "test_nothing.py").write_text("def test_nothing():\n    pass\n")
    code, out = _run_pytest(tmp_path, "--emulate-device", "Not-A-Name")
    assert code == 4, out
    assert "--emulate-device Not-A-Name" in out and "lowercase identifier" in out
