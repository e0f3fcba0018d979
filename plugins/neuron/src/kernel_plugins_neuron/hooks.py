"""The AWS Neuron backend: the plugin object :data:`NEURON` (entry point ``neuron``).

Targets TorchNeuron, the native PrivateUse1 backend named ``neuron`` (not the older
XLA stack, whose tensors live on device type ``xla``). Its ``torch.neuron.*`` names
are unverified, so detection (the ``detect_device`` method of :class:`NeuronBackend`;
the other hooks come from :class:`~kernel_plugins.plugin_kit.PrivateUse1Backend`)
asks PyTorch's generic APIs first (the PrivateUse1 name and ``torch.accelerator``) and
``torch.neuron`` second.
Neuron kernels are NKI code compiled at run time: only noarch variants
(``torch-neuron``, ``torch-universal``) load, and ``python-depends = ["nki"]`` is
known. The priority is above CUDA's because the Neuron extension can be loaded into a
CUDA build of torch. The device's architecture is the Neuron compiler's target of its
generation (``trn2`` for a Trainium2, :func:`neuron_target`), judged against a build's
``backend.archs`` by :func:`runs_neuron_arch`. See docs/vendors.md.
"""

from __future__ import annotations

import re
from types import ModuleType

from kernel_plugins.plugin_kit import (
    DeviceInfo,
    Emulation,
    PrivateUse1Backend,
    PyDepend,
    hookimpl,
    import_vendor,
    module_installed,
    privateuse1_conflict,
    privateuse1_name,
    torch_if_installed,
)


def neuron_device_count(torch: ModuleType) -> int | None:
    """Neuron devices visible to PyTorch, or None when no native Neuron backend is present.

    Order: when PrivateUse1 is named ``neuron``, ``torch.accelerator`` (when it reports
    ``neuron`` as the current accelerator), else ``torch.neuron``; otherwise
    ``torch.neuron`` when it exists.
    """
    module = getattr(torch, "neuron", None)
    if privateuse1_name(torch) == "neuron":
        accelerator = getattr(torch, "accelerator", None)
        if accelerator is not None and accelerator.is_available():
            current = accelerator.current_accelerator()
            if current is not None and current.type == "neuron":
                return int(accelerator.device_count())
        if module is not None and hasattr(module, "device_count"):
            return int(module.device_count())
        return 0
    if module is not None:
        if hasattr(module, "is_available") and not module.is_available():
            return 0
        return int(module.device_count()) if hasattr(module, "device_count") else 0
    return None


_TARGET_RE = re.compile(r"(trn|inf)[0-9]+")
_GENERATIONS = {"trainium": "trn", "inferentia": "inf"}


def neuron_target(device_name: str | None) -> str | None:
    """``"Trainium2"`` -> ``"trn2"``, ``"Trainium"`` -> ``"trn1"``, ``"Inferentia2"`` ->
    ``"inf2"``; None for another name (the device names are unverified)."""
    m = re.fullmatch(r"(trainium|inferentia)([0-9]*)", (device_name or "").strip().lower())
    return None if m is None else f"{_GENERATIONS[m[1]]}{m[2] or 1}"


def runs_neuron_arch(device: DeviceInfo, arch: str) -> bool | None:
    """Whether ``arch`` (a compiler target: ``trn1``, ``trn2``, ``inf2``) is the device's;
    None: not a target name, or the device's generation is unknown."""
    name = arch.strip().lower()
    return None if device.arch is None or not _TARGET_RE.fullmatch(name) else name == device.arch


def _device_name(module: object, index: int = 0) -> str | None:
    get = getattr(module, "get_device_properties", None)
    if get is None:
        return None
    try:
        return str(get(index).name) or None
    except Exception:  # noqa: BLE001 - the attribute names are unverified; the name is optional
        return None


class NeuronBackend(PrivateUse1Backend):
    """The Neuron backend: the PrivateUse1 facts, with its own ``detect_device``."""

    @hookimpl
    def detect_device(self, index: int | None = None) -> DeviceInfo | None:
        """A native ``neuron`` PrivateUse1 backend with at least one device; device ``index``'s
        name (None: 0's).

        When another out-of-tree backend already owns PrivateUse1 in this process, no native
        Neuron device can exist here: None, and ``torch_neuronx`` is not imported.
        """
        torch = torch_if_installed()
        if torch is None or privateuse1_conflict(self.name, torch) is not None:
            return None
        vendor_module = self.vendor_module
        vendor = None
        if module_installed(vendor_module):
            vendor = import_vendor(vendor_module, self.import_hint)
        count = neuron_device_count(torch)
        if not count:
            return None
        module = getattr(torch, self.name, None)
        name = _device_name(module, index or 0)
        ext = getattr(vendor, "__version__", None) if vendor is not None else None
        notes = () if vendor is not None else (
            f"{vendor_module} is not installed; the neuron device was found through PyTorch alone",
        )
        return DeviceInfo(
            backend=self.name,
            device_type=self.dtype,
            count=count,
            name=name, index=index,
            arch=neuron_target(name),
            extension_version=None if ext is None else str(ext),
            emulated=bool(getattr(module, "__kernel_plugins_emulated__", False)),
            notes=notes,
        )


NEURON = NeuronBackend(
    name="neuron",
    display_name="AWS Neuron",
    vendor_module="torch_neuronx",
    import_hint=(
        "install the torch-neuronx release that matches torch (torch-neuronx 2.14.* for torch 2.14)"
    ),
    priority=110,
    capability_label="capability (not reported by Neuron)",
    python_depends={"nki": PyDepend("nki", "nki")},
    accelerator_sync=True,
    vendor_optional=True,
    arch_runs=runs_neuron_arch,
    noarch_reason=(
        "Neuron kernels are NKI code compiled at run time and ship as the noarch variant "
        "torch-neuron"
    ),
    # The native backend's PrivateUse1 device and a torch_neuronx with __version__. The
    # torch.neuron.* names are unverified, so nothing vendor-specific is added; nki is
    # NOT emulated (a kernel needing it fails as on a machine without it).
    emulation=Emulation(
        facts={
            "device_name": "Trainium2",
            "total_memory": 96 << 30,
            "multi_processor_count": 8,
            "version": None,
        },
        version="{torch_minor}.0",
        absent={"capability": "Neuron devices report no compute capability"},
    ),
)


