"""Process-wide record of emulated device types (no torch import).

:func:`kernel_plugins_testing.emulate` records a device type here; the plugin
manager marks every :class:`~kernel_plugins.device.DeviceInfo` of a recorded type as
``emulated=True``, so an emulated device is never reported as real hardware, whatever
the backend plugin itself says.
"""

from __future__ import annotations

__all__ = ["mark_emulated", "emulated_count", "is_emulated"]

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
