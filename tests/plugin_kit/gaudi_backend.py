"""A backend for a device type PyTorch itself knows (Intel Gaudi, ``hpu``), written as
docs/writing-a-backend.md says for an in-tree name: its own hooks, no PrivateUse1Backend.
Used by tests/plugin_kit/test_in_tree_backend.py; importing it imports neither torch nor the
vendor package (``habana_frameworks``)."""

from __future__ import annotations

import importlib
import importlib.util
import sys
from typing import Any

from kernel_plugins.device import BackendSpec, DeviceInfo, SystemInfo
from kernel_plugins.hookspecs import hookimpl
from kernel_plugins.variants import Variant, noarch_variant_names

VENDOR = "habana_frameworks"


class Gaudi:
    """The plugin object: each ``@hookimpl`` method is one hook."""

    def __init__(self, name: str = "hpu") -> None:
        self.name = name  # the device type; another name makes the out-of-tree twin of this backend

    @hookimpl
    def backend_spec(self) -> BackendSpec:
        """Name, device type and display name; no arch tokens (noarch variants only)."""
        return BackendSpec(name=self.name, device_type=self.name, display_name="Intel Gaudi", priority=90)

    @hookimpl
    def detect_device(self, index: int | None = None) -> DeviceInfo | None:
        """The bridge installed, ``torch.hpu`` present with devices: device ``index``'s facts."""
        if VENDOR not in sys.modules and importlib.util.find_spec(VENDOR) is None:
            return None  # nothing installed: not even torch is imported
        importlib.import_module(VENDOR)  # registers torch.hpu
        module: Any = getattr(sys.modules.get("torch"), self.name, None)
        if module is None or not module.is_available():
            return None
        props = module.get_device_properties(index or 0)
        major, minor = getattr(props, "major", None), getattr(props, "minor", None)
        return DeviceInfo(backend=self.name, device_type=self.name, count=module.device_count(),
                          name=getattr(props, "name", None), index=index,
                          capability=(major, minor) if isinstance(major, int) and isinstance(minor, int) else None)

    @hookimpl
    def explain_no_device(self) -> str | None:
        """Why there is no device."""
        return f"{VENDOR} (the Intel Gaudi bridge) is not installed, or it sees no device"

    @hookimpl
    def list_variants(self, device: DeviceInfo, system: SystemInfo) -> list[str]:
        """``torch-hpu``, then ``torch-universal``."""
        return noarch_variant_names(self.name)

    @hookimpl
    def explain_variant(self, device: DeviceInfo, system: SystemInfo, variant: Variant) -> str | None:
        """Nothing to say: other backends' variants are refused by the core."""
        return None
