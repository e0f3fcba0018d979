"""The Intel XPU backend: ``xpu<year><release>`` arch variants (exact match) and ``torch-xpu``.

``torch.version.xpu`` such as ``"20250300"`` is oneAPI 2025.3, token ``xpu20253``.
"""

from __future__ import annotations

import re

from ..device import BackendSpec, DeviceInfo, SystemInfo
from ..hookspecs import hookimpl
from ..variants import (
    Variant,
    arch_variant_names,
    explain_token_version,
    noarch_variant_names,
)
from .torchinfo import no_device_reason, torch_or_none

NAME = "xpu"


def oneapi_version(text: str | None) -> tuple[int, int] | None:
    """``"20250300"`` -> ``(2025, 3)``; None when unparsable."""
    if not text:
        return None
    m = re.match(r"^(\d{4})(\d{2})(\d{2})$", text.strip())
    return (int(m.group(1)), int(m.group(2))) if m else None


class XpuBackend:
    """The xpu backend's hooks (registered like any plugin object)."""

    @hookimpl
    def backend_spec(self) -> BackendSpec:
        """Declare the xpu backend."""
        return BackendSpec(
            name=NAME, device_type="xpu", display_name="Intel XPU", priority=90, arch_tokens=("xpu",)
        )

    @hookimpl
    def detect_device(self) -> DeviceInfo | None:
        """A torch build with XPU support and at least one device."""
        torch = torch_or_none()
        if torch is None or getattr(torch.version, "xpu", None) is None:
            return None
        xpu = getattr(torch, "xpu", None)
        if xpu is None or not xpu.is_available() or xpu.device_count() == 0:
            return None
        notes = () if oneapi_version(torch.version.xpu) else (
            f"unparsable torch.version.xpu {torch.version.xpu!r}",
        )
        return DeviceInfo(
            backend=NAME,
            device_type="xpu",
            count=xpu.device_count(),
            runtime_version=str(torch.version.xpu),
            name=xpu.get_device_name(0),
            extension_version=str(torch.__version__),
            notes=notes,
        )

    @hookimpl
    def explain_no_device(self) -> str:
        """No torch, a torch build without XPU, or a driver that sees no device."""
        return no_device_reason("xpu", "XPU", "check the Intel GPU driver and ZE_AFFINITY_MASK")

    @hookimpl
    def list_variants(self, device: DeviceInfo, system: SystemInfo) -> list[str]:
        """Arch variants for exactly the runtime's oneAPI release, then noarch."""
        v = oneapi_version(device.runtime_version)
        tokens = [f"xpu{v[0]}{v[1]}"] if v else []
        return arch_variant_names(system, tokens) + noarch_variant_names(NAME)

    @hookimpl
    def explain_variant(self, device: DeviceInfo, system: SystemInfo, variant: Variant) -> str | None:
        """``oneAPI 2025.2 does not match the system's oneAPI 2025.3 (...)``."""
        return explain_token_version(
            variant, "xpu", "oneAPI", oneapi_version(device.runtime_version), "exact", major_width=4
        )

    @hookimpl
    def synchronize(self, device: DeviceInfo) -> bool:
        """``torch.xpu.synchronize``."""
        import torch

        torch.xpu.synchronize(device.index)
        return True


#: The plugin object the plugin manager registers.
XPU = XpuBackend()
