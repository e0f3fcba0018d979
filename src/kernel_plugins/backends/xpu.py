"""The Intel XPU backend: ``xpu<year><release>`` arch variants (exact match) and ``torch-xpu``.

``torch.version.xpu`` such as ``"20250300"`` is oneAPI 2025.3, token ``xpu20253``. The
device's architecture is the ahead-of-time target of its product id (``pvc``, ``bmg``);
a build runs when its ``backend.archs`` lists that target.
"""

from __future__ import annotations

import re

from ..device import DeviceInfo, PyDepend
from ..variants import VariantTokens
from .torchinfo import TorchGpuBackend

#: Product ids -> AOT target, as ``torch.testing._internal.common_xpu`` lists them.
TARGETS = {**dict.fromkeys((0x0BD0, *range(0x0BD4, 0x0BDC), 0x0B69, 0x0B6E), "pvc"), **dict.fromkeys(
    (0xE202, 0xE20B, 0xE20C, 0xE20D, 0xE210, 0xE211, 0xE212, 0xE215, 0xE216, *range(0xE220, 0xE224)), "bmg")}


def oneapi_version(text: str | None) -> tuple[int, int] | None:
    """``"20250300"`` -> ``(2025, 3)``; None when unparsable."""
    m = re.match(r"^(\d{4})(\d{2})(\d{2})$", text.strip()) if text else None
    return (int(m.group(1)), int(m.group(2))) if m else None


def runs_xpu_arch(device: DeviceInfo, arch: str) -> bool | None:
    """Whether ``arch`` is the device's AOT target; None: not a target name, or unknown."""
    name = arch.strip().lower()
    if device.arch is None or not re.fullmatch(r"[a-z][a-z0-9_.-]*", name):
        return None
    return name == device.arch


#: The plugin object the plugin manager registers.
XPU = TorchGpuBackend(
    name="xpu", device_type="xpu", display_name="Intel XPU", priority=90,
    version_attr="xpu", label="oneAPI", tokens=VariantTokens(prefix="xpu", major_width=4),
    parse=oneapi_version, capability=False, stack="XPU",
    driver_hint="check the Intel GPU driver and ZE_AFFINITY_MASK", arch_runs=runs_xpu_arch,
    read_arch=lambda xpu, i=0: TARGETS.get(getattr(xpu.get_device_properties(i), "device_id", None)),
    python_depends={"onednn": PyDepend("onednn-devel", None)},  # a native library: no import
)
