"""A generic ``torch.<name>``-shaped module for an emulated accelerator (no torch import).

:func:`make_device_module` builds the module :func:`kernel_plugins_testing.emulate`
registers as ``torch.<name>``; backend plugins add their vendor attributes to it
(with :func:`configure_device_module`) from their ``emulate_device`` hook.
"""

from __future__ import annotations

import contextlib
import types
from collections.abc import Iterator, Mapping
from typing import Any

from ._errors import EmulationError

__all__ = ["EmulatedDeviceProperties", "make_device_module", "configure_device_module"]

_DEFAULT_MEMORY = 16 * 1024**3


class EmulatedDeviceProperties:
    """What ``torch.<name>.get_device_properties(i)`` returns for an emulated device.

    Always has ``name``, ``total_memory``, ``major``, ``minor`` and
    ``multi_processor_count``; vendor plugins add their own fields (keyword arguments).
    """

    def __init__(
        self,
        name: str,
        total_memory: int = _DEFAULT_MEMORY,
        major: int = 1,
        minor: int = 0,
        multi_processor_count: int = 8,
        **extra: Any,
    ) -> None:
        self.name = name
        self.total_memory = int(total_memory)
        self.major = int(major)
        self.minor = int(minor)
        self.multi_processor_count = int(multi_processor_count)
        for key, value in extra.items():
            setattr(self, key, value)

    def as_dict(self) -> dict[str, Any]:
        """All fields as a dict."""
        return dict(vars(self))

    def __repr__(self) -> str:
        fields = ", ".join(f"{k}={v!r}" for k, v in vars(self).items())
        return f"EmulatedDeviceProperties({fields})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, EmulatedDeviceProperties) and vars(self) == vars(other)

    __hash__ = None  # type: ignore[assignment]


def _as_properties(entry: object, default_name: str) -> object:
    if isinstance(entry, Mapping):
        fields = dict(entry)
        fields.setdefault("name", default_name)
        return EmulatedDeviceProperties(**fields)
    missing = [
        f
        for f in ("name", "total_memory", "major", "minor", "multi_processor_count")
        if not hasattr(entry, f)
    ]
    if missing:
        raise EmulationError(
            f"device properties {entry!r} lack {', '.join(missing)}; pass a dict or an object "
            "with name, total_memory, major, minor and multi_processor_count"
        )
    return entry


def _properties_list(name: str, count: int, properties: list[object] | None) -> list[object]:
    default_name = f"Emulated {name} device"
    if count == 0:
        return []  # no device, nothing to describe (vendor facts may still be given)
    if properties is None:
        return [EmulatedDeviceProperties(default_name) for _ in range(count)]
    entries = [_as_properties(p, default_name) for p in properties]
    if len(entries) == 1 and count > 1:
        entries = entries * count
    if len(entries) != count:
        raise EmulationError(
            f"got {len(entries)} device properties for {count} emulated {name} device(s); "
            "pass one entry (used for every device) or one per device"
        )
    return entries


def configure_device_module(
    module: types.ModuleType,
    *,
    properties: list[object] | None = None,
    extra: dict[str, Any] | None = None,
) -> None:
    """Replace the device properties of an emulated module and/or set extra attributes.

    Args:
        module: a module from :func:`make_device_module` (e.g. ``torch.mlu`` once emulated).
        properties: one entry per device (or one for all): a dict or an object with
            ``name``, ``total_memory``, ``major``, ``minor``, ``multi_processor_count``
            and any vendor fields. None keeps the current ones.
        extra: attributes to set on the module (vendor functions and values), e.g.
            ``{"is_bf16_supported": lambda: False}``.
    """
    if not getattr(module, "__kernel_plugins_emulated__", False):
        raise EmulationError(f"{module!r} is not an emulated device module")
    if properties is not None:
        target: Any = module  # its _kp_* attributes are set by make_device_module
        target._kp_properties = _properties_list(module._kp_name, module._kp_count, properties)
    for key, value in (extra or {}).items():
        setattr(module, key, value)


def make_device_module(
    name: str,
    count: int,
    *,
    properties: list[object] | None = None,
    extra: dict[str, Any] | None = None,
) -> types.ModuleType:
    """Build a ``torch.<name>``-shaped module describing ``count`` emulated devices.

    The module has ``is_available()``, ``device_count()``, ``current_device()``,
    ``set_device(i)``, ``device(i)`` (a context manager), ``get_device_properties(i)``,
    ``get_device_capability(i)``, ``get_device_name(i)``, ``synchronize(device=None)``
    (each call counted in ``synchronize_calls``), ``is_bf16_supported()``,
    ``manual_seed(seed)`` / ``manual_seed_all(seed)`` (emulated devices draw random
    numbers from the CPU generator, so these seed it) and
    ``__kernel_plugins_emulated__ = True``. Importing it does not import torch.

    Args:
        name: the device type.
        count: number of devices (0 = stack present, no device).
        properties: see :func:`configure_device_module`; None gives generic defaults.
        extra: extra module attributes, set last (they may replace the functions above).
    """
    if count < 0:
        raise EmulationError(f"device count must be >= 0, got {count}")
    # Any: the module gets attributes ModuleType does not declare
    mod: Any = types.ModuleType(
        f"torch.{name}", f"Emulated {name} device module (CPU, not hardware)."
    )
    mod.__kernel_plugins_emulated__ = True
    mod._kp_name = name
    mod._kp_count = count
    mod._kp_current = 0
    mod._kp_properties = _properties_list(name, count, properties)
    mod.synchronize_calls = 0
    mod.initial_seed_value = None

    def _index(device: object = None) -> int:
        if device is None:
            return int(mod._kp_current)
        index: Any = getattr(device, "index", device)
        if isinstance(device, str):
            _, _, tail = device.partition(":")
            index = int(tail) if tail else None
        if index is None:
            return int(mod._kp_current)
        index = int(index)
        if not 0 <= index < mod._kp_count:
            raise RuntimeError(
                f"{name} error: invalid device ordinal {index}: the emulated {name} stack has "
                f"{mod._kp_count} device(s)"
            )
        return index

    def is_available() -> bool:
        """Whether at least one emulated device exists."""
        return int(mod._kp_count) > 0

    def is_initialized() -> bool:
        """Always True: nothing to initialise."""
        return True

    def device_count() -> int:
        """Number of emulated devices."""
        return int(mod._kp_count)

    def current_device() -> int:
        """Index of the current device."""
        return int(mod._kp_current)

    def set_device(device: object) -> None:
        """Make ``device`` (an index, ``"<name>:<i>"`` or a torch.device) current."""
        mod._kp_current = _index(device)

    @contextlib.contextmanager
    def device(device: object) -> Iterator[None]:
        """Context manager that makes ``device`` current and restores the previous one."""
        previous = mod._kp_current
        mod._kp_current = _index(device)
        try:
            yield
        finally:
            mod._kp_current = previous

    def get_device_properties(device: object = None) -> object:
        """Properties of a device: name, total_memory, major, minor, multi_processor_count..."""
        return mod._kp_properties[_index(device)]

    def get_device_capability(device: object = None) -> tuple[int, int]:
        """``(major, minor)`` of a device."""
        props = get_device_properties(device)
        return (int(props.major), int(props.minor))  # type: ignore[attr-defined]

    def get_device_name(device: object = None) -> str:
        """Name of a device."""
        return str(get_device_properties(device).name)  # type: ignore[attr-defined]

    def synchronize(device: object = None) -> None:
        """No-op on the CPU; counts calls in ``synchronize_calls``."""
        if device is not None:
            _index(device)
        mod.synchronize_calls += 1

    def is_bf16_supported(including_emulation: bool = True) -> bool:
        """True unless a vendor plugin says otherwise."""
        return True

    def manual_seed(seed: int) -> None:
        """Seed the generator emulated devices draw from (the CPU's)."""
        import torch

        mod.initial_seed_value = int(seed)
        torch.default_generator.manual_seed(int(seed))

    def get_amp_supported_dtype() -> list[Any]:
        """Dtypes ``torch.autocast(<name>)`` accepts."""
        import torch

        return [torch.float16, torch.bfloat16]

    def _is_in_bad_fork() -> bool:
        return False

    funcs = {
        "is_available": is_available,
        "is_initialized": is_initialized,
        "device_count": device_count,
        "current_device": current_device,
        "set_device": set_device,
        "device": device,
        "get_device_properties": get_device_properties,
        "get_device_capability": get_device_capability,
        "get_device_name": get_device_name,
        "synchronize": synchronize,
        "is_bf16_supported": is_bf16_supported,
        "manual_seed": manual_seed,
        "manual_seed_all": manual_seed,
        "get_amp_supported_dtype": get_amp_supported_dtype,
        "_is_in_bad_fork": _is_in_bad_fork,
    }
    for key, fn in funcs.items():
        setattr(mod, key, fn)
    if extra:
        configure_device_module(mod, extra=extra)
    return mod
