"""A declarative backend for a vendor extension on PyTorch's PrivateUse1 slot.

:class:`PrivateUse1Backend` is a pluggy plugin object: its methods marked with
:data:`~kernel_plugins.hookspecs.hookimpl` are the backend's hooks, built from the facts
it is given (:class:`RuntimeVersion`, :class:`VariantTokens`, an optional
:class:`~kernel_plugins.plugin_kit.Emulation`). A hook the facts cannot express is a
method of a subclass. Importing this module imports neither torch nor any vendor package.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from types import ModuleType
from typing import TYPE_CHECKING, Any, Protocol

from .._record import field, record, replace
from ..backends.torchinfo import ArchFacts
from ..device import BackendSpec, DeviceInfo, PyDepend, SystemInfo, no_torch_reason
from ..emulation_registry import in_tree_reason
from ..errors import PluginError
from ..hookspecs import hookimpl
from ..variants import Variant, VariantTokens, arch_variant_names, noarch_variant_names
from . import _vendor
from ._emulation import Emulation

if TYPE_CHECKING:
    from ..provenance import KernelLoad

__all__ = ["PrivateUse1Backend", "Reading", "RuntimeReading", "RuntimeVersion", "VariantTokens"]


class Reading(Protocol):
    """What a runtime-version reader returns: the text and a note (both may be None)."""

    @property
    def text(self) -> str | None:
        """The version exactly as found, or None when unknown."""

    @property
    def note(self) -> str | None:
        """Why the version is unknown or unusable, else None."""


@record
class RuntimeReading:
    """A runtime version as read: the text (None when unknown) and a note, if any."""

    text: str | None
    note: str | None = None


@record(kw_only=True)
class RuntimeVersion:
    """Where a backend's runtime version comes from and how to read it.

    Attributes:
        label: what the vendor calls it in messages, e.g. ``"CANN"``.
        parse: text -> ``(major, minor, ...)``, or None when the text is unreadable.
        torch_attr: the ``torch.version`` attribute holding it (``"cann"``), or None
            when :attr:`read` is given instead.
        read: a function reading it elsewhere (a file, the environment); returns an
            object with ``text`` and ``note`` (a :class:`RuntimeReading`, say). Used when :attr:`torch_attr` is None.
        expected: what a good value looks like, for the "unparsable" note.
        unknown_texts: values the vendor writes for "unknown", e.g. ``("not known",)``.
        advice: how a user makes the version known; appended to the notes and to the
            ``explain_variant`` reason when the version is unknown.
    """

    label: str
    parse: Callable[[object], tuple[int, ...] | None]
    torch_attr: str | None = None
    read: Callable[[], Reading] | None = None
    expected: str = ""
    unknown_texts: tuple[str, ...] = ()
    advice: str | None = None

    def __post_init__(self) -> None:
        if (self.torch_attr is None) == (self.read is None):
            raise ValueError("RuntimeVersion needs exactly one of torch_attr= or read=")

    def reading(self, torch: ModuleType, backend: str) -> Reading:
        """Read the version on this system (``torch`` is the imported torch module)."""
        if self.read is not None:
            return self.read()
        attr = str(self.torch_attr)
        raw = getattr(torch.version, attr, None)
        unknown = f"{self.label} version unknown (torch.version.{attr} is {raw!r}): "
        unknown += _vendor.noarch_only_note(backend) + (f"; {self.advice}" if self.advice else "")
        note = _vendor.version_note(raw, self.parse, what=f"torch.version.{attr}", expected=self.expected,
                                    backend=backend, unknown=unknown, unknown_texts=self.unknown_texts)
        return RuntimeReading(None if raw is None else str(raw), note)

    def major_minor(self, text: str | None) -> tuple[int, int] | None:
        """``(major, minor)`` of ``text``, or None when it is unknown or unreadable."""
        return None if (version := self.parse(text)) is None else (version[0], version[1])


@record(kw_only=True, eq=False)  # a plugin is compared by identity
class PrivateUse1Backend(ArchFacts):
    """A backend for a vendor extension on PyTorch's PrivateUse1 slot, stated as facts.

    An instance is the plugin: the entry point names it (``mlu =
    "kernel_plugins_mlu.hooks:MLU"``) and each hook is a method below. A hook the facts
    cannot express is a ``@hookimpl`` method of a subclass.

    Attributes:
        name: the backend name (also the device type unless :attr:`device_type` is set).
        display_name: e.g. ``"Cambricon MLU"``.
        vendor_module: the vendor package, e.g. ``"torch_mlu"``.
        import_hint: how to fix a vendor package that is installed but fails to import.
        runtime: where the runtime version comes from; None when the backend has none
            (then only noarch variants are listed).
        tokens: the arch-variant token form; None for a noarch-only backend (every
            arch variant is refused with a reason).
        priority: preference when no device is requested.
        capability_label: what the vendor calls the device capability.
        reports_capability: False when the devices report no (major, minor).
        extra_notes: more notes about a found stack (an extension version check, a SoC).
        python_depends: ``python-depends`` names this backend adds to the general ones.
        accelerator_sync: fall back to ``torch.accelerator.synchronize`` when
            ``torch.<type>`` has no ``synchronize``.
        emulation: the vendor facts for emulating the stack on the CPU (tests only); the
            ``emulate_device`` hook hands them to kernel-plugins-testing, which builds
            the stand-ins. None: the backend cannot be emulated beyond the bare device.
        noarch_reason: why arch variants are refused when :attr:`tokens` is None.
        vendor_optional: the device can exist without the vendor package (then
            ``load_kernel`` imports it only when it is installed).
        built_for_torch: the vendor version -> the torch ``"X.Y"`` it was built for
            (``"1.22.0+torch2.4.0"`` -> ``"2.4"``), or None when it does not say.
        noarch_aliases: other backend names whose noarch variants load (NPU: ``cann``, as
            kernels 0.19 names it: ``torch-cann`` besides ``torch-npu``).
        read_arch, arch_runs: see :class:`~kernel_plugins.backends.torchinfo.ArchFacts`
            (``read_arch`` reads the found :class:`VendorDevices`: ``found.properties()`` are the
            described device's).
    """

    name: str
    display_name: str
    vendor_module: str
    import_hint: str
    runtime: RuntimeVersion | None = None
    tokens: VariantTokens | None = None
    device_type: str | None = None
    priority: int = 95
    capability_label: str = "capability"
    reports_capability: bool = True
    extra_notes: Callable[[_vendor.VendorDevices], Iterable[str]] | None = None
    python_depends: Mapping[str, PyDepend] = field(default_factory=dict)
    accelerator_sync: bool = False
    emulation: Emulation | None = None
    noarch_reason: str = "this backend's kernels ship only as noarch variants"
    vendor_optional: bool = False
    built_for_torch: Callable[[str], str | None] | None = None
    noarch_aliases: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if reason := in_tree_reason(self.dtype):  # refused where the plugin is loaded: listed as failed
            raise PluginError(f"the {self.name} backend cannot be a PrivateUse1Backend: {reason}")

    @property
    def dtype(self) -> str:
        """The torch device type."""
        return self.device_type or self.name

    @hookimpl
    def backend_spec(self) -> BackendSpec:
        """The ``backend_spec`` hook."""
        return BackendSpec(name=self.name, device_type=self.dtype, display_name=self.display_name,
                           priority=self.priority, arch_tokens=() if self.tokens is None else (self.tokens.prefix,),
                           python_depends=dict(self.python_depends), capability_label=self.capability_label)

    @hookimpl
    def detect_device(self, index: int | None = None) -> DeviceInfo | None:
        """The ``detect_device`` hook: the vendor installed, importable, with devices; device ``index``'s facts."""
        found = _vendor.find_vendor_devices(self.name, self.vendor_module, self.dtype, import_hint=self.import_hint)
        return None if found is None else self.describe(replace(found, index=index))

    def describe(self, found: _vendor.VendorDevices) -> DeviceInfo:
        """The :class:`DeviceInfo` of a found stack (capability, runtime, notes), for ``found.index``."""
        notes: list[str] = []
        props = found.properties()
        capability = _vendor.capability_of(props) if self.reports_capability else None
        if self.reports_capability and capability is None:
            notes.append(_vendor.missing_capability_note(self.dtype, props, found.index or 0))
        reading = RuntimeReading(None) if self.runtime is None else self.runtime.reading(found.torch, self.name)
        if reading.note:
            notes.append(reading.note)
        if self.extra_notes is not None:
            notes.extend(self.extra_notes(found))
        return found.info(runtime_version=reading.text, name=_vendor.device_name_of(props), capability=capability,
                          notes=notes, arch=None if self.read_arch is None else self.read_arch(found))

    @hookimpl
    def explain_no_device(self) -> str | None:
        """The ``explain_no_device`` hook: torch, the vendor package, or the devices."""
        torch = _vendor.torch_if_installed()
        if torch is None:
            return no_torch_reason()
        if not _vendor.module_installed(self.vendor_module):
            return f"{self.vendor_module} (the {self.display_name} extension) is not installed"
        if getattr(torch, self.dtype, None) is None:
            return f"torch.{self.dtype} does not exist (is {self.vendor_module} imported?)"
        return f"{self.vendor_module} sees 0 {self.dtype} devices (check the driver and that the devices are visible)"

    @hookimpl
    def list_variants(self, device: DeviceInfo, system: SystemInfo) -> list[str]:
        """The ``list_variants`` hook: accepted arch tokens, then the noarch names."""
        names = [] if self.tokens is None or self.runtime is None else arch_variant_names(
            system, self.tokens.accepted(self.runtime.major_minor(device.runtime_version)))
        return names + [f"torch-{alias}" for alias in self.noarch_aliases] + noarch_variant_names(self.name)

    @hookimpl
    def explain_variant(self, device: DeviceInfo, system: SystemInfo, variant: Variant) -> str | None:
        """The ``explain_variant`` hook: why an arch variant of this backend is refused."""
        if variant.token is None:
            return None
        if self.tokens is None or self.runtime is None:
            return f"the {self.name} backend loads no arch variants (token {variant.token}): {self.noarch_reason}"
        system_version = self.runtime.major_minor(device.runtime_version)
        reason = self.tokens.explain(variant, self.runtime.label, system_version)
        if reason is not None and system_version is None and self.runtime.advice:
            reason += f" ({self.runtime.advice})"
        return reason

    @hookimpl
    def load_kernel(self, device: DeviceInfo, load: KernelLoad) -> ModuleType | None:
        """The ``load_kernel`` hook: import the vendor first, then let the core import."""
        if not (self.vendor_optional and not _vendor.module_installed(self.vendor_module)):
            _vendor.import_vendor_for_kernel(self.vendor_module, device, load, hint=self.import_hint)
        return None

    @hookimpl
    def paired_torch(self) -> str | None:
        """The ``paired_torch`` hook: :attr:`built_for_torch` of the installed vendor version."""
        if self.built_for_torch is None or (version := _vendor.vendor_version(self.vendor_module)) is None:
            return None
        built = self.built_for_torch(version)
        return None if built is None else f"{self.vendor_module} {version} was built for torch {built}"

    @hookimpl
    def synchronize(self, device: DeviceInfo) -> bool:
        """The ``synchronize`` hook."""
        return _vendor.synchronize_device(device, accelerator_fallback=self.accelerator_sync)

    @hookimpl
    def emulate_device(self, count: int, facts: dict[str, Any]) -> bool | None:
        """The ``emulate_device`` hook: the test-only stand-ins, imported only now."""
        if self.emulation is None:
            return None
        from ..known_plugins import import_tool

        stand_ins = import_tool("kernel_plugins_testing.stand_ins", "kernel-plugins-testing", f"emulating {self.name}")
        return bool(stand_ins.install_declared(self, count, facts))
