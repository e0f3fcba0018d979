"""The Intel XPU backend: ``xpu<year><release>`` arch variants (exact match) and ``torch-xpu``.

``torch.version.xpu`` such as ``"20250300"`` is oneAPI 2025.3, token ``xpu20253``.
"""

from __future__ import annotations

import re

from ..variants import VariantTokens
from .torchinfo import TorchGpuBackend


def oneapi_version(text: str | None) -> tuple[int, int] | None:
    """``"20250300"`` -> ``(2025, 3)``; None when unparsable."""
    if not text:
        return None
    m = re.match(r"^(\d{4})(\d{2})(\d{2})$", text.strip())
    return (int(m.group(1)), int(m.group(2))) if m else None


#: The plugin object the plugin manager registers.
XPU = TorchGpuBackend(
    name="xpu", device_type="xpu", display_name="Intel XPU", priority=90,
    version_attr="xpu", label="oneAPI", tokens=VariantTokens(prefix="xpu", major_width=4),
    parse=oneapi_version, capability=False, stack="XPU",
    driver_hint="check the Intel GPU driver and ZE_AFFINITY_MASK",
)
