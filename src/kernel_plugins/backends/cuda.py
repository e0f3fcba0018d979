"""The NVIDIA CUDA backend: ``cu<major><minor>`` arch variants and ``torch-cuda``.

Compatibility: the same CUDA major and any minor <= the system's (a 12.8 system
accepts cu128 ... cu120, newest first).
"""

from __future__ import annotations

from ..device import BackendSpec, DeviceInfo, PyDepend, SystemInfo
from ..hookspecs import hookimpl
from ..variants import (
    Variant,
    arch_variant_names,
    explain_token_version,
    noarch_variant_names,
)
from .torchinfo import major_minor, no_device_reason, torch_or_none

NAME = "cuda"


def cuda_tokens(version: tuple[int, int]) -> list[str]:
    """Tokens a CUDA ``version`` accepts, newest first: (12, 8) -> cu128 ... cu120."""
    major, minor = version
    return [f"cu{major}{m}" for m in range(minor, -1, -1)]


class CudaBackend:
    """The cuda backend's hooks (registered like any plugin object)."""

    @hookimpl
    def backend_spec(self) -> BackendSpec:
        """Declare the cuda backend."""
        return BackendSpec(
            name=NAME,
            device_type="cuda",
            display_name="NVIDIA CUDA",
            priority=100,
            arch_tokens=("cu",),
            python_depends={"nvidia-cutlass-dsl": PyDepend("nvidia-cutlass-dsl", "cutlass")},
            capability_label="compute capability",
        )

    @hookimpl
    def detect_device(self) -> DeviceInfo | None:
        """A CUDA build of torch with at least one visible GPU."""
        torch = torch_or_none()
        if torch is None or getattr(torch.version, "cuda", None) is None:
            return None
        if not torch.cuda.is_available():
            return None
        count = torch.cuda.device_count()
        if count == 0:
            return None
        return DeviceInfo(
            backend=NAME,
            device_type="cuda",
            count=count,
            runtime_version=torch.version.cuda,
            name=torch.cuda.get_device_name(0),
            capability=tuple(torch.cuda.get_device_capability(0)),
            extension_version=str(torch.__version__),
        )

    @hookimpl
    def explain_no_device(self) -> str:
        """No torch, a torch build without CUDA, or a driver that sees no device."""
        return no_device_reason("cuda", "CUDA", "check nvidia-smi and CUDA_VISIBLE_DEVICES")

    @hookimpl
    def list_variants(self, device: DeviceInfo, system: SystemInfo) -> list[str]:
        """Arch variants for CUDA minors <= the runtime's (same major), then noarch."""
        version = major_minor(device.runtime_version)
        tokens = cuda_tokens(version) if version else []
        return arch_variant_names(system, tokens) + noarch_variant_names(NAME)

    @hookimpl
    def explain_variant(self, device: DeviceInfo, system: SystemInfo, variant: Variant) -> str | None:
        """``CUDA 13.0 is newer than the system's CUDA 12.8`` and friends."""
        return explain_token_version(
            variant, "cu", "CUDA", major_minor(device.runtime_version), "same-major", major_width=2
        )

    @hookimpl
    def synchronize(self, device: DeviceInfo) -> bool:
        """``torch.cuda.synchronize``."""
        import torch

        torch.cuda.synchronize(device.index)
        return True


#: The plugin object the plugin manager registers.
CUDA = CudaBackend()
