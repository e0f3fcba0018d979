"""The AMD ROCm backend: ``rocm<major><minor>`` arch variants (exact match) and ``torch-rocm``.

ROCm builds of torch use the torch device type ``cuda``; the backend name is ``rocm``.
"""

from __future__ import annotations

from ..device import BackendSpec, DeviceInfo, SystemInfo
from ..hookspecs import hookimpl
from ..variants import (
    Variant,
    arch_variant_names,
    explain_token_version,
    noarch_variant_names,
)
from .torchinfo import major_minor, no_device_reason, torch_or_none

NAME = "rocm"


class RocmBackend:
    """The rocm backend's hooks (registered like any plugin object)."""

    @hookimpl
    def backend_spec(self) -> BackendSpec:
        """Declare the rocm backend (device type ``cuda``)."""
        return BackendSpec(
            name=NAME, device_type="cuda", display_name="AMD ROCm", priority=100, arch_tokens=("rocm",)
        )

    @hookimpl
    def detect_device(self) -> DeviceInfo | None:
        """A HIP build of torch with at least one visible GPU."""
        torch = torch_or_none()
        if torch is None or getattr(torch.version, "hip", None) is None:
            return None
        if not torch.cuda.is_available() or torch.cuda.device_count() == 0:
            return None
        return DeviceInfo(
            backend=NAME,
            device_type="cuda",
            count=torch.cuda.device_count(),
            runtime_version=torch.version.hip,
            name=torch.cuda.get_device_name(0),
            capability=tuple(torch.cuda.get_device_capability(0)),
            extension_version=str(torch.__version__),
        )

    @hookimpl
    def explain_no_device(self) -> str:
        """No torch, a torch build without ROCm, or a driver that sees no device."""
        return no_device_reason("hip", "ROCm", "check rocm-smi and HIP_VISIBLE_DEVICES")

    @hookimpl
    def list_variants(self, device: DeviceInfo, system: SystemInfo) -> list[str]:
        """Arch variants for exactly the runtime's ROCm major.minor, then noarch."""
        v = major_minor(device.runtime_version)
        tokens = [f"rocm{v[0]}{v[1]}"] if v else []
        return arch_variant_names(system, tokens) + noarch_variant_names(NAME)

    @hookimpl
    def explain_variant(self, device: DeviceInfo, system: SystemInfo, variant: Variant) -> str | None:
        """``ROCm 6.2 does not match the system's ROCm 6.3 (an exact match is required)``."""
        return explain_token_version(
            variant, "rocm", "ROCm", major_minor(device.runtime_version), "exact", major_width=1
        )

    @hookimpl
    def synchronize(self, device: DeviceInfo) -> bool:
        """``torch.cuda.synchronize`` (HIP)."""
        import torch

        torch.cuda.synchronize(device.index)
        return True


#: The plugin object the plugin manager registers.
ROCM = RocmBackend()
