"""Test helpers: emulate an accelerator on the CPU.

:func:`emulate` makes ``torch.<name>`` and tensors on ``<name>:<i>`` work on a
CPU-only machine (every op runs on a hidden CPU tensor), records the device as
emulated (so it is never reported as real hardware) and asks the backend plugin that
owns ``name`` to install stand-ins for its vendor stack.

Emulation proves routing, device bookkeeping, dtype handling and error paths of the
code under test. It proves nothing about vendor kernels, vendor-only APIs,
collectives or performance.

PyTorch allows one PrivateUse1 device name per process: emulate each device type in
its own interpreter (:func:`run_in_fresh_interpreter`, or one pytest run per device
with ``--emulate-device NAME``). Importing this package does not import torch.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
import types
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ._device_module import EmulatedDeviceProperties, configure_device_module, make_device_module
from ._errors import EmulationError

__all__ = [
    "EmulatedDevice",
    "EmulatedDeviceProperties",
    "EmulationError",
    "configure_device_module",
    "emulate",
    "emulated_devices",
    "make_device_module",
    "run_forked",
    "run_in_fresh_interpreter",
    "run_module_forked",
]

_NAME_RE = re.compile(r"^[a-z][a-z0-9_]{0,31}$")
_LOCK = threading.Lock()
_DEVICES: dict[str, EmulatedDevice] = {}

#: Vendor facts the core itself uses for the generic device properties.
_PROPERTY_FACTS = ("device_name", "capability", "total_memory", "multi_processor_count")


@dataclass(frozen=True)
class EmulatedDevice:
    """An accelerator emulated on the CPU in this process.

    Attributes:
        name: the device type (``torch.device(name)`` works).
        devices: number of emulated devices (0 = stack present, no device).
        facts: the vendor facts passed to :func:`emulate` (read-only).
        vendor_stand_ins: True when a backend plugin installed stand-ins for its
            vendor stack (its ``emulate_device`` hook returned True).
    """

    name: str
    devices: int
    facts: Mapping[str, Any] = field(default_factory=lambda: types.MappingProxyType({}))
    vendor_stand_ins: bool = field(default=False, compare=False)

    @property
    def module(self) -> types.ModuleType:
        """The ``torch.<name>`` module (imports torch)."""
        import torch

        return getattr(torch, self.name)  # type: ignore[no-any-return]

    def summary(self) -> str:
        """One line for humans, saying plainly that the device is not real hardware."""
        return f"{self.name} x{self.devices}: EMULATED on CPU, not real hardware"


def _validate(name: object, devices: object) -> None:
    if not isinstance(name, str) or not _NAME_RE.match(name):
        raise EmulationError(
            f"cannot emulate device {name!r}: the name must be a lowercase identifier "
            "(a letter, then letters, digits or _; at most 32), e.g. 'mlu'"
        )
    from kernel_plugins.emulation_registry import in_tree_reason

    if reason := in_tree_reason(name):
        raise EmulationError(f"cannot emulate {name!r}: {reason}")
    if isinstance(devices, bool) or not isinstance(devices, int) or devices < 0:
        raise EmulationError(
            f"cannot emulate {devices!r} {name} device(s): give a whole number >= 0 "
            "(0 emulates a vendor stack without any device)"
        )


def _generic_properties(name: str, facts: Mapping[str, Any]) -> list[object] | None:
    """Device properties from the generic facts, or None for the defaults."""
    if not any(k in facts for k in _PROPERTY_FACTS):
        return None
    props: dict[str, Any] = {"name": str(facts.get("device_name", f"Emulated {name} device"))}
    if "capability" in facts:
        try:
            major, minor = (int(x) for x in facts["capability"])
        except (TypeError, ValueError) as e:
            raise EmulationError(
                f"fact capability={facts['capability']!r} is not a (major, minor) pair of "
                "integers, e.g. (5, 0)"
            ) from e
        props.update(major=major, minor=minor)
    for key in ("total_memory", "multi_processor_count"):
        if key in facts:
            props[key] = int(facts[key])
    return [props]


def _owning_backend(manager: Any, name: str) -> str | None:
    backends = manager.backends()
    if name in backends:
        return name
    records = manager.backends_for_device_type(name)
    return str(records[0].name) if records else None


def _ask_plugin(name: str, devices: int, facts: dict[str, Any]) -> bool:
    """Let the backend plugin that owns ``name`` install its vendor stand-ins."""
    try:
        from kernel_plugins.plugins import get_manager

        manager = get_manager()
        backend = _owning_backend(manager, name)
        if backend is None:
            return False
        return bool(manager.emulate_device(backend, devices, facts))
    except ImportError:
        # The plugin manager is not available: emulate the generic device only.
        return False


def emulate(name: str, devices: int | None = None, **vendor_facts: Any) -> EmulatedDevice:
    """Emulate ``devices`` accelerators of type ``name`` on the CPU, in this process.

    Renames PyTorch's PrivateUse1 key to ``name``, registers ``torch.<name>`` (see
    :func:`make_device_module`), records the type as emulated
    (:func:`kernel_plugins.emulation_registry.mark_emulated`) and asks the backend plugin that
    owns ``name`` to install its vendor stand-ins through its ``emulate_device`` hook.

    The same call again returns the same :class:`EmulatedDevice`, and so does a call that
    names no count and no facts (``emulate("mlu")`` joins whatever set-up exists). A
    different count or different facts for the same name, or any second name, raise
    :class:`EmulationError`: run other set-ups in a fresh interpreter.

    Args:
        name: the device type, a lowercase identifier such as ``"mlu"``.
        devices: number of devices (0 = the stack is present but has no device); default 2.
        **vendor_facts: facts the backend plugin reports (versions, names...). The
            core itself reads ``device_name``, ``capability`` ``(major, minor)``,
            ``total_memory`` and ``multi_processor_count`` for the generic device
            properties; plugins may refine them with :func:`configure_device_module`.

    Example::

        dev = emulate("mlu", devices=2)
        x = torch.ones(3, device="mlu:1")   # computed on the CPU
    """
    with _LOCK:
        known = _DEVICES.get(name)
        if known is not None and devices is None and not vendor_facts:
            return known
        devices = 2 if devices is None else devices
        _validate(name, devices)
        if known is not None:
            if known.devices != devices or dict(known.facts) != vendor_facts:
                raise EmulationError(
                    f"{name} is already emulated in this process with devices={known.devices} "
                    f"and facts {dict(known.facts)!r}; got devices={devices} and facts "
                    f"{vendor_facts!r}. Use a fresh interpreter for another set-up."
                )
            return known
        other = next(iter(_DEVICES), None)
        if other is not None:
            raise EmulationError(
                f"cannot emulate {name!r}: this process already emulates {other!r}, and PyTorch "
                "allows one PrivateUse1 device name per process. Use a fresh interpreter "
                "(kernel_plugins_testing.run_in_fresh_interpreter, or one pytest run per device)."
            )
        from ._privateuse1 import install_privateuse1_device, installed_privateuse1_device

        installed = installed_privateuse1_device()
        if installed is not None and installed[0] == name and installed[1] != devices:
            raise EmulationError(
                f"{name} devices were installed with count {installed[1]}; got {devices}"
            )
        if installed is None:
            module = make_device_module(
                name, devices, properties=_generic_properties(name, vendor_facts)
            )
            install_privateuse1_device(name, devices, module)
        from kernel_plugins import emulation_registry

        emulation_registry.mark_emulated(name, devices)
        handled = _ask_plugin(name, devices, dict(vendor_facts))
        device = EmulatedDevice(
            name, devices, types.MappingProxyType(dict(vendor_facts)), vendor_stand_ins=handled
        )
        _DEVICES[name] = device
        return device


def emulated_devices() -> tuple[EmulatedDevice, ...]:
    """The devices :func:`emulate` set up in this process (at most one)."""
    with _LOCK:
        return tuple(_DEVICES.values())


def run_in_fresh_interpreter(
    code: str,
    env: dict[str, str] | None = None,
    timeout: float = 120,
    *,
    cwd: str | os.PathLike[str] | None = None,
) -> subprocess.CompletedProcess[str]:
    """Run ``code`` in a new Python process (same interpreter, spawned, never forked).

    Use it to emulate another device name than this process's. The child sees this
    process's environment plus ``env``, and imports the same ``kernel_plugins``.
    stdout and stderr are captured as text; the exit status is not checked. ``cwd`` is
    the child's working directory (default: this process's).

    Raises:
        subprocess.TimeoutExpired: the child ran longer than ``timeout`` seconds.
    """
    return _spawn(code, _child_env(env), timeout, cwd)


def _child_env(env: Mapping[str, str] | None, drop: tuple[str, ...] = ()) -> dict[str, str]:
    """This process's environment plus ``env``, less ``drop``, with this package importable."""
    child_env = dict(os.environ)
    package_root = str(Path(__file__).resolve().parents[1])
    paths = [package_root, *filter(None, child_env.get("PYTHONPATH", "").split(os.pathsep))]
    child_env["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(paths))
    child_env.update(env or {})
    for name in drop:
        child_env.pop(name, None)
    return child_env


def _spawn(
    code: str, env: dict[str, str], timeout: float, cwd: str | os.PathLike[str] | None
) -> subprocess.CompletedProcess[str]:
    """``python -c code`` in exactly ``env``, its output captured as text."""
    return subprocess.run(
        [sys.executable, "-c", code], env=env, cwd=cwd, capture_output=True, text=True,
        timeout=timeout, check=False,
    )


def run_forked(
    code: str,
    env: Mapping[str, str] | None = None,
    timeout: float = 120,
    *,
    cwd: str | os.PathLike[str] | None = None,
    drop: tuple[str, ...] = (),
) -> subprocess.CompletedProcess[str]:
    """:func:`run_in_fresh_interpreter`, but the child is forked from a process that has
    imported torch (one per process, started on first use), so it skips that import, and the
    parts of torch that torch imports on first use (``torch._dynamo``,
    ``torch.distributed.tensor``): 4 to 5 s of CPU. The child sees this process's environment
    plus ``env``, less the variables named in ``drop``; it runs ``code`` as ``python -c``
    would, and ends as it would (tracebacks, ``SystemExit``, non-daemon threads joined, atexit
    handlers, ``__main__``'s objects freed, streams flushed) less the teardown of every other
    module. Children may run side by side.

    For code that imports torch first thing anyway: what a process does before torch is
    imported needs :func:`run_in_fresh_interpreter`. torch itself was imported with this
    process's environment (``TORCH_DEVICE_BACKEND_AUTOLOAD`` as the child's where it makes a
    difference: an installed distribution has a ``torch.backends`` entry point). Where the OS has
    no ``pidfd_open`` (not Linux) the child is spawned.

    Raises:
        subprocess.TimeoutExpired: the child ran longer than ``timeout`` seconds (it is killed).
    """
    from ._forked import run_forked as run

    return run(code, env, timeout, cwd=cwd, drop=drop)


def run_module_forked(
    module: str, *argv: str, env: Mapping[str, str] | None = None, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    """``python -m module *argv`` as :func:`run_forked` runs code."""
    from ._forked import run_module_forked as run

    return run(module, *argv, env=env, timeout=timeout)
