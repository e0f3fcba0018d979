"""The AMD ROCm backend: ``rocm<major><minor>`` arch variants (exact match) and ``torch-rocm``.

ROCm builds of torch use the torch device type ``cuda``; the backend name is ``rocm``.
"""

from __future__ import annotations

from ..variants import VariantTokens
from .torchinfo import TorchGpuBackend

#: The plugin object the plugin manager registers.
ROCM = TorchGpuBackend(
    name="rocm", device_type="cuda", display_name="AMD ROCm", priority=100,
    version_attr="hip", label="ROCm", tokens=VariantTokens(prefix="rocm"),
    driver_hint="check rocm-smi and HIP_VISIBLE_DEVICES",
)
