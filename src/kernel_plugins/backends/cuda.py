"""The NVIDIA CUDA backend: ``cu<major><minor>`` arch variants and ``torch-cuda``.

Compatibility: the same CUDA major and any minor <= the system's (a 12.8 system
accepts cu128 ... cu120, newest first). ``backend.archs`` entries are compute
capabilities, judged as HF ``kernels`` 0.17.2 does (:func:`runs_cuda_arch`).
"""

from __future__ import annotations

import re

from ..device import DeviceInfo, PyDepend
from ..variants import VariantTokens
from .torchinfo import TorchGpuBackend

_ARCH_RE = re.compile(r"([0-9]+)\.([0-9]+)([af]?)(\+PTX)?")


def runs_cuda_arch(device: DeviceInfo, arch: str) -> bool | None:
    """Whether the device runs code for ``arch`` (None: unreadable): ``X.Y`` and ``X.Yf``
    on the same major with a minor >= Y, ``X.Ya`` only on X.Y, ``X.Y+PTX`` on X.Y and later."""
    m = _ARCH_RE.fullmatch(arch)
    if m is None or device.capability is None:
        return None
    built, cap = (int(m[1]), int(m[2])), device.capability
    family = cap[0] == built[0] and cap[1] >= built[1]
    return cap == built if m[3] == "a" else family if m[3] == "f" or not m[4] else cap >= built


#: The plugin object the plugin manager registers.
CUDA = TorchGpuBackend(
    name="cuda", device_type="cuda", display_name="NVIDIA CUDA", priority=100,
    version_attr="cuda", label="CUDA", tokens=VariantTokens(prefix="cu", major_width=2, rule="same-major"),
    driver_hint="check nvidia-smi and CUDA_VISIBLE_DEVICES",
    python_depends={"nvidia-cutlass-dsl": PyDepend("nvidia-cutlass-dsl", "cutlass")},
    capability_label="compute capability", arch_runs=runs_cuda_arch,
)
