"""kernel-plugins hooks of the AWS Neuron backend (entry point ``neuron``).

Targets TorchNeuron, the native PrivateUse1 backend named ``neuron`` (not the older
XLA stack, whose tensors live on device type ``xla``). Its ``torch.neuron.*`` names
are unverified, so detection asks PyTorch's generic APIs first (the PrivateUse1 name
and ``torch.accelerator``) and ``torch.neuron`` second. Neuron kernels are NKI code
compiled at run time: only noarch variants (``torch-neuron``, ``torch-universal``)
load, and ``python-depends = ["nki"]`` is known. The priority is above CUDA's because
the Neuron extension can be loaded into a CUDA build of torch.
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import TYPE_CHECKING, Any

from kernel_plugins.device import BackendSpec, DeviceInfo, PyDepend, SystemInfo
from kernel_plugins.errors import KernelImportError
from kernel_plugins.hookspecs import hookimpl
from kernel_plugins.variants import noarch_variant_names
from kernel_plugins.vendor import (
    import_vendor,
    module_installed,
    privateuse1_conflict,
    privateuse1_name,
    synchronize_device,
    torch_if_installed,
)

if TYPE_CHECKING:
    from kernel_plugins.importer import KernelLoad
    from kernel_plugins.variants import Variant

__all__ = [
    "NAME",
    "VENDOR",
    "backend_spec",
    "detect_device",
    "neuron_device_count",
    "list_variants",
    "explain_variant",
    "load_kernel",
    "synchronize",
    "emulate_device",
]

NAME = "neuron"
VENDOR = "torch_neuronx"

#: How to fix a ``torch_neuronx`` that is installed but fails to import.
_IMPORT_HINT = (
    "install the torch-neuronx release that matches torch (torch-neuronx 2.14.* for torch 2.14)"
)


def neuron_device_count(torch: ModuleType) -> int | None:
    """Neuron devices visible to PyTorch, or None when no native Neuron backend is present.

    Order (vendors.md): when PrivateUse1 is named ``neuron``, ``torch.accelerator``
    (when it reports ``neuron`` as the current accelerator), else ``torch.neuron``;
    otherwise ``torch.neuron`` when it exists.
    """
    module = getattr(torch, NAME, None)
    if privateuse1_name(torch) == NAME:
        accelerator = getattr(torch, "accelerator", None)
        if accelerator is not None and accelerator.is_available():
            current = accelerator.current_accelerator()
            if current is not None and current.type == NAME:
                return int(accelerator.device_count())
        if module is not None and hasattr(module, "device_count"):
            return int(module.device_count())
        return 0
    if module is not None:
        if hasattr(module, "is_available") and not module.is_available():
            return 0
        return int(module.device_count()) if hasattr(module, "device_count") else 0
    return None


def _device_name(torch: ModuleType) -> str | None:
    module = getattr(torch, NAME, None)
    get = getattr(module, "get_device_properties", None)
    if get is None:
        return None
    try:
        return str(get(0).name) or None
    except Exception:  # noqa: BLE001 - the attribute names are unverified; the name is optional
        return None


@hookimpl
def backend_spec() -> BackendSpec:
    """Declare the neuron backend."""
    return BackendSpec(
        name=NAME,
        device_type="neuron",
        display_name="AWS Neuron",
        priority=110,
        arch_tokens=(),
        python_depends={"nki": PyDepend("nki", "nki")},
        capability_label="capability (not reported by Neuron)",
    )


@hookimpl
def detect_device() -> DeviceInfo | None:
    """A native ``neuron`` PrivateUse1 backend with at least one device.

    When another out-of-tree backend already owns PrivateUse1 in this process, no native
    Neuron device can exist here: None, and ``torch_neuronx`` is not imported.
    """
    torch = torch_if_installed()
    if torch is None:
        return None
    if privateuse1_conflict(NAME, torch) is not None:
        return None  # another out-of-tree backend owns PrivateUse1: no native neuron here
    vendor = import_vendor(VENDOR, _IMPORT_HINT) if module_installed(VENDOR) else None
    count = neuron_device_count(torch)
    if not count:
        return None
    module = getattr(torch, NAME, None)
    ext = getattr(vendor, "__version__", None) if vendor is not None else None
    notes = () if vendor is not None else (
        f"{VENDOR} is not installed; the neuron device was found through PyTorch alone",
    )
    return DeviceInfo(
        backend=NAME,
        device_type="neuron",
        count=count,
        runtime_version=None,
        name=_device_name(torch),
        capability=None,
        extension_version=None if ext is None else str(ext),
        emulated=bool(getattr(module, "__kernel_plugins_emulated__", False)),
        notes=notes,
    )


@hookimpl
def list_variants(device: DeviceInfo, system: SystemInfo) -> list[str]:
    """Noarch only: ``torch-neuron``, then ``torch-universal``."""
    return noarch_variant_names(NAME)


@hookimpl
def explain_variant(device: DeviceInfo, system: SystemInfo, variant: Variant) -> str | None:
    """Every arch variant is refused: Neuron kernels ship as NKI source (noarch)."""
    if variant.token is None:
        return None
    return (
        f"the neuron backend loads no arch variants (token {variant.token}): Neuron kernels are "
        "NKI code compiled at run time and ship as the noarch variant torch-neuron"
    )


@hookimpl
def load_kernel(device: DeviceInfo, load: KernelLoad) -> ModuleType | None:
    """Import ``torch_neuronx`` first when it is installed (NKI kernels register with it)."""
    if module_installed(VENDOR):
        try:
            importlib.import_module(VENDOR)
        except Exception as e:  # noqa: BLE001
            raise KernelImportError(
                f"kernel {load.repo_id} ({load.variant}) for {device.torch_device}: {VENDOR} "
                f"failed to import ({type(e).__name__}: {e})"
            ) from e
    return None


@hookimpl
def synchronize(device: DeviceInfo) -> bool:
    """``torch.neuron.synchronize()`` when it exists, else ``torch.accelerator.synchronize()``."""
    return synchronize_device(device, accelerator_fallback=True)


@hookimpl
def emulate_device(count: int, facts: dict[str, Any]) -> bool:
    """Install the ``torch_neuronx`` stand-in (see :mod:`kernel_plugins_neuron.emulation`)."""
    from .emulation import install

    return install(count, facts)
