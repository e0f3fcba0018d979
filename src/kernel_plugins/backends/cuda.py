"""The NVIDIA CUDA backend: ``cu<major><minor>`` arch variants and ``torch-cuda``.

Compatibility: the same CUDA major and any minor <= the system's (a 12.8 system
accepts cu128 ... cu120, newest first).
"""

from __future__ import annotations

from ..device import PyDepend
from ..variants import VariantTokens
from .torchinfo import TorchGpuBackend

#: The plugin object the plugin manager registers.
CUDA = TorchGpuBackend(
    name="cuda", device_type="cuda", display_name="NVIDIA CUDA", priority=100,
    version_attr="cuda", label="CUDA", tokens=VariantTokens(prefix="cu", major_width=2, rule="same-major"),
    driver_hint="check nvidia-smi and CUDA_VISIBLE_DEVICES",
    python_depends={"nvidia-cutlass-dsl": PyDepend("nvidia-cutlass-dsl", "cutlass")},
    capability_label="compute capability",
)
