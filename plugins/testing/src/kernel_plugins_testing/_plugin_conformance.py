"""The hook-level half of the conformance suite (see :mod:`kernel_plugins_testing.conformance`).

:class:`PluginConformance` tests a backend plugin's hooks with its vendor stand-ins put
in place by ``monkeypatch``: no PrivateUse1 device is created, so it runs in the same
process as any other test. :class:`PluginFacts` says what the plugin declares and where
its vendor stack lives; its :meth:`~PluginFacts.hide` and
:meth:`~PluginFacts.put_in_place` serve the plugin's own fixtures too. Importing this
module imports neither torch nor pytest.
"""

from __future__ import annotations

import sys
import types
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from kernel_plugins.errors import KernelPluginsError

if TYPE_CHECKING:
    import pytest

    from kernel_plugins.plugins import PluginManager

    from .stand_ins import StandIns

__all__ = ["PluginConformance", "PluginFacts", "plugin_manager", "process_manager"]

#: The PrivateUse1 name of a process in which no out-of-tree backend registered one.
_UNNAMED_PRIVATEUSE1 = "privateuseone"


@dataclass(frozen=True, kw_only=True)
class PluginFacts:
    """What a backend plugin declares, and where its vendor stack shows itself to PyTorch.

    Attributes:
        hooks: the plugin object (what its ``kernel_plugins`` entry point names), or a
            hooks module.
        backend: the backend name.
        display_name: ``BackendSpec.display_name``.
        arch_tokens: ``BackendSpec.arch_tokens`` (empty for a noarch-only backend).
        vendor_module: the vendor package, e.g. ``"torch_mlu"``.
        build_stand_ins: ``count -> StandIns``, the plugin's detection-level stand-ins
            (default: built from its declared emulation facts, see
            :func:`kernel_plugins_testing.stand_ins.build_declared`).
        device_type: the torch device type (default: ``backend``).
        distribution: the plugin's distribution (default ``kernel-plugins-<backend>``).
        runtime_version: a runtime version the plugin accepts, for the device the
            ``explain_variant`` test passes.
        version_attrs: ``torch.version`` attributes the vendor sets (removed by
            :meth:`hide`).
        environ: environment variables that point at the vendor stack (removed by
            :meth:`hide`).
        other_privateuse1: the PrivateUse1 name of another backend, for the test in
            which that backend owns it (default ``npu``, or ``mlu`` for ``npu``).
        other_privateuse1_is_error: True when detection then raises a PluginError
            saying so; False when it reports no device (a backend such as Neuron that
            only exists as a PrivateUse1 device).
        modules: the plugin's submodules that must import without torch.
        package: the plugin's top-level package (default ``kernel_plugins_<backend>``).
        cases: the vendor facts the data-driven tests check (the other tables of the
            plugin's ``conformance.toml``, see :class:`~._plugin_cases.PluginCases`).
        foreign_variants: arch variants of other backends that ``explain_variant``
            must leave to the core (return None for).
    """

    hooks: Any
    backend: str
    display_name: str
    arch_tokens: tuple[str, ...]
    vendor_module: str
    build_stand_ins: Callable[[int], StandIns] | None = None
    device_type: str | None = None
    distribution: str | None = None
    runtime_version: str | None = None
    version_attrs: tuple[str, ...] = ()
    environ: tuple[str, ...] = ()
    other_privateuse1: str | None = None
    other_privateuse1_is_error: bool = True
    modules: tuple[str, ...] = ("hooks",)
    package: str | None = None
    cases: Mapping[str, Any] = field(default_factory=dict)
    foreign_variants: tuple[str, ...] = ("torch213-cxx11-cu128-x86_64-linux",)

    @property
    def dtype(self) -> str:
        """The torch device type."""
        return self.device_type or self.backend

    @property
    def dist(self) -> str:
        """The plugin's distribution name."""
        return self.distribution or f"kernel-plugins-{self.backend}"

    @property
    def top_package(self) -> str:
        """The plugin's top-level package."""
        return self.package or f"kernel_plugins_{self.backend}"

    def stand_ins(self, count: int, **facts: Any) -> StandIns:
        """The plugin's detection-level stand-ins for ``count`` devices and ``facts``."""
        if self.build_stand_ins is not None and not facts:
            return self.build_stand_ins(count)
        from .stand_ins import build_declared

        return build_declared(self.hooks, count, facts)

    @property
    def other_backend(self) -> str:
        """The PrivateUse1 name another backend takes in the ownership test."""
        return self.other_privateuse1 or ("mlu" if self.dtype == "npu" else "npu")

    def hide(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """Make the vendor stack invisible: no vendor module, no ``torch.<device_type>``.

        Also removes :attr:`version_attrs`, :attr:`environ` and the ``torch.backends``
        attributes the plugin's emulation declares, and gives PrivateUse1 its unregistered
        name, all through ``monkeypatch`` (undone after the test).
        """
        import torch

        monkeypatch.delitem(sys.modules, self.vendor_module, raising=False)
        monkeypatch.delattr(torch, self.dtype, raising=False)
        for name in getattr(getattr(self.hooks, "emulation", None), "torch_backends", ()):
            monkeypatch.delattr(torch.backends, name, raising=False)
        for attr in self.version_attrs:
            monkeypatch.delattr(torch.version, attr, raising=False)
        for name in self.environ:
            monkeypatch.delenv(name, raising=False)
        monkeypatch.setattr(
            torch._C, "_get_privateuse1_backend_name", lambda: _UNNAMED_PRIVATEUSE1
        )

    def put_in_place(
        self, monkeypatch: pytest.MonkeyPatch, stand: StandIns
    ) -> types.ModuleType:
        """Install ``stand`` through ``monkeypatch``; returns ``torch.<device_type>``.

        Puts the package in ``sys.modules``, the device module on torch, the version
        attributes on ``torch.version``, the ``torch.backends`` modules, the environment
        variables and the distributions' metadata folder (on ``sys.path``) in place.
        """
        import torch

        monkeypatch.setitem(sys.modules, self.vendor_module, stand.package)
        monkeypatch.setattr(torch, self.dtype, stand.device_module, raising=False)
        for key, value in stand.version_attrs.items():
            monkeypatch.setattr(torch.version, key, value, raising=False)
        for key, value in stand.backends.items():
            monkeypatch.setattr(torch.backends, key, value, raising=False)
        for key, text in stand.environ.items():
            monkeypatch.setenv(key, text)
        if stand.site is not None:
            monkeypatch.syspath_prepend(str(stand.site))
        return stand.device_module

    def manager(self) -> PluginManager:
        """A plugin manager with the built-in backends and this plugin (see :func:`plugin_manager`)."""
        return plugin_manager(self.hooks, name=self.backend, distribution=self.dist)


def plugin_manager(hooks: Any, *, name: str, distribution: str | None = None) -> PluginManager:
    """A plugin manager with the built-in backends and the plugin ``hooks`` registered as ``name``.

    Entry points are not loaded, so only this plugin (distribution ``distribution``,
    default ``kernel-plugins-<name>``, version ``test``) joins the built-in backends.

    :raises KernelPluginsError: the manager rejected the plugin (with its failures).
    """
    from kernel_plugins.plugins import PluginManager

    dist = distribution or f"kernel-plugins-{name}"
    pm = PluginManager(entry_points=False)
    if pm.register(hooks, name=name, distribution=dist, version="test") is not None:
        return pm
    raise KernelPluginsError(
        f"the plugin manager rejected the {name} plugin ({hooks!r:.80}): {pm.failures()}; "
        "fix the plugin so that it registers"
    )


@contextmanager
def process_manager(manager: PluginManager) -> Iterator[PluginManager]:
    """Make ``manager`` the process-wide plugin manager for the ``with`` block."""
    from kernel_plugins import plugins

    old = plugins.reset_manager(manager)
    try:
        yield manager
    finally:
        plugins.reset_manager(old)


class PluginConformance:
    """The standard hook-level tests of a backend plugin (a pytest base class).

    Subclass it as ``Test<Something>`` and set :attr:`plugin`; pytest collects the
    inherited tests. The tests take pytest's ``monkeypatch`` and ``tmp_path``
    fixtures and leave the process as they found it.
    """

    #: The plugin under test.
    plugin: ClassVar[PluginFacts]

    def _facts(self, *, out_of_tree: bool = False) -> PluginFacts:
        """The plugin's facts; ``out_of_tree``: skip the test for an in-tree device type
        (PrivateUse1 and emulation are not its business)."""
        plugin = getattr(type(self), "plugin", None)
        if not isinstance(plugin, PluginFacts):
            raise KernelPluginsError(
                f"{type(self).__name__} sets no `plugin`: add `plugin = PluginFacts(hooks=..., "
                "backend=..., ...)` to the class"
            )
        from kernel_plugins.emulation_registry import in_tree_reason

        if out_of_tree and (reason := in_tree_reason(plugin.dtype)):
            import pytest

            pytest.skip(f"not a PrivateUse1 backend: {reason}")
        return plugin

    def test_importing_the_plugin_does_not_import_torch(self) -> None:
        """The plugin's modules import neither torch nor the vendor package."""
        from . import run_in_fresh_interpreter

        p = self._facts()
        names = ", ".join([p.top_package] + [f"{p.top_package}.{m}" for m in p.modules])
        code = (
            f"import sys, {names}; "
            f"print('torch' in sys.modules, {p.vendor_module!r} in sys.modules)"
        )
        proc = run_in_fresh_interpreter(code, timeout=60)
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout.split() == ["False", "False"], proc.stdout

    def test_backend_spec_names_the_backend(self) -> None:
        """``backend_spec`` declares the name, device type, display name and tokens."""
        p = self._facts()
        spec = p.hooks.backend_spec()
        got = (spec.name, spec.device_type, spec.display_name)
        assert got == (p.backend, p.dtype, p.display_name), spec
        assert spec.arch_tokens == p.arch_tokens, spec

    def test_explain_leaves_other_tokens_to_the_core(self) -> None:
        """``explain_variant`` says nothing about noarch or other backends' variants."""
        from kernel_plugins.device import DeviceInfo, SystemInfo
        from kernel_plugins.variants import parse_variant

        p = self._facts()
        device = DeviceInfo(
            backend=p.backend, device_type=p.dtype, count=1, runtime_version=p.runtime_version
        )
        system = SystemInfo(cpu="x86_64", os="linux", torch_version=(2, 13), cxx11_abi=True)
        for name in (*p.foreign_variants, f"torch-{p.dtype}"):
            reason = p.hooks.explain_variant(device, system, parse_variant(name))
            assert reason is None, (name, reason)

    def test_absent_stack_returns_none_without_importing(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """No vendor stack: no device, no error, and the vendor package is not imported."""
        p = self._facts()
        p.hide(monkeypatch)
        assert p.hooks.detect_device() is None
        assert p.vendor_module not in sys.modules
        outcome = p.manager().detect(p.backend)
        assert (outcome.status, outcome.error) == ("no device", None), outcome

    def test_zero_devices_is_no_device(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """A vendor stack that sees no device means no device, not an error."""
        p = self._facts()
        p.hide(monkeypatch)
        stand = p.stand_ins(0)
        spec = getattr(stand.package, "__spec__", None)
        assert getattr(spec, "name", stand.package.__name__) == p.vendor_module, spec
        module = p.put_in_place(monkeypatch, stand)
        assert module.is_available() is False
        assert p.hooks.detect_device() is None
        assert p.manager().detect(p.backend).status == "no device"

    def test_device_n_is_described_by_its_own_facts(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """``detect_device(index=N)`` reports device N's name (and capability) with ``index=N``;
        without an index, device 0's with ``index=None`` (``cuda:1`` on a machine of two kinds)."""
        from . import configure_device_module

        p = self._facts()
        p.hide(monkeypatch)
        module = p.put_in_place(monkeypatch, p.stand_ins(2))
        first = dict(vars(module.get_device_properties(0)))
        second = {**first, "name": f"{first.get('name', 'device')} (the second)"}
        if isinstance(first.get("major"), int):
            second["major"] = first["major"] + 1
        configure_device_module(module, properties=[first, second])
        zero, one = p.hooks.detect_device(), p.hooks.detect_device(index=1)
        assert zero is not None and one is not None and (zero.index, one.index) == (None, 1)
        assert one.name != zero.name or one.name is None
        assert zero.capability is None or one.capability == (zero.capability[0] + 1, zero.capability[1])
        outcome = p.manager().detect(p.backend, index=1)
        assert outcome.device is not None and outcome.device.index == 1, outcome

    def test_another_backend_owning_privateuse1_is_reported_without_importing(
        self, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
    ) -> None:
        """PrivateUse1 taken by another backend: said (or no device), vendor not imported."""
        import pytest
        import torch

        from kernel_plugins.errors import PluginError

        p = self._facts(out_of_tree=True)
        p.hide(monkeypatch)
        package = tmp_path / p.vendor_module
        package.mkdir()
        (package / "__init__.py").write_text(
            "raise AssertionError('must not be imported')\n", "utf-8"
        )
        monkeypatch.syspath_prepend(str(tmp_path))
        other = p.other_backend
        monkeypatch.setattr(torch._C, "_get_privateuse1_backend_name", lambda: other)
        if p.other_privateuse1_is_error:
            with pytest.raises(PluginError, match=f"already '{other}'") as info:
                p.hooks.detect_device()
            assert "one per process" in str(info.value)
        else:
            assert p.hooks.detect_device() is None
        assert p.vendor_module not in sys.modules

    def test_emulate_device_hook_needs_an_emulated_module(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """Calling ``emulate_device`` without an emulated device says to use ``emulate``."""
        import pytest

        from ._errors import EmulationError

        p = self._facts(out_of_tree=True)
        p.hide(monkeypatch)
        with pytest.raises(EmulationError, match="kernel_plugins_testing.emulate"):
            p.hooks.emulate_device(count=1, facts={})
