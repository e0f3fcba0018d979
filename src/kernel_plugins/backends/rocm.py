"""The AMD ROCm backend: ``rocm<major><minor>`` (``rocm-X.Y``) arch variants and ``torch-rocm``.

As kernels 0.19.1: a build's ROCm must have the system's major and a minor at or below its;
the system's is ``torch.version.rocm`` (torch >= 2.10), else ``torch.version.hip``.

ROCm builds of torch use the torch device type ``cuda``; the backend name is ``rocm``. The
device's architecture is its ``gcnArchName`` without feature flags (``gfx90a:xnack-`` is
``gfx90a``); a build runs when its ``backend.archs`` lists that name.
"""

from __future__ import annotations

from ..device import DeviceInfo
from ..variants import VariantTokens
from .torchinfo import TorchGpuBackend


def gfx_name(text: object) -> str | None:
    """``gfx90a:sramecc+:xnack-`` -> ``gfx90a``; None for anything that is not a gfx name."""
    name = text.split(":")[0].strip().lower() if isinstance(text, str) else ""
    return name if name.startswith("gfx") and name[3:].isalnum() and name.isascii() else None


def runs_rocm_arch(device: DeviceInfo, arch: str) -> bool | None:
    """Whether ``arch`` (flags ignored) is the device's gfx name; None: not a gfx name."""
    return None if (name := gfx_name(arch)) is None or device.arch is None else name == device.arch


#: The plugin object the plugin manager registers.
ROCM = TorchGpuBackend(
    name="rocm", device_type="cuda", display_name="AMD ROCm", priority=100,
    version_attr="hip", runtime_attr="rocm", label="ROCm",
    tokens=VariantTokens(prefix="rocm", rule="same-major"),
    driver_hint="check rocm-smi and HIP_VISIBLE_DEVICES", arch_runs=runs_rocm_arch,
    read_arch=lambda cuda, i=0: gfx_name(getattr(cuda.get_device_properties(i), "gcnArchName", None)),
)
