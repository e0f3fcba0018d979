"""The data-driven half of the hook-level conformance suite.

A plugin's vendor facts (what detection must report for given stand-in facts, the
variant names, the reasons of refused variants, resolution against a fixture
repository...) are data in its ``conformance.toml``; :class:`PluginCases` turns each
table into tests, so the five plugins' tests are parameters of one suite rather than
copies. See :func:`kernel_plugins_testing.conformance.declared_suites`. Importing this
module imports neither torch nor pytest.
"""

from __future__ import annotations

import sys
import types
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pytest

    from ._plugin_conformance import PluginFacts

__all__ = ["PluginCases"]

#: Case lists of ``conformance.toml`` -> the argument name of the test that takes them.
_CASE_ARGS = {
    "bad_facts": "bad_facts_case",
    "detect": "detect_case",
    "variants": "variant_case",
    "explain": "explain_case",
    "resolve": "resolve_case",
    "arch": "arch_case",
}


def _torch_release() -> str:
    from .stand_ins import torch_release

    return torch_release()


def fill(value: Any) -> Any:
    """``value`` with ``{torch}`` (``{torch_minor}``) in strings replaced by the installed
    torch's ``X.Y.Z`` (``X.Y``)."""
    if isinstance(value, str) and "{torch" in value:
        release = _torch_release()
        minor = ".".join(release.split(".")[:2])
        return value.replace("{torch}", release).replace("{torch_minor}", minor)
    if isinstance(value, list):
        return [fill(v) for v in value]
    if isinstance(value, dict):
        return {k: fill(v) for k, v in value.items()}
    return value


def _as_seen(value: Any) -> Any:
    """A detected value as TOML writes it (tuples as lists)."""
    return list(value) if isinstance(value, tuple) else value


def facts_of(case: Mapping[str, Any]) -> dict[str, Any]:
    """A case's stand-in facts: ``facts``, plus ``none`` (facts set to None; TOML has no null)."""
    return {**case.get("facts", {}), **{name: None for name in case.get("none", [])}}


def check_device(info: Any, expect: Mapping[str, Any], notes: Any = None) -> None:
    """Assert the fields of a detected ``DeviceInfo`` named in ``expect``.

    ``expect["none"]`` lists fields that must be None (TOML has no null).

    :param notes: a list of fragments that must each be in some note; a list under
        ``expect["notes"]`` must equal the notes exactly.
    """
    assert info is not None, "detection found no device"
    expect = dict(expect)
    for key in expect.pop("none", []):
        assert getattr(info, key) is None, (key, info)
    for key, want in fill(expect).items():
        assert _as_seen(getattr(info, key)) == want, (key, getattr(info, key), info)
    for fragment in fill(notes or []):
        assert any(fragment in n for n in info.notes), (fragment, info.notes)


class PluginCases:
    """Tests built from the case tables of a :class:`PluginFacts` (a pytest mixin)."""

    def _facts(self) -> PluginFacts:
        plugin = getattr(type(self), "plugin", None)
        assert plugin is not None, f"{type(self).__name__} sets no `plugin`"
        return plugin  # type: ignore[no-any-return]

    def _case(self, name: str) -> Any:
        return self._facts().cases.get(name)

    def pytest_generate_tests(self, metafunc: pytest.Metafunc) -> None:
        """One test per case of each table of the plugin's ``conformance.toml``."""
        for table, arg in _CASE_ARGS.items():
            if arg in metafunc.fixturenames:
                cases = list(self._case(table) or [])
                ids = [str(c.get("id", i)) for i, c in enumerate(cases)]
                metafunc.parametrize(arg, cases, ids=ids)

    def _install(self, monkeypatch: pytest.MonkeyPatch, count: int = 2, **facts: Any) -> Any:
        """Hide the real stack, put the stand-ins in place; returns ``torch.<device_type>``."""
        p = self._facts()
        p.hide(monkeypatch)
        return p.put_in_place(monkeypatch, p.stand_ins(count, **facts))

    def _system(self, override: Mapping[str, Any] | None = None) -> Any:
        """The host the variant tests assume: linux, torch 2.13 (cxx11), the plugin's CPU."""
        from kernel_plugins.device import SystemInfo

        facts = {**(self._case("system") or {}), **(override or {})}
        cpu = facts.get("cpu", "x86_64")
        if facts.get("torch", True) is False:
            return SystemInfo(cpu=cpu, os="linux")
        return SystemInfo(cpu=cpu, os="linux", torch_version=tuple(facts.get("torch_version",
                          (2, 13))), cxx11_abi=True)

    def _device(self, runtime: str | None) -> Any:
        from kernel_plugins.device import DeviceInfo

        p = self._facts()
        return DeviceInfo(backend=p.backend, device_type=p.dtype, count=1, runtime_version=runtime)

    # ------------------------------------------------------------------ detection
    def test_default_stand_ins_are_detected(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """The default stand-ins: every vendor fact reported, marked emulated, the CPU-free hooks."""
        p = self._facts()
        self._install(monkeypatch, 2)
        info = p.hooks.detect_device()
        check_device(info, {"backend": p.backend, "device_type": p.dtype, "count": 2,
                            "emulated": True, **self._case("device")})
        assert p.manager().detect(p.backend).status == "available"

    def test_a_blocked_vendor_module_counts_as_absent(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """``sys.modules[vendor] = None``: no device, no error."""
        p = self._facts()
        p.hide(monkeypatch)
        monkeypatch.setitem(sys.modules, p.vendor_module, None)
        assert p.hooks.detect_device() is None

    def test_synchronize_calls_the_device_module(self, monkeypatch: pytest.MonkeyPatch) -> None:
        p = self._facts()
        module = self._install(monkeypatch, 2)
        info = p.hooks.detect_device()
        assert p.hooks.synchronize(info) is True
        assert p.hooks.synchronize(info.replace(index=1)) is True
        assert module.synchronize_calls == 2

    def test_broken_vendor_install_is_an_error_naming_the_cause(
        self, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
    ) -> None:
        """A vendor package that fails to import: an error with its cause and the fix."""
        import pytest

        from kernel_plugins.errors import PluginError

        p, case = self._facts(), self._case("broken_import")
        p.hide(monkeypatch)
        package = tmp_path / "site" / p.vendor_module
        package.mkdir(parents=True)
        (package / "__init__.py").write_text(f"raise {case['error']}\n", "utf-8")
        monkeypatch.syspath_prepend(str(tmp_path / "site"))
        with pytest.raises(PluginError, match=case["match"]) as info:
            p.hooks.detect_device()
        assert case["hint"] in str(info.value)
        outcome = p.manager().detect(p.backend)
        assert outcome.status == "error" and case["match"] in str(outcome.error)

    def test_wrong_emulation_facts_are_refused(self, bad_facts_case: Mapping[str, Any]) -> None:
        import pytest

        from ._errors import EmulationError

        with pytest.raises(EmulationError, match=bad_facts_case["match"]):
            self._facts().stand_ins(1, **facts_of(bad_facts_case))

    def test_detection_reports_the_vendor_facts(
        self, monkeypatch: pytest.MonkeyPatch, detect_case: Mapping[str, Any]
    ) -> None:
        """Stand-ins with other facts: detection reports them (notes for what is wrong)."""
        p, case = self._facts(), detect_case
        module = self._install(monkeypatch, case.get("count", 1), **facts_of(case))
        for name, value in case.get("env", {}).items():
            monkeypatch.setenv(name, value)
        check_device(p.hooks.detect_device(), case.get("expect", {}), case.get("notes"))
        if case.get("vendor_is_device_module"):
            assert sys.modules[p.vendor_module] is module
        for name, value in fill(case.get("functions", {})).items():
            assert _as_seen(getattr(module, name)()) == value, name
        props = module.get_device_properties(case.get("count", 1) - 1)
        for name, value in case.get("properties", {}).items():
            assert getattr(props, name) == value, name
        import torch

        for attr in case.get("torch_version_none", []):
            assert hasattr(torch.version, attr) and getattr(torch.version, attr) is None, attr
        if "list_variants" in case:
            info = p.hooks.detect_device()
            assert p.hooks.list_variants(info, self._system()) == case["list_variants"]

    def test_a_stack_written_from_the_vendor_docs_is_detected(
        self, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
    ) -> None:
        """A stand-in built from docs/vendors.md alone, independent of the plugin's emulation."""
        import torch

        p, case = self._facts(), self._case("hand_made")
        p.hide(monkeypatch)
        props = types.SimpleNamespace(**case.get("properties", {}))
        module: Any = types.ModuleType(p.vendor_module) if case.get("module_is_vendor") else (
            types.SimpleNamespace()
        )
        count = case["count"]
        functions = {
            "is_available": lambda: True, "device_count": lambda: count,
            "get_device_properties": lambda i: props,
            **{k: (lambda v=v: v) for k, v in case.get("functions", {}).items()},
        }
        for name, fn in functions.items():
            setattr(module, name, fn)
        vendor: Any = module if case.get("module_is_vendor") else types.ModuleType(p.vendor_module)
        vendor.__spec__ = None
        vendor.__version__ = case["version"]
        for name, text in case.get("files", {}).items():
            (tmp_path / name).write_text(text, encoding="utf-8")
        for name, value in case.get("env", {}).items():
            monkeypatch.setenv(name, value.replace("{tmp}", str(tmp_path)))
        monkeypatch.setitem(sys.modules, p.vendor_module, vendor)
        monkeypatch.setattr(torch, p.dtype, module, raising=False)
        for attr, value in case.get("torch_version", {}).items():
            monkeypatch.setattr(torch.version, attr, value, raising=False)
        for name in case.get("torch_backends", []):
            monkeypatch.setattr(torch.backends, name, types.ModuleType(name), raising=False)
        for name, version in case.get("distributions", {}).items():
            (tmp_path / f"{name}-{version}.dist-info").mkdir()
            (tmp_path / f"{name}-{version}.dist-info" / "METADATA").write_text(
                f"Name: {name}\nVersion: {version}\n", encoding="utf-8")
            monkeypatch.syspath_prepend(str(tmp_path))
        check_device(p.hooks.detect_device(), {"count": count, "emulated": False,
                                               "extension_version": case["version"],
                                               **case["expect"]})

    # --------------------------------------------------------------- architectures
    def test_architecture_cases_are_declared(self) -> None:
        """Every plugin states how it judges ``backend.archs`` (``[[arch]]`` cases; a
        backend that does not check answers ``expect = "unknown"``)."""
        assert self._case("arch"), "conformance.toml has no [[arch]] cases"

    def test_check_arch(self, monkeypatch: pytest.MonkeyPatch, arch_case: Mapping[str, Any]) -> None:
        """``check_arch`` for a build's ``archs`` on a device detected from stand-ins with
        the case's facts: the hook itself, and through the plugin manager."""
        p, case = self._facts(), arch_case
        self._install(monkeypatch, 1, **facts_of(case))
        info = p.hooks.detect_device()
        if "device_arch" in case:
            assert info.arch == case["device_arch"], info
        want = {"unknown": None}.get(case["expect"], case["expect"])
        archs = tuple(case["archs"])
        assert p.hooks.check_arch(info, archs) is want, (archs, info)
        assert p.manager().check_arch(info, archs) is want

    # ------------------------------------------------------------------- variants
    def test_backend_priority_and_python_depends(self) -> None:
        p = self._facts()
        spec = p.hooks.backend_spec()
        cuda = p.manager().backends()["cuda"].spec.priority
        above = self._case("above_cuda") is True
        assert (spec.priority > cuda) is above and spec.priority > 0, spec.priority
        depends = {k: [d.pip, d.module] for k, d in spec.python_depends.items()}
        assert depends == self._case("python_depends"), depends

    def test_variant_names(self, variant_case: Mapping[str, Any]) -> None:
        """``list_variants`` for a runtime: the token it implies, then the noarch names."""
        from kernel_plugins.variants import parse_variant

        p = self._facts()
        system = self._system(variant_case.get("system"))
        names = p.hooks.list_variants(self._device(variant_case.get("runtime")), system)
        tail = variant_case.get("last", [])
        legacy = [n for n in names if not n.startswith("sdk-")]  # sdk names: this Python's
        assert legacy[len(legacy) - len(tail):] == tail, names
        assert names[-2:] == [f"torch-{p.dtype}", "torch-universal"], names
        if "first" in variant_case:
            assert names[0] == variant_case["first"], names
        token = variant_case.get("token")
        assert {parse_variant(n).token for n in names} - {None} == ({token} if token else set())
        if token is None:  # no arch variant at all: only the noarch names
            assert all(parse_variant(n).kind in ("noarch", "universal") for n in names), names

    def test_explain_variant(self, explain_case: Mapping[str, Any]) -> None:
        """Why an arch variant of this backend does not fit: both versions named."""
        from kernel_plugins.variants import parse_variant

        p, case = self._facts(), explain_case
        reason = p.hooks.explain_variant(
            self._device(case.get("runtime")), self._system(), parse_variant(case["variant"])
        )
        if "reason" in case:
            assert reason == case["reason"]
        for fragment in case.get("contains", []):
            assert isinstance(reason, str) and fragment in reason, reason

    def test_resolution_against_a_fixture_repo(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, resolve_case: Mapping[str, Any]
    ) -> None:
        """Whole resolution with the plugin as the process's backend: order and reasons."""
        from kernel_plugins.resolving import resolve_variants
        from kernel_plugins.sources import local_variants

        from ._plugin_conformance import process_manager
        from .kernel_repos import make_repo

        p, case = self._facts(), resolve_case
        monkeypatch.delenv("KERNEL_PLUGINS_STRICT", raising=False)
        repo = make_repo(tmp_path / "repo", case["variants"])
        with process_manager(p.manager()):
            device = self._device(case.get("runtime"))
            if "device" in case:
                device = device.replace(**case["device"])
            res = resolve_variants(local_variants(repo).variants, device=device,
                                   system=self._system())
        assert list(res.accepted) == case["accepted"]
        reasons = {d.variant: d.reason for d in res.decisions if not d.accepted}
        for variant, reason in case.get("reasons", {}).items():
            assert reasons[variant] == reason, (variant, reasons[variant])
        for variant, fragment in case.get("contains", {}).items():
            assert fragment in str(reasons[variant]), (variant, reasons[variant])
