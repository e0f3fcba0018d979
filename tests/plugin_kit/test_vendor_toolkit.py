"""The toolkit for backend plugin authors: the vendor helpers of kernel_plugins.plugin_kit.

Made-up names (``kptestdev``, ``kp_test_vendor``) stand for a vendor stack, so no real
plugin is involved; everything torch-side is put in place with ``monkeypatch``.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import sys
import types
from pathlib import Path
from typing import Any

import pytest
import torch
from kernel_plugins_testing import EmulationError, make_device_module, run_in_fresh_interpreter
from kernel_plugins_testing import plugin_checks as pc
from kernel_plugins_testing.kernel_repos import make_repo
from kernel_plugins_testing.stand_ins import (
    StandIns,
    install_stand_ins,
    merge_facts,
    stand_in_package,
    torch_release,
    vendor_device_module,
)

from kernel_plugins.device import DeviceInfo
from kernel_plugins.errors import KernelImportError, PluginError
from kernel_plugins.plugin_kit import _vendor as vendor

DEV = "kptestdev"
VENDOR = "kp_test_vendor"


@pytest.fixture
def on_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    """``on_path(body, name)``: an importable, not yet imported package whose code is ``body``."""

    def write(body: str, name: str = VENDOR) -> None:
        (tmp_path / name).mkdir(parents=True)
        (tmp_path / name / "__init__.py").write_text(body, encoding="utf-8")
        monkeypatch.syspath_prepend(str(tmp_path))
        monkeypatch.delitem(sys.modules, name, raising=False)

    return write


@pytest.fixture
def slot(monkeypatch: pytest.MonkeyPatch) -> Any:
    """Set the PrivateUse1 name torch reports (``slot("x")``); None removes the API."""

    def set_name(name: str | None) -> None:
        if name is None:
            monkeypatch.delattr(torch._C, "_get_privateuse1_backend_name", raising=False)
        else:
            monkeypatch.setattr(
                torch._C, "_get_privateuse1_backend_name", lambda: name, raising=False
            )

    return set_name


# -- looking without importing -------------------------------------------------------


def test_torch_if_installed_returns_torch() -> None:
    assert vendor.torch_if_installed() is torch


def test_torch_if_installed_is_none_without_torch(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delitem(sys.modules, "torch")
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None)
    assert vendor.torch_if_installed() is None
    assert vendor.privateuse1_name() is None
    assert vendor.torch_major_minor() is None


def test_module_installed_does_not_import(on_path: Any) -> None:
    on_path("raise AssertionError('imported')\n", "kp_never_imported")
    assert vendor.module_installed("kp_never_imported") is True
    assert "kp_never_imported" not in sys.modules
    assert vendor.module_installed("sys") is True
    assert vendor.module_installed("kp_surely_absent") is False
    assert vendor.module_installed("kp_surely_absent.child") is False  # missing parent


def test_module_blocked_in_sys_modules_counts_as_absent(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "json", None)
    assert vendor.module_installed("json") is False


# -- PrivateUse1 ---------------------------------------------------------------------


def test_privateuse1_name(slot: Any) -> None:
    slot("acme")
    assert vendor.privateuse1_name() == "acme"
    assert vendor.privateuse1_name(torch) == "acme"
    slot(None)
    assert vendor.privateuse1_name() is None


@pytest.mark.parametrize(
    ("taken", "expected"),
    [("privateuseone", None), (DEV, None), (None, None), ("other", "other")],
)
def test_privateuse1_conflict(slot: Any, taken: str | None, expected: str | None) -> None:
    slot(taken)
    assert vendor.privateuse1_conflict(DEV) == expected


def test_check_privateuse1_free_names_both_stacks(
    slot: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delitem(sys.modules, VENDOR, raising=False)
    slot("other")
    with pytest.raises(PluginError) as info:
        vendor.check_privateuse1_free(VENDOR, DEV)
    assert str(info.value) == (
        f"{VENDOR} is installed, but PyTorch's out-of-tree device slot (PrivateUse1) is "
        f"already 'other' in this process and PyTorch allows one per process, so {VENDOR} "
        f"was not imported; use '{DEV}' in a process that does not load the 'other' stack "
        "(TORCH_DEVICE_BACKEND_AUTOLOAD=0 stops automatic loading)"
    )


def test_check_privateuse1_free_passes(slot: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delitem(sys.modules, VENDOR, raising=False)
    for free in ("privateuseone", DEV, None):
        slot(free)
        vendor.check_privateuse1_free(VENDOR, DEV)
    slot("other")  # the vendor is already imported: it owns the slot or failed on its own
    monkeypatch.setitem(sys.modules, VENDOR, types.ModuleType(VENDOR))
    vendor.check_privateuse1_free(VENDOR, DEV)


# -- importing the vendor ------------------------------------------------------------


def test_import_vendor_reports_a_broken_install(on_path: Any) -> None:
    on_path("raise ImportError('libkp.so: cannot open shared object')\n")
    with pytest.raises(PluginError) as info:
        vendor.import_vendor(VENDOR, "set KP_HOME")
    assert str(info.value) == (
        f"{VENDOR} is installed but importing it failed "
        "(ImportError: libkp.so: cannot open shared object); set KP_HOME"
    )
    assert isinstance(info.value.__cause__, ImportError)


def test_import_vendor_returns_the_module(monkeypatch: pytest.MonkeyPatch) -> None:
    module = types.ModuleType(VENDOR)
    monkeypatch.setitem(sys.modules, VENDOR, module)
    assert vendor.import_vendor(VENDOR, "unused") is module


def test_import_vendor_for_kernel(on_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    device = DeviceInfo(backend=DEV, device_type=DEV, count=2, index=1)
    load: Any = types.SimpleNamespace(repo_id="org/kern", variant="torch-kptestdev")
    on_path("raise RuntimeError('boom')\n")
    with pytest.raises(KernelImportError) as info:
        vendor.import_vendor_for_kernel(VENDOR, device, load)
    assert str(info.value) == (
        f"kernel org/kern (torch-kptestdev) for {DEV}:1 needs {VENDOR}, which failed to import "
        f"(RuntimeError: boom); install {VENDOR} for this torch"
    )
    with pytest.raises(KernelImportError, match="; source env.sh$"):
        vendor.import_vendor_for_kernel(VENDOR, device, load, hint="source env.sh")
    module = types.ModuleType(VENDOR)
    monkeypatch.setitem(sys.modules, VENDOR, module)
    assert vendor.import_vendor_for_kernel(VENDOR, device, load) is module


# -- properties, versions and notes --------------------------------------------------


@pytest.mark.parametrize(
    ("props", "expected"),
    [
        (types.SimpleNamespace(major=5, minor=0), (5, 0)),
        (types.SimpleNamespace(major=5), None),
        (types.SimpleNamespace(major="5", minor=0), None),
        (types.SimpleNamespace(major=-1, minor=0), None),
        (object(), None),
    ],
)
def test_capability_of(props: object, expected: tuple[int, int] | None) -> None:
    assert vendor.capability_of(props) == expected


def test_missing_capability_note_and_device_name() -> None:
    assert vendor.missing_capability_note(DEV, "P") == (
        f"torch.{DEV}.get_device_properties(0) has no integer major/minor ('P')"
    )
    assert vendor.device_name_of(types.SimpleNamespace(name="X1")) == "X1"
    assert vendor.device_name_of(types.SimpleNamespace(name="")) is None
    assert vendor.device_name_of(object()) is None


def test_torch_major_minor() -> None:
    fake: Any = types.SimpleNamespace(__version__="2.13.0+cpu")
    assert vendor.torch_major_minor(fake) == (2, 13)
    fake.__version__ = "nightly"
    assert vendor.torch_major_minor(fake) is None
    expected = tuple(int(x) for x in torch.__version__.split(".")[:2])
    assert vendor.torch_major_minor() == expected


def test_unparsable_and_noarch_notes() -> None:
    assert vendor.noarch_only_note(DEV) == (
        f"only torch-{DEV} and torch-universal variants can load"
    )
    assert vendor.unparsable_note("torch.version.x", 7, "e.g. '1.2'") == (
        "unparsable torch.version.x 7 (expected e.g. '1.2')"
    )
    assert vendor.unparsable_note("v", "x", "1", backend=DEV) == (
        f"unparsable v 'x' (expected 1); only torch-{DEV} and torch-universal variants can load"
    )


def test_version_note() -> None:
    def parse(text: object) -> tuple[int, int] | None:
        m = re.fullmatch(r"(\d+)\.(\d+)", text) if isinstance(text, str) else None
        return (int(m.group(1)), int(m.group(2))) if m else None

    common: dict[str, Any] = {"what": "torch.version.x", "expected": "e.g. '1.2'"}
    assert vendor.version_note("1.2", parse, **common) is None
    assert vendor.version_note(None, parse, **common) == (
        "unparsable torch.version.x None (expected e.g. '1.2')"
    )
    assert vendor.version_note("one", parse, backend=DEV, **common) == (
        f"unparsable torch.version.x 'one' (expected e.g. '1.2'); "
        f"only torch-{DEV} and torch-universal variants can load"
    )
    unknown = {"unknown": "unknown!", "unknown_texts": ("not known",)}
    assert vendor.version_note(None, parse, **common, **unknown) == "unknown!"
    assert vendor.version_note("  Not Known ", parse, **common, **unknown) == "unknown!"
    assert vendor.version_note("x", parse, **common, **unknown).startswith("unparsable")


# -- the detection skeleton ----------------------------------------------------------


@pytest.fixture
def stack(monkeypatch: pytest.MonkeyPatch, slot: Any) -> Any:
    """Put a vendor package and ``torch.kptestdev`` with ``count`` devices in place."""
    slot("privateuseone")

    def install(count: int, *, available: bool = True, version: str | None = "1.0") -> Any:
        package = types.ModuleType(VENDOR)
        package.__spec__ = None
        if version is not None:
            package.__version__ = version  # type: ignore[attr-defined]
        monkeypatch.setitem(sys.modules, VENDOR, package)
        props = types.SimpleNamespace(name="Acme 1", major=3, minor=1)
        module = types.SimpleNamespace(
            is_available=lambda: available,
            device_count=lambda: count,
            get_device_properties=lambda i: props,
        )
        monkeypatch.setattr(torch, DEV, module, raising=False)
        return module

    return install


def _find() -> vendor.VendorDevices | None:
    return vendor.find_vendor_devices(DEV, VENDOR, DEV, import_hint="reinstall it")


def test_find_vendor_devices_absent_stack(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delitem(sys.modules, VENDOR, raising=False)
    assert _find() is None
    assert VENDOR not in sys.modules


@pytest.mark.parametrize(("count", "available"), [(0, True), (2, False)])
def test_find_vendor_devices_without_devices(stack: Any, count: int, available: bool) -> None:
    stack(count, available=available)
    assert _find() is None


def test_find_vendor_devices_without_device_module(
    stack: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    stack(1)
    monkeypatch.delattr(torch, DEV)
    with pytest.raises(PluginError, match=rf"but torch\.{DEV} does not exist") as info:
        _find()
    assert f"install the matching {VENDOR}" in str(info.value)


def test_find_vendor_devices_refuses_a_taken_slot(on_path: Any, slot: Any) -> None:
    on_path("raise AssertionError('must not be imported')\n")
    slot("other")
    with pytest.raises(PluginError, match="already 'other'"):
        _find()
    assert VENDOR not in sys.modules


def test_find_vendor_devices_reports_a_broken_vendor(on_path: Any, slot: Any) -> None:
    on_path("raise OSError('libkp.so missing')\n")
    slot("privateuseone")
    with pytest.raises(PluginError, match=r"\(OSError: libkp.so missing\); reinstall it$"):
        _find()


def test_find_vendor_devices_and_info(stack: Any) -> None:
    module = stack(3)
    found = _find()
    assert found is not None
    assert (found.count, found.module, found.torch) == (3, module, torch)
    assert found.vendor is sys.modules[VENDOR]
    assert (found.extension_version, found.emulated) == ("1.0", False)
    props = found.properties(0)
    info = found.info(
        runtime_version="9.1",
        name=vendor.device_name_of(props),
        capability=vendor.capability_of(props),
        notes=["a note"],
    )
    assert info == DeviceInfo(
        backend=DEV, device_type=DEV, count=3, runtime_version="9.1", name="Acme 1",
        capability=(3, 1), extension_version="1.0", emulated=False, notes=("a note",),
    )
    module.__kernel_plugins_emulated__ = True
    assert found.emulated is True and found.info().emulated is True


def test_vendor_without_version(stack: Any) -> None:
    stack(1, version=None)
    found = _find()
    assert found is not None and found.extension_version is None


# -- synchronize ---------------------------------------------------------------------


def test_synchronize_device(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[tuple[Any, ...]] = []
    module = types.SimpleNamespace(synchronize=lambda *a: calls.append(a))
    monkeypatch.setattr(torch, DEV, module, raising=False)
    device = DeviceInfo(backend=DEV, device_type=DEV, count=2)
    assert vendor.synchronize_device(device) is True
    assert vendor.synchronize_device(device.replace(index=1)) is True
    assert calls == [(), (1,)]


def test_synchronize_device_falls_back_to_torch_accelerator(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls: list[object] = []
    monkeypatch.delattr(torch, DEV, raising=False)
    monkeypatch.setattr(
        torch, "accelerator", types.SimpleNamespace(synchronize=lambda i=None: calls.append(i))
    )
    device = DeviceInfo(backend=DEV, device_type=DEV, count=1, index=0)
    with pytest.raises(AttributeError):
        vendor.synchronize_device(device)
    assert vendor.synchronize_device(device, accelerator_fallback=True) is True
    assert calls == [0]


# -- stand-ins for emulation ---------------------------------------------------------

DEFAULTS: dict[str, Any] = {"device_name": "Acme 1", "capability": (3, 1), "sdk": "9.1"}


def test_merge_facts() -> None:
    assert merge_facts(DEV, {"sdk": None}, DEFAULTS, string_facts=("sdk",)) == {
        **DEFAULTS, "sdk": None,
    }
    with pytest.raises(EmulationError) as info:
        merge_facts(DEV, {"cores": 4}, DEFAULTS)
    assert str(info.value) == (
        f"unknown {DEV} emulation fact(s) cores; known facts: capability, device_name, sdk"
    )
    with pytest.raises(EmulationError, match=r"fact\(s\) vram \(no VRAM here\); known"):
        merge_facts(DEV, {"vram": 1}, DEFAULTS, unknown_hints={"vram": "no VRAM here"})
    with pytest.raises(EmulationError, match=r"must be a \(major, minor\) pair, e\.g\. \(3, 1\)"):
        merge_facts(DEV, {"capability": (3, -1)}, DEFAULTS)
    with pytest.raises(EmulationError, match=r"^fact sdk=9 must be a string or None$"):
        merge_facts(DEV, {"sdk": 9}, DEFAULTS, string_facts=("sdk",))
    with pytest.raises(EmulationError, match=r"must be a string \(e\.g\. '9\.1'\) or None"):
        merge_facts(DEV, {"sdk": 9}, DEFAULTS, string_facts=("sdk",), string_example="9.1")
    no_capability = {"device_name": "x"}
    assert merge_facts(DEV, {}, no_capability) == no_capability  # capability is not checked


def test_torch_release() -> None:
    assert re.fullmatch(r"\d+\.\d+\.\d+", torch_release())
    assert torch.__version__.startswith(torch_release())


def test_vendor_device_module_builds_or_configures() -> None:
    extra = {"vendor_fn": lambda: "hi"}
    built = vendor_device_module(DEV, 2, {"name": "Acme 1", "cores": 4}, extra=extra)
    assert built.device_count() == 2
    assert built.get_device_properties(1).cores == 4
    assert built.vendor_fn() == "hi"
    empty = vendor_device_module(DEV, 0, {"name": "Acme 1"})
    assert empty.device_count() == 0
    existing = make_device_module(DEV, 1)
    same = vendor_device_module(DEV, 1, {"name": "Acme 2"}, device_module=existing)
    assert same is existing and existing.get_device_properties(0).name == "Acme 2"


def test_stand_in_package() -> None:
    package = stand_in_package(VENDOR, "1.2.3")
    assert package.__name__ == VENDOR and package.__spec__.name == VENDOR
    assert package.__version__ == "1.2.3"
    assert package.__kernel_plugins_emulated__ is True
    assert "EMULATED" in (package.__doc__ or "")


def test_install_stand_ins_needs_an_emulated_module(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(torch, DEV, types.SimpleNamespace(), raising=False)
    with pytest.raises(EmulationError, match=rf"emulate\('{DEV}'\), which calls this hook"):
        install_stand_ins(DEV, VENDOR, lambda m: StandIns(m, m))


def test_install_stand_ins_puts_everything_in_place(monkeypatch: pytest.MonkeyPatch) -> None:
    module = make_device_module(DEV, 1)
    monkeypatch.setattr(torch, DEV, module, raising=False)
    # registered first so that monkeypatch removes what install_stand_ins sets
    monkeypatch.setitem(sys.modules, VENDOR, None)
    monkeypatch.setattr(torch.version, DEV, None, raising=False)
    monkeypatch.setenv("KP_TEST_HOME", "")
    package = stand_in_package(VENDOR, "1.0")
    seen: list[object] = []

    def build(device_module: types.ModuleType) -> StandIns:
        seen.append(device_module)
        return StandIns(package, device_module, {DEV: "9.1"}, {"KP_TEST_HOME": "/opt/kp"})

    assert install_stand_ins(DEV, VENDOR, build) is True
    assert seen == [module]
    assert sys.modules[VENDOR] is package
    assert getattr(torch.version, DEV) == "9.1"
    assert os.environ["KP_TEST_HOME"] == "/opt/kp"


# -- fixture kernels and scenario checks ---------------------------------------------


def _backend_type(repo: Path, variant: str) -> str:
    meta = json.loads((repo / "build" / variant / "metadata.json").read_text(encoding="utf-8"))
    return str(meta["backend"]["type"])


def test_make_repo_writes_kernels_with_their_backend(tmp_path: Path) -> None:
    variants = {
        "torch-universal": "universal",
        f"torch-{DEV}": DEV,
        "torch213-cxx11-cu128-x86_64-linux": "cuda",
        "torch213-cxx11-cann83-x86_64-linux": "npu",  # a known plugin's token
        "torch213-cxx11-acme12-x86_64-linux": "acme",
    }
    repo = make_repo(tmp_path / "r", variants, python_depends=["nki"])
    for variant, backend in variants.items():
        assert _backend_type(repo, variant) == backend
        assert f"VARIANT = {variant!r}" in (repo / "build" / variant / "__init__.py").read_text()
    meta = json.loads((repo / "build" / "torch-universal" / "metadata.json").read_text())
    assert meta["python-depends"] == ["nki"]
    other = make_repo(
        tmp_path / "o", ["torch213-cxx11-acme12-x86_64-linux"], token_backends={"acme": DEV}
    )
    assert _backend_type(other, "torch213-cxx11-acme12-x86_64-linux") == DEV
    assert meta["id"] != json.loads(
        (other / "build" / "torch213-cxx11-acme12-x86_64-linux" / "metadata.json").read_text()
    )["id"]


def test_recorder_keeps_values_and_errors(capsys: pytest.CaptureFixture[str]) -> None:
    rec = pc.Recorder()
    rec.check("ok", lambda: 1)
    rec.check("bad", lambda: 1 / 0)
    assert rec.results == {
        "ok": 1, "bad": {"error": "ZeroDivisionError", "message": "division by zero"},
    }
    rec.results["path"] = Path("/x")
    rec.emit()
    line = capsys.readouterr().out.strip()
    assert line.startswith("RESULT:")
    assert json.loads(line[len("RESULT:"):])["path"] == "/x"


def test_arch_variant_names_this_system() -> None:
    name = pc.arch_variant("acme12")
    major, minor = torch.__version__.split(".")[:2]
    assert re.fullmatch(rf"torch{major}{minor}-cxx(11|98)-acme12-[a-z0-9_]+-[a-z]+", name)


def test_fixture_kernels_load_and_refuse(manager: Any, tmp_path: Path) -> None:
    rec = pc.Recorder()
    repo = make_repo(tmp_path / "u", ["torch-cuda", "torch-cpu"])
    pc.check_loaded_variant(rec, "noarch", "cpu", repo)
    pc.check_no_variant(rec, "cpu", make_repo(tmp_path / "c", ["torch-cuda"]))
    assert rec.results["noarch"] == "torch-cpu"
    assert "torch-cuda" in rec.results["no_variant"]


def test_toolkit_imports_no_torch() -> None:
    code = (
        "import sys, kernel_plugins, kernel_plugins.plugin_kit, kernel_plugins_testing.stand_ins,"
        " kernel_plugins_testing.kernel_repos, kernel_plugins_testing.plugin_checks;"
        " print('TORCH' if 'torch' in sys.modules else 'NO-TORCH')"
    )
    proc = run_in_fresh_interpreter(code, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "NO-TORCH"
