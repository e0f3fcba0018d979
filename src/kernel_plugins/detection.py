"""Which devices this machine has, and which one a call should use."""

from __future__ import annotations

import functools

from ._suggest import did_you_mean
from .device import DeviceInfo, SystemInfo, parse_device
from .errors import DeviceError, NoDeviceError, UnknownDeviceError
from .known_plugins import INSTALL_HINTS
from .plugins import BackendRecord, get_manager

__all__ = ["system_info", "detect_devices", "get_device", "unknown_device_error", "INSTALL_HINTS", "find_backends"]

@functools.lru_cache(maxsize=1)
def system_info() -> SystemInfo:
    """This machine's :class:`SystemInfo` (read once per process)."""
    return SystemInfo.current()


def detect_devices() -> list[DeviceInfo]:
    """Every available device, best (highest backend priority) first."""
    manager = get_manager()
    found = []
    for name, outcome in manager.detect_all().items():
        if outcome.device is not None:
            found.append((manager.record(name).spec.priority, name, outcome.device))
    found.sort(key=lambda t: (-t[0], t[1]))
    return [d for _, _, d in found]


def unknown_device_error(device_type: str) -> UnknownDeviceError:
    """The error for a device type no installed backend provides.

    It lists the installed backends and, for device types with a known plugin
    distribution, names the distribution to install.
    """
    manager = get_manager()
    installed = ", ".join(
        f"{r.name} ({r.spec.device_type})" if r.name != r.spec.device_type else r.name
        for r in manager.backends().values()
    )
    known = {r.name for r in manager.backends().values()}
    known |= {r.spec.device_type for r in manager.backends().values()}
    msg = f"unknown device type {device_type!r}: no installed backend provides it;"
    msg += did_you_mean(device_type, known) + f" Installed backends: {installed}."
    hint = INSTALL_HINTS.get(device_type)
    if hint:
        msg += f" To use {device_type!r} devices, install the plugin: pip install {hint}"
    else:
        msg += " Install a kernel-plugins backend distribution that provides it."
    failed = [f for f in manager.failures() if f.name == device_type]
    if failed:
        msg += " Note: " + "; ".join(f.describe() for f in failed)
    return UnknownDeviceError(msg)


def find_backends(device_type: str) -> list[BackendRecord]:
    """Backends matching a name: a backend name first (``rocm``), else a device type."""
    manager = get_manager()
    backends = manager.backends()
    if device_type in backends:
        return [backends[device_type]]
    return manager.backends_for_device_type(device_type)


def get_device(device: object = None) -> DeviceInfo:
    """The device a call should use.

    :param device: None (the preferred available accelerator, else cpu), a device
        string (``"mlu"``, ``"cuda:1"``, a backend name such as ``"rocm"``), a
        ``torch.device`` or a :class:`DeviceInfo`.
    :raises UnknownDeviceError: no installed backend provides the type.
    :raises NoDeviceError: the backend is installed but found no device.
    :raises DeviceError: a malformed string or an index beyond the device count.
    """
    if isinstance(device, DeviceInfo):
        return device
    if device is None:
        devices = detect_devices()
        if devices:
            return devices[0]
        raise NoDeviceError("no device found, not even the CPU backend (is kernel-plugins installed?)")
    req = parse_device(device)
    records = find_backends(req.device_type)
    if not records:
        raise unknown_device_error(req.device_type)
    manager = get_manager()
    errors: list[tuple[BackendRecord, str | None, str | None]] = []
    for rec in records:
        outcome = manager.detect(rec.name)
        if outcome.device is not None:
            info = outcome.device
            if req.index is not None:
                if req.index >= info.count:
                    raise DeviceError(
                        f"device {req.device_type}:{req.index} requested, but {rec.name} has "
                        f"{info.count} device(s) (indices 0..{info.count - 1})"
                    )
                info = info.replace(index=req.index)
            return info
        errors.append((rec, outcome.error, outcome.reason))
    details = "; ".join(
        f"{rec.origin()}: " + (f"error: {err}" if err else (why or "no device present"))
        for rec, err, why in errors
    )
    hint = ""
    if not any(rec.builtin for rec in records):  # out-of-tree backends can be emulated
        hint = (
            f" Without the hardware, try it EMULATED on the CPU: kernel-plugins --emulate "
            f"{req.device_type} ... on the command line, kernel_plugins_testing.emulate("
            f"{req.device_type!r}) in Python (pip install kernel-plugins-testing)."
        )
    raise NoDeviceError(
        f"no {req.device_type!r} device is available: {details}. Check that the vendor driver and "
        f"PyTorch extension are installed and a device is visible.{hint}"
    )
