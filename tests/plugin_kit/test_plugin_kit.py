"""The plugin kit: one import for plugin authors, and hooks built from declared facts."""

from __future__ import annotations

import sys
import types
from typing import Any

import pytest
import torch
from kernel_plugins_testing import make_device_module, run_in_fresh_interpreter
from kernel_plugins_testing._plugin_conformance import plugin_manager

from kernel_plugins import plugin_kit
from kernel_plugins.device import DeviceInfo, SystemInfo
from kernel_plugins.errors import KernelImportError
from kernel_plugins.plugin_kit import (
    Emulation,
    PrivateUse1Backend,
    RuntimeReading,
    RuntimeVersion,
    VariantTokens,
    parse_variant,
)

SYSTEM = SystemInfo(cpu="x86_64", os="linux", torch_version=(2, 13), cxx11_abi=True)


def _parse(text: object) -> tuple[int, int] | None:
    if not isinstance(text, str) or text.count(".") != 1:
        return None
    major, minor = text.split(".")
    return (int(major), int(minor)) if major.isdigit() and minor.isdigit() else None


def _backend(**changes: Any) -> PrivateUse1Backend:
    facts: dict[str, Any] = {
        "name": "kitdev",
        "display_name": "Kit Device",
        "vendor_module": "torch_kitdev",
        "import_hint": "reinstall torch_kitdev",
        "runtime": RuntimeVersion(
            label="KitSDK", parse=_parse, torch_attr="kitdev", expected="e.g. '3.1'",
            unknown_texts=("unknown",), advice="export KITSDK_VERSION",
        ),
        "tokens": VariantTokens(prefix="kit"),
    }
    return PrivateUse1Backend(**{**facts, **changes})


def _device(runtime: str | None = "3.1", **changes: Any) -> DeviceInfo:
    return DeviceInfo(backend="kitdev", device_type="kitdev", count=1, runtime_version=runtime,
                      **changes)


HOOKS = {
    "backend_spec", "detect_device", "explain_no_device", "list_variants", "explain_variant",
    "load_kernel", "synchronize", "emulate_device", "paired_torch", "check_arch",
}


def test_every_hook_reaches_the_plugin_manager() -> None:
    """The backend object is the plugin: each hook method is registered for it."""
    backend = _backend(emulation=Emulation(facts={}))
    pm = plugin_manager(backend, name="kitdev")
    registered = {
        hook.name
        for hook in pm._pm.get_hookcallers(backend) or []
        if any(impl.plugin is backend for impl in hook.get_hookimpls())
    }
    assert registered == HOOKS
    assert pm.record("kitdev").plugin is backend
    spec = pm.record("kitdev").spec
    assert (spec.display_name, spec.arch_tokens, spec.priority) == ("Kit Device", ("kit",), 95)


def test_runtime_version_needs_exactly_one_source() -> None:
    with pytest.raises(ValueError, match="exactly one of torch_attr= or read="):
        RuntimeVersion(label="X", parse=_parse)
    with pytest.raises(ValueError, match="exactly one"):
        RuntimeVersion(label="X", parse=_parse, torch_attr="x", read=lambda: RuntimeReading("1.0"))


@pytest.mark.parametrize(
    ("tokens", "version", "accepted"),
    [
        (VariantTokens(prefix="kit"), (3, 1), ["kit-3.1"]),
        (VariantTokens(prefix="kit", rule="same-major"), (3, 2), ["kit-3.2", "kit-3.1", "kit-3.0"]),
        (VariantTokens(prefix="kit"), None, []),
    ],
)
def test_accepted_tokens(tokens: VariantTokens, version: Any, accepted: list[str]) -> None:
    assert tokens.accepted(version) == accepted


@pytest.mark.parametrize(
    ("tokens", "token", "decoded"),
    [
        (VariantTokens(prefix="kit"), "kit313", (3, 13)),
        (VariantTokens(prefix="kit", minor_width=1), "kit100", (10, 0)),
        (VariantTokens(prefix="kit", major_width=2), "kit128", (12, 8)),
        (VariantTokens(prefix="kit"), "kit031", (0, 31)),  # a 0.x runtime (libtpu numbering)
        (VariantTokens(prefix="kit", major_width=2), "kit03", (0, 3)),
        (VariantTokens(prefix="kit", minor_width=1), "kit00", (0, 0)),
        (VariantTokens(prefix="kit"), "kit0", None),
        (VariantTokens(prefix="kit"), "kit\u00b2\u00b3", None),  # digits, but not ASCII ones
        (VariantTokens(prefix="kit"), "kit3", None),
        (VariantTokens(prefix="kit"), "cu128", None),
        (VariantTokens(prefix="kit"), "kitx31", None),
    ],
)
def test_decode(tokens: VariantTokens, token: str, decoded: Any) -> None:
    assert tokens.decode(token) == decoded


def test_list_variants_exact_then_noarch() -> None:
    names = _backend().list_variants(_device("3.1"), SYSTEM)
    assert "torch213-cxx11-kit31-x86_64-linux" in names
    assert not any("kit30" in n for n in names)
    assert names[-2:] == ["torch-kitdev", "torch-universal"]
    assert _backend().list_variants(_device(None), SYSTEM) == ["torch-kitdev", "torch-universal"]


def test_explain_uses_the_core_wording_and_adds_the_advice() -> None:
    backend = _backend()
    variant = parse_variant("torch213-cxx11-kit30-x86_64-linux")
    assert backend.explain_variant(_device("3.1"), SYSTEM, variant) == (
        "KitSDK 3.0 does not match the system's KitSDK 3.1 (an exact match is required)"
    )
    assert backend.explain_variant(_device(None), SYSTEM, variant) == (
        "KitSDK 3.0 cannot be checked: the system's KitSDK version is unknown "
        "(export KITSDK_VERSION)"
    )
    foreign = parse_variant("torch213-cxx11-cu128-x86_64-linux")
    assert backend.explain_variant(_device("3.1"), SYSTEM, foreign) is None
    assert backend.explain_variant(_device("3.1"), SYSTEM, parse_variant("torch-kitdev")) is None


def test_noarch_only_backend_refuses_arch_variants_with_its_reason() -> None:
    backend = _backend(runtime=None, tokens=None, noarch_reason="kernels are scripts")
    assert backend.backend_spec().arch_tokens == ()
    assert backend.list_variants(_device(), SYSTEM) == ["torch-kitdev", "torch-universal"]
    reason = backend.explain_variant(
        _device(), SYSTEM, parse_variant("torch213-cxx11-cu128-x86_64-linux")
    )
    assert reason == (
        "the kitdev backend loads no arch variants (token cu128): kernels are scripts"
    )


@pytest.fixture
def stack(monkeypatch: pytest.MonkeyPatch) -> Any:
    """``stack(runtime, count, **props)`` puts a stand-in torch_kitdev in place."""

    def put(runtime: Any, count: int = 2, **props: Any) -> types.ModuleType:
        package = types.ModuleType("torch_kitdev")
        package.__spec__ = None
        package.__version__ = "0.9"  # type: ignore[attr-defined]
        properties = [{"name": "Kit One", "major": 2, "minor": 1, **props}] if count else []
        module = make_device_module("kitdev", count, properties=properties)
        monkeypatch.setitem(sys.modules, "torch_kitdev", package)
        monkeypatch.setattr(torch, "kitdev", module, raising=False)
        monkeypatch.setattr(torch.version, "kitdev", runtime, raising=False)
        monkeypatch.setattr(torch._C, "_get_privateuse1_backend_name", lambda: "privateuseone")
        return module

    return put


def test_detect_reads_runtime_capability_and_extension(stack: Any) -> None:
    stack("3.1")
    info = _backend().detect_device()
    assert info is not None
    assert (info.count, info.runtime_version, info.capability, info.name) == (
        2, "3.1", (2, 1), "Kit One"
    )
    assert (info.extension_version, info.notes) == ("0.9", ())


@pytest.mark.parametrize(
    ("runtime", "note"),
    [
        (None, "KitSDK version unknown (torch.version.kitdev is None): only torch-kitdev and "
               "torch-universal variants can load; export KITSDK_VERSION"),
        ("unknown", "KitSDK version unknown (torch.version.kitdev is 'unknown')"),
        ("3.x", "unparsable torch.version.kitdev '3.x' (expected e.g. '3.1')"),
    ],
)
def test_detect_notes_an_unusable_runtime(stack: Any, runtime: Any, note: str) -> None:
    stack(runtime)
    info = _backend().detect_device()
    assert info is not None and any(n.startswith(note) for n in info.notes), info.notes


def test_detect_without_capability_and_with_extra_notes(
    stack: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    stack("3.1")
    backend = _backend(reports_capability=False, extra_notes=lambda found: [f"{found.count} seen"])
    info = backend.detect_device()
    assert info is not None and info.capability is None and info.notes == ("2 seen",)
    module = stack("3.1")
    monkeypatch.setattr(module, "get_device_properties", lambda i: types.SimpleNamespace(name="X"))
    info = _backend().detect_device()
    assert info is not None and info.capability is None
    assert any("has no integer major/minor" in n for n in info.notes)


def test_detect_none_without_devices_says_why(stack: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    stack("3.1", count=0)
    backend = _backend()
    assert backend.detect_device() is None
    assert backend.explain_no_device() == (
        "torch_kitdev sees 0 kitdev devices (check the driver and that the devices are visible)"
    )
    monkeypatch.setitem(sys.modules, "torch_kitdev", None)
    assert backend.explain_no_device() == "torch_kitdev (the Kit Device extension) is not installed"


def test_load_kernel_imports_the_vendor_or_explains(monkeypatch: pytest.MonkeyPatch) -> None:
    load = types.SimpleNamespace(repo_id="org/k", variant="torch-kitdev")
    monkeypatch.setitem(sys.modules, "torch_kitdev", None)  # importing it fails
    with pytest.raises(KernelImportError, match="reinstall torch_kitdev"):
        _backend().load_kernel(_device(), load)  # type: ignore[arg-type]
    assert _backend(vendor_optional=True).load_kernel(_device(), load) is None  # type: ignore[arg-type]


def test_emulation_facts_go_to_the_testing_distribution(monkeypatch: pytest.MonkeyPatch) -> None:
    """The hook hands the declared facts to kernel-plugins-testing, which builds the stand-ins."""
    from kernel_plugins_testing import stand_ins

    calls: list[tuple[object, int, dict[str, Any]]] = []
    monkeypatch.setattr(
        stand_ins, "install_declared", lambda b, count, facts: calls.append((b, count, facts)) or True
    )
    backend = _backend(emulation=Emulation(facts={"a": 0}))
    assert backend.emulate_device(2, {"a": 1}) is True
    assert calls == [(backend, 2, {"a": 1})]
    assert _backend().emulate_device(2, {}) is None


def test_emulation_without_the_testing_distribution_says_what_to_install(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from kernel_plugins.errors import MissingDependencyError

    monkeypatch.setitem(sys.modules, "kernel_plugins_testing", None)
    monkeypatch.setitem(sys.modules, "kernel_plugins_testing.stand_ins", None)
    with pytest.raises(MissingDependencyError, match="pip install kernel-plugins-testing"):
        _backend(emulation=Emulation(facts={})).emulate_device(1, {})


def test_importing_the_kit_imports_no_torch() -> None:
    proc = run_in_fresh_interpreter(
        "import sys, kernel_plugins.plugin_kit as k\n"
        "assert 'torch' not in sys.modules and 'kernel_plugins.importer' not in sys.modules\n"
        "print(k.KernelLoad.__name__)\n"
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "KernelLoad"


def test_the_kit_exports_what_it_says() -> None:
    missing = [name for name in plugin_kit.__all__ if not hasattr(plugin_kit, name)]
    assert missing == []


@pytest.mark.parametrize(
    ("backend", "runtime", "legacy", "new"),
    [("mlu", "3.13.5", "mlu313", "mlu-3.13"), ("musa", "4030", "musa43", "musa-4.3"),
     ("npu", "8.3.RC1", "cann83", "cann-8.3")],
)
def test_a_plugin_declares_its_runtime_once_and_both_grammars_resolve(
    monkeypatch: pytest.MonkeyPatch, backend: str, runtime: str, legacy: str, new: str
) -> None:
    from kernel_plugins.plugins import PluginManager, reset_manager
    from kernel_plugins.resolving import resolve_variants

    monkeypatch.delenv("KERNEL_PLUGINS_STRICT", raising=False)
    plugin = PluginManager().backends()[backend].plugin
    assert plugin.tokens.token(plugin.runtime.major_minor(runtime)) == legacy
    assert plugin.tokens.form(plugin.runtime.major_minor(runtime)) == new
    system = SystemInfo(cpu="x86_64", os="linux", torch_version=(2, 13), cxx11_abi=True)
    device = DeviceInfo(backend=backend, device_type=backend, count=1, runtime_version=runtime)
    names = [f"torch213-cxx11-{legacy}-x86_64-linux", f"torch-2.13-{new}-cpython-3.9-abi3-x86_64-linux",
             f"sdk-{new}-cpython-3.9-abi3-x86_64-linux", f"torch-{backend}"]
    old = reset_manager(PluginManager())
    try:
        res = resolve_variants(names, device, system)
    finally:
        reset_manager(old)
    assert set(res.accepted) == set(names), res.trace()
    assert res.accepted[-2:] == (names[2], names[3])
