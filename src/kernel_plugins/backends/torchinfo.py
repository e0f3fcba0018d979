"""What the built-in backends share: torch helpers (torch imported only when installed),
and :class:`TorchGpuBackend`, the hooks of a stack built into torch, stated as facts."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from .._record import field, record
from ..device import (
    BackendSpec,
    DeviceInfo,
    PyDepend,
    SystemInfo,
    major_minor,
    no_torch_reason,
    torch_or_none,
)
from ..hookspecs import hookimpl
from ..variants import Variant, VariantTokens, arch_variant_names, judge_archs, noarch_variant_names

__all__ = ["torch_or_none", "major_minor", "torch_version_string", "ArchFacts", "TorchGpuBackend"]


def torch_version_string() -> str | None:
    """The installed torch version, or None."""
    torch = torch_or_none()
    return None if torch is None else str(torch.__version__)


@record(kw_only=True, eq=False)
class ArchFacts:
    """How a backend names its devices' architectures and judges a build's ``backend.archs``.

    Attributes:
        read_arch: ``(torch.<device_type>, index)`` (the kit: a ``VendorDevices``) -> ``DeviceInfo.arch``.
        arch_runs: ``(device, an entry of backend.archs)`` -> whether the device runs code
            built for it (None: an entry it cannot read); None: architectures unchecked.
    """

    read_arch: Callable[..., str | None] | None = None
    arch_runs: Callable[[DeviceInfo, str], bool | None] | None = None

    @hookimpl
    def check_arch(self, device: DeviceInfo, archs: tuple[str, ...]) -> bool | None:
        """The ``check_arch`` hook: each entry judged by :attr:`arch_runs` (None without it)."""
        runs = self.arch_runs
        return None if runs is None else judge_archs(archs, lambda a: runs(device, a))


@record(eq=False)  # a plugin object: hashed by identity
class TorchGpuBackend(ArchFacts):
    """A backend whose stack is built into torch (CUDA, ROCm, XPU), stated as facts; the
    hooks are the methods below (an instance is registered like any plugin object).

    Attributes:
        name, device_type, display_name, priority: as in :class:`BackendSpec`.
        version_attr: the ``torch.version`` attribute a build for the stack sets.
        label: the stack's name in messages (``"CUDA"``).
        tokens: the arch-token form and how its version must match the runtime's.
        parse: reads ``torch.version.<version_attr>``. ``torch.<device_type>`` counts the
            devices and synchronizes.
        driver_hint: how to check the driver when it sees no device.
        capability: whether ``torch.<device_type>`` reports a device capability.
        stack: the torch build's name when it is not :attr:`label` (``"XPU"``).
        runtime_attr: a ``torch.version`` attribute read before :attr:`version_attr` for the
            runtime version, when it is set (ROCm: ``rocm``, since torch 2.10).
        read_arch, arch_runs: see :class:`ArchFacts` (``read_arch`` reads ``torch.<device_type>``).
    """

    name: str
    device_type: str
    display_name: str
    priority: int
    version_attr: str
    label: str
    tokens: VariantTokens
    driver_hint: str
    parse: Callable[[str | None], tuple[int, int] | None] = major_minor
    capability: bool = True
    stack: str | None = None
    python_depends: Mapping[str, PyDepend] = field(default_factory=dict)
    capability_label: str = "capability"
    runtime_attr: str | None = None

    @hookimpl
    def backend_spec(self) -> BackendSpec:
        """Declare the backend."""
        return BackendSpec(self.name, self.device_type, self.display_name, self.priority,
                           (self.tokens.prefix,), dict(self.python_depends), self.capability_label)

    @hookimpl
    def detect_device(self, index: int | None = None) -> DeviceInfo | None:
        """A torch build for the stack with at least one visible device; the facts of device ``index`` (None: 0)."""
        torch = torch_or_none()
        version = None if torch is None else getattr(torch.version, self.version_attr, None)
        module = None if torch is None or version is None else getattr(torch, self.device_type, None)
        if torch is None or module is None or not module.is_available() or module.device_count() == 0:
            return None
        version, i = str(getattr(torch.version, self.runtime_attr or "-", None) or version), index or 0
        notes = () if self.parse(version) else (f"unparsable torch.version.{self.version_attr} {version!r}",)
        return DeviceInfo(
            backend=self.name, device_type=self.device_type, count=module.device_count(),
            runtime_version=version, name=module.get_device_name(i), index=index,
            capability=tuple(module.get_device_capability(i)) if self.capability else None,
            extension_version=str(torch.__version__), notes=notes,
            arch=None if self.read_arch is None else self.read_arch(module, i),
        )

    @hookimpl
    def explain_no_device(self) -> str:
        """No torch, a torch build without the stack, or a driver that sees no device."""
        torch, stack = torch_or_none(), self.stack or self.label
        if torch is None:
            return no_torch_reason()
        if getattr(torch.version, self.version_attr, None) is None:
            kind = "CPU-only" if "+cpu" in str(torch.__version__) else f"not a {stack}"
            return (f"the installed torch {torch.__version__} is a {kind} build (torch.version."
                    f"{self.version_attr} is None); install a torch build for {stack}")
        return f"the {stack} driver sees 0 devices ({self.driver_hint})"

    @hookimpl
    def list_variants(self, device: DeviceInfo, system: SystemInfo) -> list[str]:
        """Arch variants for the runtime's version (:attr:`tokens`), then noarch."""
        tokens = self.tokens.accepted(self.parse(device.runtime_version))
        return arch_variant_names(system, tokens) + noarch_variant_names(self.name)

    @hookimpl
    def explain_variant(self, device: DeviceInfo, system: SystemInfo, variant: Variant) -> str | None:
        """``CUDA 13.0 is newer than the system's CUDA 12.8`` and friends."""
        return self.tokens.explain(variant, self.label, self.parse(device.runtime_version))

    @hookimpl
    def synchronize(self, device: DeviceInfo) -> bool:
        """``torch.<device_type>.synchronize``."""
        import torch

        getattr(torch, self.device_type).synchronize(device.index)
        return True
