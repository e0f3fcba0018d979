"""Process-wide record of emulated device types (no torch import).

:func:`kernel_plugins_testing.emulate` records a device type here; the plugin
manager marks every :class:`~kernel_plugins.device.DeviceInfo` of a recorded type as
``emulated=True``, so an emulated device is never reported as real hardware, whatever
the backend plugin itself says.
"""

from __future__ import annotations

__all__ = ["IN_TREE_DEVICE_TYPES", "mark_emulated", "emulated_count", "is_emulated", "in_tree_reason"]

#: The device types PyTorch itself knows (those ``torch.device`` accepts besides a renamed PrivateUse1).
IN_TREE_DEVICE_TYPES = frozenset("cpu cuda ipu xpu mkldnn opengl opencl ideep hip ve fpga maia xla lazy vulkan mps "
                                 "meta hpu mtia privateuseone".split())

_EMULATED: dict[str, int] = {}


def mark_emulated(device_type: str, count: int) -> None:
    """Record that ``device_type`` is emulated in this process with ``count`` devices."""
    _EMULATED[device_type] = count


def emulated_count(device_type: str) -> int | None:
    """The number of emulated devices of ``device_type``, or None when not emulated."""
    return _EMULATED.get(device_type)


def is_emulated(device_type: str) -> bool:
    """Whether ``device_type`` is emulated in this process."""
    return device_type in _EMULATED


def in_tree_reason(device_type: str) -> str | None:
    """Why a backend for ``device_type`` can be neither a PrivateUse1 backend nor emulated (None: it can)."""
    if device_type not in IN_TREE_DEVICE_TYPES:
        return None
    return (f"{device_type!r} is a device type PyTorch itself knows (in-tree), while PrivateUse1Backend and "
            "emulation (kernel-plugins-testing, --emulate) rename PyTorch's one out-of-tree slot, PrivateUse1, "
            f"which cannot take an in-tree name. A backend for {device_type!r} writes its hooks itself and is "
            "tested on its hardware (see 'Backends for in-tree device types' in docs/writing-a-backend.md)")
