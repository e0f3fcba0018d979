"""Kernel mappings: which repository serves a layer name on a device type and mode.

A mapping has this shape::

    {
        "SiluAndMul": {                                   # layer (or function) name
            "cuda": LayerRepository(...),                 # served in every mode (FALLBACK)
            "mlu": {                                      # one entry per mode
                Mode.INFERENCE: LayerRepository(...),
                Mode.TRAINING | Mode.TORCH_COMPILE: LayerRepository(...),
            },
            "musa": {                                     # entries per capability range
                CapabilityRange(min=(2, 2)): LayerRepository(...),
                CapabilityRange(max=(2, 1)): {Mode.INFERENCE: LayerRepository(...)},
                Mode.FALLBACK: LayerRepository(...),      # no range: any musa device
            },
        },
    }

Device keys are the device type or the backend name of any installed backend (``"rocm"``
selects ROCm devices only, ``"cuda"`` every backend of device type ``cuda``); an unknown key
raises the loader's :class:`~kernel_plugins.errors.UnknownDeviceError`. Registering merges
into the active mapping (new mode entries replace those of the same mode);
:func:`use_kernel_mapping` scopes a mapping to a ``with`` block (per thread and asyncio task).
"""

from __future__ import annotations

import contextvars
import itertools
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any, Protocol

from .._record import record
from ._errors import MappingError
from .capability import Capability, CapabilityRange, format_capability
from .mode import Mode, candidate_modes, check_mapping_mode, describe_mode
from .repositories import KernelRepository

__all__ = ["Candidate", "KernelMapping", "register_kernel_mapping", "use_kernel_mapping", "current_mapping",
           "validate_device_key", "describe_device"]

_SEQ = itertools.count()


class DeviceLike(Protocol):
    """What candidate selection reads from a device (a DeviceInfo has all three)."""

    backend: str
    device_type: str
    capability: Capability | None


@record
class _Entry:
    """Mode entries for one (layer, device key, capability range)."""

    modes: tuple[tuple[Mode, KernelRepository], ...]
    seq: int


@record
class Candidate:
    """One mapping entry that may serve ``layer_name``: ``repo``, the ``mode`` it was registered
    for, the ``device_key`` and ``capability_range`` (or None) that matched."""

    layer_name: str
    repo: KernelRepository
    mode: Mode
    device_key: str
    capability_range: CapabilityRange | None

    def describe(self) -> str:
        """``layer `X` of `org/repo` [cuda, capability 8.0..8.9, mode INFERENCE]``."""
        rng = [] if self.capability_range is None else [str(self.capability_range)]
        parts = [self.device_key, *rng, f"mode {describe_mode(self.mode)}"]
        return f"{self.repo.describe()} [{', '.join(parts)}]"


RangeKey = CapabilityRange | None


class KernelMapping:
    """An immutable snapshot of registered mappings (layer -> device key -> range -> modes)."""

    def __init__(self, data: dict[str, dict[str, dict[RangeKey, _Entry]]] | None = None) -> None:
        self._data = data or {}

    def layer_names(self) -> list[str]:
        """Mapped layer names, sorted."""
        return sorted(self._data)

    def device_keys(self, layer_name: str) -> list[str]:
        """Device keys mapped for a layer, sorted."""
        return sorted(self._data.get(layer_name, {}))

    def merged(self, mapping: Mapping[str, Any]) -> KernelMapping:
        """A new snapshot with ``mapping`` (user shape, validated here) merged in."""
        if not isinstance(mapping, Mapping):
            raise MappingError(f"a kernel mapping must be a dict of layer name -> device dict, "
                               f"got {type(mapping).__name__}")
        data = {layer: dict(devs) for layer, devs in self._data.items()}
        for layer, devices in mapping.items():
            if not isinstance(layer, str) or not layer:
                raise MappingError(f"mapping keys must be layer names (str), got {layer!r}")
            if not isinstance(devices, Mapping):
                raise MappingError(f"mapping[{layer!r}] must be a dict of device type -> repository, got "
                                   f"{type(devices).__name__}")
            per_layer = data.setdefault(layer, {})
            for key, value in devices.items():
                validate_device_key(key)
                where = f"mapping[{layer!r}][{key!r}]"
                ranges = dict(per_layer.get(key, {}))
                for rng, modes in _split_device_value(value, where).items():
                    old = dict(ranges[rng].modes) if rng in ranges else {}
                    ranges[rng] = _Entry(tuple({**old, **modes}.items()), next(_SEQ))
                per_layer[key] = ranges
        return KernelMapping(data)

    def candidates(self, layer_name: str, device: DeviceLike, mode: Mode) -> list[Candidate]:
        """Entries that may serve ``layer_name`` on ``device`` in ``mode``, best first.

        Order: entries under the backend name before those under the device type; within
        a key, matching capability ranges narrowest first (see
        :mod:`~kernel_plugins.layers.capability`), the entry without a range last; within
        an entry, modes in the order of :func:`~kernel_plugins.layers.mode.candidate_modes`.
        """
        per_layer, wanted = self._data.get(layer_name, {}), candidate_modes(mode)
        out: list[Candidate] = []
        for key in dict.fromkeys((device.backend, device.device_type)):
            for rng, entry in _ordered_entries(per_layer.get(key, {}), device.capability):
                modes = dict(entry.modes)
                out += [Candidate(layer_name, modes[m], m, key, rng) for m in wanted if m in modes]
        return out

    def __repr__(self) -> str:
        return f"KernelMapping(layers={self.layer_names()!r})"


def _ordered_entries(ranges: dict[RangeKey, _Entry], capability: Capability | None) -> list[tuple[RangeKey, _Entry]]:
    ranged = [(r, e) for r, e in ranges.items() if r is not None and r.contains(capability)]
    ranged.sort(key=lambda re: (*re[0].sort_key(), -re[1].seq))
    return [*ranged, *([(None, ranges[None])] if None in ranges else [])]


def _split_modes(value: object, where: str) -> dict[Mode, KernelRepository]:
    if isinstance(value, KernelRepository):
        return {Mode.FALLBACK: value}
    if not isinstance(value, Mapping):
        raise MappingError(f"{where} must be a repository (LayerRepository, ...) or a dict of Mode -> "
                           f"repository, got {type(value).__name__}")
    out: dict[Mode, KernelRepository] = {}
    for m, repo in value.items():
        check_mapping_mode(m)
        if not isinstance(repo, KernelRepository):
            raise MappingError(f"{where}[{describe_mode(m)}] must be a repository (LayerRepository, "
                               f"LocalLayerRepository, FuncRepository, ...), got {type(repo).__name__}")
        out[m] = repo
    return out


def _split_device_value(value: object, where: str) -> dict[RangeKey, dict[Mode, KernelRepository]]:
    """Normalise a device value to ``{range or None: {mode: repo}}``."""
    if not isinstance(value, Mapping) or not any(isinstance(k, CapabilityRange) for k in value):
        return {None: _split_modes(value, where)}
    out: dict[RangeKey, dict[Mode, KernelRepository]] = {}
    plain: dict[Mode, KernelRepository] = {}
    for k, v in value.items():
        if isinstance(k, CapabilityRange):
            out[k] = _split_modes(v, f"{where}[{k}]")
        elif isinstance(k, Mode):
            plain.update(_split_modes({k: v}, where))
        else:
            raise MappingError(f"keys of {where} must be CapabilityRange or Mode values, got {k!r}")
    if plain:
        out[None] = plain
    return out


def validate_device_key(key: object) -> None:
    """Accept an installed backend's name or device type, or a known plugin backend not
    installed (so a library can map every device at import time); else raise the loader's
    :class:`~kernel_plugins.errors.UnknownDeviceError`."""
    if not isinstance(key, str):
        raise MappingError(f"device keys of a mapping must be strings like 'cuda' or 'mlu', got {key!r}")
    from ..detection import unknown_device_error
    from ..known_plugins import INSTALL_HINTS
    from ..plugins import get_manager

    known = {k for name, rec in get_manager().backends().items() for k in (name, rec.spec.device_type)}
    if key not in known and key not in INSTALL_HINTS:
        raise unknown_device_error(key)


_EMPTY = KernelMapping()
_global: KernelMapping = _EMPTY
_ACTIVE: contextvars.ContextVar[KernelMapping | None] = contextvars.ContextVar("kernel_plugins_kernel_mapping",
                                                                               default=None)


def current_mapping() -> KernelMapping:
    """The mapping in effect here: the innermost ``use_kernel_mapping`` block, else the
    process-wide one built by :func:`register_kernel_mapping`."""
    return _global if (scoped := _ACTIVE.get()) is None else scoped


def register_kernel_mapping(mapping: Mapping[str, Any], inherit_mapping: bool = True) -> None:
    """Register kernels for layer names, devices and modes: in the process-wide mapping, or
    inside a :func:`use_kernel_mapping` block in that block's only.

    :param mapping: ``{layer name: {device key: repository | {Mode: repository} |
        {CapabilityRange: repository | {Mode: repository}}}}`` (see the module doc).
    :param inherit_mapping: True merges into the current mapping; False replaces it.
    :raises MappingError: malformed; :raises UnknownDeviceError: a device no backend
        provides (nothing is registered).

    Example::

        register_kernel_mapping({"SiluAndMul": {"cuda": LayerRepository(
            "kernels-community/activation", layer_name="SiluAndMul", version=1)}})
    """
    global _global
    new = (current_mapping() if inherit_mapping else _EMPTY).merged(mapping)
    if _ACTIVE.get() is None:
        _global = new
    else:
        _ACTIVE.set(new)


@contextmanager
def use_kernel_mapping(mapping: Mapping[str, Any], *, inherit_mapping: bool = True) -> Iterator[KernelMapping]:
    """Use ``mapping`` (as for :func:`register_kernel_mapping`) inside a ``with`` block, which
    nests; ``inherit_mapping=False`` hides the outer ones. The ``with`` target: the mapping in effect.

    Example::

        with use_kernel_mapping({"RMSNorm": {"mlu": LocalLayerRepository(path,
                                                      layer_name="RMSNorm")}}):
            kernelize(model, mode=Mode.INFERENCE, device="mlu")
    """
    new = (current_mapping() if inherit_mapping else _EMPTY).merged(mapping)
    token = _ACTIVE.set(new)
    try:
        yield new
    finally:
        _ACTIVE.reset(token)


def describe_device(device: DeviceLike) -> str:
    """``cuda (backend rocm, capability 9.4)``: how messages name a device."""
    extra = [f"backend {device.backend}"] if device.backend != device.device_type else []
    extra.append("no capability reported" if device.capability is None else
                 f"capability {format_capability(device.capability)}")
    extra += ["emulated"] if getattr(device, "emulated", False) else []
    return f"{device.device_type} ({', '.join(extra)})"
