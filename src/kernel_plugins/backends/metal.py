"""The Apple Metal backend (device type ``mps``): ``metal`` arch variants on macOS >= 26.

Noarch name ``torch-metal``. Arch variants are accepted only on macOS 26 or newer.
"""

from __future__ import annotations

from ..device import BackendSpec, DeviceInfo, SystemInfo, no_torch_reason
from ..hookspecs import hookimpl
from ..variants import Variant, arch_variant_names, noarch_variant_names
from .torchinfo import torch_or_none

NAME = "metal"
MIN_MACOS = (26, 0)


class MetalBackend:
    """The metal backend's hooks (registered like any plugin object)."""

    @hookimpl
    def backend_spec(self) -> BackendSpec:
        """Declare the metal backend (device type ``mps``)."""
        return BackendSpec(name=NAME, device_type="mps", display_name="Apple Metal", priority=80,
                           arch_tokens=("metal",))

    @hookimpl
    def detect_device(self) -> DeviceInfo | None:
        """``torch.backends.mps.is_available()``."""
        torch = torch_or_none()
        if torch is None or not torch.backends.mps.is_available():
            return None
        return DeviceInfo(backend=NAME, device_type="mps", count=1, name="Apple GPU",
                          extension_version=str(torch.__version__))

    @hookimpl
    def explain_no_device(self) -> str:
        """No torch, a torch without MPS, or MPS built but not available here."""
        torch = torch_or_none()
        if torch is None:
            return no_torch_reason()
        if not torch.backends.mps.is_built():
            return f"the installed torch {torch.__version__} is built without MPS (Metal needs macOS)"
        return "MPS is built but not available (it needs macOS 12.3 or later on a Metal GPU)"

    @hookimpl
    def list_variants(self, device: DeviceInfo, system: SystemInfo) -> list[str]:
        """``metal`` arch variants when macOS >= 26, then ``torch-metal``."""
        macos = system.macos_version
        arch = arch_variant_names(system, ["metal"]) if macos is not None and macos >= MIN_MACOS else []
        return arch + noarch_variant_names(NAME)

    @hookimpl
    def explain_variant(self, device: DeviceInfo, system: SystemInfo, variant: Variant) -> str | None:
        """``Metal arch variants need macOS >= 26.0, the system has macOS 15.2``."""
        macos = system.macos_version
        if variant.token != "metal" or (macos is not None and macos >= MIN_MACOS):
            return None
        have = "no macOS" if macos is None else "macOS {}.{}".format(*macos)
        return f"Metal arch variants need macOS >= {MIN_MACOS[0]}.{MIN_MACOS[1]}, the system has {have}"

    @hookimpl
    def synchronize(self, device: DeviceInfo) -> bool:
        """``torch.mps.synchronize``."""
        import torch

        torch.mps.synchronize()
        return True


#: The plugin object the plugin manager registers.
METAL = MetalBackend()
