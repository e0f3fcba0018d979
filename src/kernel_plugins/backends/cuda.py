"""The NVIDIA CUDA backend: ``cu<major><minor>`` arch variants and ``torch-cuda``.

Compatibility: the same CUDA major and any minor <= the system's (a 12.8 system
accepts cu128 ... cu120, newest first).
"""

from __future__ import annotations

from ..device import PyDepend
from .torchinfo import TorchGpuBackend


def cuda_tokens(version: tuple[int, int]) -> list[str]:
    """Tokens a CUDA ``version`` accepts, newest first: (12, 8) -> cu128 ... cu120."""
    major, minor = version
    return [f"cu{major}{m}" for m in range(minor, -1, -1)]


#: The plugin object the plugin manager registers.
CUDA = TorchGpuBackend(
    name="cuda", device_type="cuda", display_name="NVIDIA CUDA", priority=100,
    version_attr="cuda", module="cuda", label="CUDA", prefix="cu", rule="same-major",
    major_width=2, tokens=cuda_tokens, driver_hint="check nvidia-smi and CUDA_VISIBLE_DEVICES",
    python_depends={"nvidia-cutlass-dsl": PyDepend("nvidia-cutlass-dsl", "cutlass")},
    capability_label="compute capability",
)
