"""Which devices this machine has, and which one a call should use."""

from __future__ import annotations

import functools
import os

from ._suggest import did_you_mean
from .device import DeviceInfo, SystemInfo, parse_device
from .emulation_registry import in_tree_reason
from .errors import DeviceError, NoDeviceError, UnknownDeviceError
from .known_plugins import DEVICE_ALIASES, INSTALL_HINTS, KNOWN_PLUGINS, pip_install
from .plugins import BackendRecord, get_manager

__all__ = ["system_info", "detect_devices", "get_device", "unknown_device_error", "backend_advice",
           "unserved_vendor_stacks", "find_backends"]


@functools.lru_cache(maxsize=1)
def system_info() -> SystemInfo:
    """This machine's :class:`SystemInfo` (read once per process)."""
    return SystemInfo.current()


def detect_devices() -> list[DeviceInfo]:
    """Every available device, best (highest backend priority) first."""
    manager = get_manager()
    found = sorted((-manager.record(name).spec.priority, name, outcome.device)
                   for name, outcome in manager.detect_all().items() if outcome.device is not None)
    return [d for _, _, d in found]


def unknown_device_error(device_type: str) -> UnknownDeviceError:
    """The error for a device type no installed backend provides: it lists the installed
    backends and says how to get one that provides it (:func:`backend_advice`)."""
    manager = get_manager()
    backends = manager.backends().values()
    installed = ", ".join(r.name + (f" ({r.spec.device_type})" if r.name != r.spec.device_type else "")
                          for r in backends)
    known = {r.name for r in backends} | {r.spec.device_type for r in backends}
    alias, advice = DEVICE_ALIASES.get(device_type), backend_advice(device_type)
    guess = f" did you mean {alias!r}?" if alias in known else "" if advice else did_you_mean(device_type, known)
    msg = f"unknown device type {device_type!r}: no installed backend provides it;{guess}"
    return UnknownDeviceError(f"{msg} Installed backends: {installed}. " + (
        advice or "Install a kernel-plugins backend distribution that provides it."))


def backend_advice(name: str) -> str | None:
    """How to get the backend ``name`` no loaded plugin provides (None: unknown): name
    ``KERNEL_PLUGINS_LOAD`` when it leaves the plugin out, else the install (and the vendor
    extension when it is installed here)."""
    manager, plugin = get_manager(), KNOWN_PLUGINS.get(name)
    if failed := [f.describe() for f in manager.failures() if f.name == name]:
        return f"The {name} plugin is installed but failed: {'; '.join(failed)}. Fix or reinstall it."
    if name in manager.left_out():
        value = os.environ.get("KERNEL_PLUGINS_LOAD", "")
        return (f"The {name} plugin is installed, but KERNEL_PLUGINS_LOAD={value!r} leaves it "
                f"out: add {name} to KERNEL_PLUGINS_LOAD, or unset it.")
    if plugin is None:
        return None
    ext = manager.vendor_extensions().get(plugin.vendor_module)
    here = f"{plugin.vendor_module} ({ext}) is installed here; " if ext else ""
    return f"To use {name!r} devices, {here}install the plugin: {INSTALL_HINTS[name]}"


def unserved_vendor_stacks() -> list[str]:
    """:func:`backend_advice` for each vendor extension installed here whose backend is not loaded."""
    exts, loaded = get_manager().vendor_extensions(), get_manager().backends()
    return [str(backend_advice(n)) for n, p in KNOWN_PLUGINS.items()
            if p.vendor_module in exts and n not in loaded]


def find_backends(device_type: str) -> list[BackendRecord]:
    """Backends matching a name: a backend name first (``rocm``), else a device type."""
    manager = get_manager()
    record = manager.backends().get(device_type)
    return [record] if record is not None else manager.backends_for_device_type(device_type)


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
        if devices := detect_devices():
            return devices[0]
        raise NoDeviceError("no device found, not even the CPU backend (is kernel-plugins installed?)")
    req = parse_device(device)
    records = find_backends(req.device_type)
    if not records:
        raise unknown_device_error(req.device_type)
    manager = get_manager()
    details = []
    for rec in records:
        outcome = manager.detect(rec.name)
        info = outcome.device
        if info is None:
            why = f"error: {outcome.error}" if outcome.error else outcome.reason or "no device present"
            details.append(f"{rec.origin()}: {why}")
        elif req.index is not None and req.index >= info.count:
            raise DeviceError(f"device {req.device_type}:{req.index} requested, but {rec.name} has {info.count} "
                              f"device(s) (indices 0..{info.count - 1})")
        elif req.index is None:
            return info
        elif (found := manager.detect(rec.name, index=req.index)).device is None:
            raise DeviceError(f"the facts of device {req.device_type}:{req.index} could not be read ({rec.origin()}: "
                              f"{found.error or found.reason or 'no device'})")
        else:
            return found.device
    hint = "" if any(rec.builtin or in_tree_reason(rec.spec.device_type) for rec in records) else (  # out-of-tree
        f" Without the hardware, try it EMULATED on the CPU: kernel-plugins --emulate {req.device_type} ... on the "
        f"command line, kernel_plugins_testing.emulate({req.device_type!r}) in Python "
        f"({pip_install('kernel-plugins-testing')}).")
    raise NoDeviceError(f"no {req.device_type!r} device is available: {'; '.join(details)}. Check that the vendor "
                        f"driver and PyTorch extension are installed and a device is visible.{hint}")
