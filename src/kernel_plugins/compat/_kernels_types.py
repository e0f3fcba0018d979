"""Value types of the ``kernels`` API: devices with properties, variants, metadata."""

from __future__ import annotations

import json
import os
from enum import Flag, auto
from pathlib import Path
from typing import Any

from .._record import record
from ..layers import CapabilityRange

__all__ = ["CUDAProperties", "ROCMProperties", "Device", "KernelizeFallback", "RepoInfo", "Metadata", "VariantName",
           "VariantAccepted", "VariantRejected"]


def _check_int(value: object, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{what} must be an int such as 75 (capability 7.5), got {value!r}")
    return value


@record
class _CapabilityProperties:
    min_capability: int
    max_capability: int

    def __post_init__(self) -> None:
        _check_int(self.min_capability, "min_capability")
        _check_int(self.max_capability, "max_capability")
        self.validate_capability_range()

    def validate_capability_range(self) -> None:
        """Raise ValueError when ``min_capability > max_capability``."""
        if self.min_capability > self.max_capability:
            raise ValueError(f"min_capability ({self.min_capability}) must be <= max_capability "
                             f"({self.max_capability})")

    def capability_range(self) -> CapabilityRange:
        """The same range as a :class:`~kernel_plugins.layers.CapabilityRange` (75 -> 7.5)."""
        return CapabilityRange(min=divmod(self.min_capability, 10), max=divmod(self.max_capability, 10))


@record
class CUDAProperties(_CapabilityProperties):
    """CUDA compute capabilities a mapping entry serves, as ints (75 = 7.5), inclusive.

    Example::

        Device(type="cuda", properties=CUDAProperties(min_capability=75, max_capability=90))
    """


@record
class ROCMProperties(_CapabilityProperties):
    """ROCm capabilities a mapping entry serves, as ints (115 = 11.5), inclusive."""


@record
class Device:
    """A mapping key: a device type with optional capability properties.

    Args:
        type: ``"cuda"``, ``"rocm"``, ``"mps"``, ``"xpu"``, ``"npu"``, ``"cpu"``, or any
            backend kernel-plugins has (``"mlu"``, ``"musa"``, ``"neuron"`` ...).
        properties: :class:`CUDAProperties` (only with ``"cuda"``) or
            :class:`ROCMProperties` (only with ``"rocm"``).
    """

    type: str
    properties: CUDAProperties | ROCMProperties | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.type, str) or not self.type:
            raise TypeError(f"Device type must be a non-empty string, got {self.type!r}")
        if isinstance(self.properties, CUDAProperties) and self.type != "cuda":
            raise ValueError("CUDAProperties is only supported for 'cuda' devices.")
        if isinstance(self.properties, ROCMProperties) and self.type != "rocm":
            raise ValueError("ROCMProperties is only supported for 'rocm' devices.")
        if self.properties is not None and not isinstance(self.properties, (CUDAProperties, ROCMProperties)):
            raise TypeError("Device properties must be CUDAProperties or ROCMProperties, got "
                            f"{type(self.properties).__name__}")


class KernelizeFallback(Flag):
    """When ``kernelize`` may keep a layer's original forward (as in ``kernels``).

    kernel-plugins decides per candidate: ``NONE`` raises when no kernel fits; every
    other value keeps the original forward when nothing fits, and a kernel that cannot
    be loaded on the device is skipped with a warning in every case.
    """

    NONE = 0
    NO_LAYER = auto()
    NO_DEVICE = auto()
    NO_COMPATIBLE_PROPERTIES = auto()
    NO_COMPATIBLE_MODE = auto()
    CANNOT_LOAD = auto()

    DEFAULT = NO_LAYER | NO_DEVICE | NO_COMPATIBLE_PROPERTIES | NO_COMPATIBLE_MODE
    ALL = DEFAULT | CANNOT_LOAD


@record
class RepoInfo:
    """Where a Hub kernel came from: ``repo_id`` and the ``revision`` (commit sha)."""

    repo_id: str
    revision: str


def _field(name: str, doc: str, convert: Any = None) -> Any:
    """A read-only property of :class:`Metadata` giving the parsed field ``name``."""
    return property(lambda self: (convert or (lambda v: v))(getattr(self._data, name)), doc=doc)


class Metadata:
    """A variant's parsed ``metadata.json`` (read with kernel-plugins' validation). The
    values are kernel-plugins' own types where kernels has Rust classes (see
    ``docs/compat-kernels.md``)."""

    def __init__(self, data: Any) -> None:
        self._data = data

    @staticmethod
    def read_from_file(metadata_path: os.PathLike[str] | str) -> Metadata:
        """Parse ``metadata.json`` at ``metadata_path``; ValueError on any I/O or parse error."""
        try:
            raw = Path(metadata_path).read_bytes()
        except OSError as e:
            raise ValueError(f"cannot read {metadata_path}: {e}") from e
        return Metadata.from_bytes(raw, where=str(metadata_path))

    @staticmethod
    def from_bytes(bytes: bytes, where: str = "metadata.json") -> Metadata:  # noqa: A002
        """Parse ``metadata.json`` content; ValueError on any parse error."""
        from ..metadata import parse_metadata

        try:
            data = json.loads(bytes)
        except ValueError as e:
            raise ValueError(f"{where} is not valid JSON: {e}") from e
        return Metadata(parse_metadata(data, where=where))

    id = _field("id", "Identifier unique to the kernel version and backend (the import name).", str)
    name = _field("name", "The kernel name.", str)
    version = _field("version", "The kernel's major version.", int)
    kernels_minver = _field("kernels_minver", 'The minimum ``kernels`` release the build needs '
                            '(``"0.17.0"``; a ``Version`` in kernels), or None.')
    license = _field("license", "The license.", str)
    upstream = _field("upstream", "The upstream repository, if declared.")
    source = _field("source", "The source repository, if declared.")
    python_depends = _field("python_depends", "Required Python dependencies.", list)
    kernel_depends = _field("kernel_depends", "The kernels this variant depends on (``repo_id``, "
                            "``version`` or ``revision``).", list)
    backend = _field("backend", "The backend field (``type``, ``archs``).")
    build_layout = _field("build_layout", 'How the files lie: ``"files"`` or ``"zip"`` (a '
                          "``BuildLayout`` in kernels).")
    digest = _field("digest", "Per-file hashes of the variant (``algorithm``, ``files``), or None.")
    provenance = _field("provenance", "The build's provenance as declared (a dict; a ``Provenance`` "
                        "in kernels), or None.")

    def __repr__(self) -> str:
        return f"Metadata(name={self.name!r}, id={self.id!r}, version={self.version})"


@record
class VariantName:
    """A build variant, named as in ``build/`` (``variant_str``)."""

    variant_str: str

    def __str__(self) -> str:
        return self.variant_str


@record
class VariantAccepted:
    """A variant compatible with this system."""

    variant: VariantName


@record
class VariantRejected:
    """A variant incompatible with this system, with the reason."""

    variant: VariantName
    reason: str
