"""The CPU backend (always available): ``torch-cpu`` and ``cpu`` arch variants."""

from __future__ import annotations

import platform

from ..device import BackendSpec, DeviceInfo, SystemInfo
from ..hookspecs import hookimpl
from ..variants import arch_variant_names, noarch_variant_names
from .torchinfo import torch_version_string

NAME = "cpu"


class CpuBackend:
    """The cpu backend's hooks (registered like any plugin object)."""

    @hookimpl
    def backend_spec(self) -> BackendSpec:
        """Declare the cpu backend (lowest priority: used when no accelerator is present)."""
        return BackendSpec(name=NAME, device_type="cpu", display_name="CPU", priority=0, arch_tokens=("cpu",))

    @hookimpl
    def detect_device(self) -> DeviceInfo:
        """The CPU is always present. Named by ``platform.machine()``: ``platform.processor()``
        starts a subprocess (``uname -p``) on Linux and macOS, a fork of a process holding torch."""
        return DeviceInfo(backend=NAME, device_type="cpu", count=1, extension_version=torch_version_string(),
                          name=platform.machine() or None)

    @hookimpl
    def list_variants(self, device: DeviceInfo, system: SystemInfo) -> list[str]:
        """``cpu`` arch variants for this system, then ``torch-cpu`` and ``torch-universal``."""
        return arch_variant_names(system, ["cpu"]) + noarch_variant_names(NAME)

    @hookimpl
    def synchronize(self, device: DeviceInfo) -> bool:
        """CPU work is synchronous."""
        return True


#: The plugin object the plugin manager registers.
CPU = CpuBackend()
