"""Plain data about devices, backends and the running system.

:class:`DeviceInfo` is what a backend's ``detect_device`` hook returns,
:class:`BackendSpec` is what a backend declares about itself, and
:class:`SystemInfo` describes the host (CPU arch, OS, torch, ABI). None of these
import torch; :meth:`SystemInfo.current` imports it only when it is installed.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import platform
import re
import sys
import sysconfig
from importlib.metadata import PackageNotFoundError, version
from types import ModuleType
from typing import Any

from ._record import field, record
from .errors import DeviceError

__all__ = ["DeviceInfo", "BackendSpec", "PyDepend", "SystemInfo", "DeviceRequest", "parse_device"]

_NAME_RE = re.compile(r"^[a-z][a-z0-9_]{0,31}$")


@record
class DeviceInfo:
    """What a backend found on this machine (returned by the ``detect_device`` hook).

    Validated on construction (a :class:`ValueError` names the field and the value).

    Attributes:
        backend: backend name, e.g. ``"cuda"`` or ``"mlu"``.
        device_type: the torch device type, e.g. ``"cuda"``, ``"mps"``, ``"mlu"``.
        count: number of devices present (>= 0).
        runtime_version: the runtime version exactly as the vendor reports it
            (``"12.8"``, ``"4030"``, ``"8.3.RC1"``), or None when not readable.
        name: the device's name (``"MLU590-H8"``; device ``index``, else device 0), or None.
        capability: the device's ``(major, minor)`` compute capability, or None.
        arch: the device's architecture as builds name it in ``backend.archs`` (``gfx90a``,
            ``mp_22``, ``Ascend910B2C``), or None (CUDA builds name capabilities).
        extension_version: version of the vendor's PyTorch extension, or None.
        emulated: True when the device is emulated on the CPU (never real hardware).
        index: the device index a caller asked for (name, capability and arch are its), or None
            for "the backend's devices" (those facts are device 0's).
        notes: human-readable remarks (e.g. a version string that could not be parsed).
    """

    backend: str
    device_type: str
    count: int
    runtime_version: str | None = None
    name: str | None = None
    capability: tuple[int, int] | None = None
    extension_version: str | None = None
    emulated: bool = False
    arch: str | None = None
    index: int | None = None
    notes: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        for field_name in ("backend", "device_type"):
            if not isinstance(value := getattr(self, field_name), str) or not _NAME_RE.match(value):
                raise ValueError(f"{field_name}: {value!r} is not a valid backend/device name "
                                 "(lowercase letters, digits, _; at most 32 characters)")
        if not _is_int(self.count) or self.count < 0:
            raise ValueError(f"count: must be an integer >= 0 (got {self.count!r})")
        if self.index is not None and (not _is_int(self.index) or self.index < 0):
            raise ValueError(f"index: must be an integer >= 0 or None (got {self.index!r})")
        for field_name in ("runtime_version", "name", "extension_version", "arch"):
            if (value := getattr(self, field_name)) is not None and not isinstance(value, str):
                raise ValueError(f"{field_name}: must be a string or None (got {value!r})")
        if not isinstance(self.emulated, bool):
            raise ValueError(f"emulated: must be True or False (got {self.emulated!r})")
        cap = self.capability
        if cap is not None:
            if not isinstance(cap, (tuple, list)) or len(cap) != 2 or not all(_is_int(c) and c >= 0 for c in cap):
                raise ValueError(f"capability: must be a (major, minor) pair of integers >= 0 or None (got {cap!r})")
            object.__setattr__(self, "capability", (int(cap[0]), int(cap[1])))
        notes = self.notes
        if isinstance(notes, str) or not all(isinstance(n, str) for n in notes):
            raise ValueError(f"notes: must be a sequence of strings (got {notes!r})")
        object.__setattr__(self, "notes", tuple(notes))

    def replace(self, **changes: Any) -> DeviceInfo:
        """A copy with ``changes`` applied (validated again)."""
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {**dataclasses.asdict(self), "capability": list(self.capability) if self.capability else None,
                "notes": list(self.notes)}

    @property
    def torch_device(self) -> str:
        """The torch device string, e.g. ``"cuda:1"`` or ``"mlu"``."""
        return self.device_type if self.index is None else f"{self.device_type}:{self.index}"

    def summary(self) -> str:
        """One line for humans: type, count, name, runtime, and an emulation label."""
        parts = [f"{self.backend} ({self.device_type}) x{self.count}", self.name,
                 self.runtime_version and f"runtime {self.runtime_version}",
                 self.capability and "capability {}.{}".format(*self.capability),
                 self.arch and f"arch {self.arch}",
                 self.emulated and "EMULATED on CPU, not real hardware"]
        return ", ".join(p for p in parts if p)


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


@record
class PyDepend:
    """A ``python-depends`` name a kernel may declare: the pip package and the module whose
    presence shows it is installed (None: nothing to import, e.g. a native library)."""

    pip: str
    module: str | None


#: ``python-depends`` names a kernel for any backend may declare: kernels 0.17.2's general
#: table and ours; each backend adds its own (:attr:`BackendSpec.python_depends`).
GENERAL_PYTHON_DEPENDS: dict[str, PyDepend] = {
    "einops": PyDepend("einops", "einops"),
    "helion": PyDepend("helion", "helion"),
    "numpy": PyDepend("numpy", "numpy"),
    "triton": PyDepend("triton", "triton"),
    "tvm-ffi": PyDepend("apache-tvm-ffi", "tvm_ffi"),
}


@record
class BackendSpec:
    """What a backend plugin declares about itself (the ``backend_spec`` hook).

    Attributes:
        name: backend name, used in noarch variant names (``torch-<name>``) and mappings.
        device_type: torch device type served (``"mps"`` for metal).
        display_name: human name, e.g. ``"Cambricon MLU"``.
        priority: preference when no device is requested; the highest available wins.
        arch_tokens: prefixes of the backend token in arch variant names that belong
            to this backend (``("cu",)`` for CUDA, ``("cann",)`` for Ascend).
        python_depends: ``python-depends`` names known for this backend besides the general
            ones (:data:`GENERAL_PYTHON_DEPENDS`): the one way a backend declares them.
        capability_label: what the backend calls its capability (``"compute capability"``).
    """

    name: str
    device_type: str
    display_name: str
    priority: int = 0
    arch_tokens: tuple[str, ...] = ()
    python_depends: dict[str, PyDepend] = field(default_factory=dict)
    capability_label: str = "capability"

    def known_python_depends(self) -> dict[str, PyDepend]:
        """The ``python-depends`` names a kernel for this backend may declare (its own win)."""
        return {**GENERAL_PYTHON_DEPENDS, **self.python_depends}

    def __post_init__(self) -> None:
        for v in (self.name, self.device_type):
            if not _NAME_RE.match(v):
                raise ValueError(f"backend spec name {v!r} is not valid (lowercase letters, digits, _)")


@record
class SystemInfo:
    """Facts about the host that decide which arch variants can load.

    Attributes:
        cpu: ``"x86_64"`` or ``"aarch64"`` (normalised from ``arm64`` / ``AMD64``).
        os: ``"linux"``, ``"darwin"`` or ``"windows"``.
        torch_version: installed torch ``(major, minor)`` or None.
        cxx11_abi: ``torch.compiled_with_cxx11_abi()`` on Linux, else None (as kernels).
        macos_version: ``(major, minor)`` on macOS, else None.
        tvm_ffi_version: installed tvm-ffi ``(major, minor)`` or None.
        free_threaded: an interpreter built without the GIL: it cannot load ``abi3``
            extensions, only ``abi3t`` ones (Python >= 3.15).
        python_version: the interpreter's ``(major, minor)`` (default: this one's).
        mlx: whether ``mlx`` is installed (``mlx-<backend>`` variants need it).
    """

    cpu: str
    os: str
    torch_version: tuple[int, int] | None = None
    cxx11_abi: bool | None = None
    macos_version: tuple[int, int] | None = None
    tvm_ffi_version: tuple[int, int] | None = None
    free_threaded: bool = False
    python_version: tuple[int, int] = (sys.version_info[0], sys.version_info[1])
    mlx: bool = False

    @classmethod
    def current(cls) -> SystemInfo:
        """Read the facts of this machine (imports torch when it is installed)."""
        torch = torch_or_none()
        macos = major_minor(platform.mac_ver()[0]) if sys.platform == "darwin" else None
        try:
            tvm = major_minor(version("apache-tvm-ffi"))
        except PackageNotFoundError:
            tvm = None
        os_ = "windows" if platform.system().lower().startswith("win") else platform.system().lower()
        machine = platform.machine().lower()
        return cls(
            cpu={"amd64": "x86_64", "x64": "x86_64", "arm64": "aarch64"}.get(machine, machine), os=os_,
            torch_version=None if torch is None else major_minor(str(torch.__version__)),
            cxx11_abi=None if torch is None or os_ != "linux" else bool(torch.compiled_with_cxx11_abi()),
            macos_version=macos,
            tvm_ffi_version=tvm,
            free_threaded=bool(sysconfig.get_config_var("Py_GIL_DISABLED")),
            mlx=importlib.util.find_spec("mlx") is not None,
        )

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (versions as ``"X.Y"``)."""
        return {k: version_text(v) if k.endswith("_version") else v for k, v in dataclasses.asdict(self).items()}


def version_text(v: tuple[int, int] | None) -> str | None:
    """``(12, 8)`` -> ``"12.8"``; None stays None."""
    return None if v is None else f"{v[0]}.{v[1]}"


def torch_or_none() -> ModuleType | None:
    """``torch`` when it is importable (importing it), else None.

    Never raises because torch is absent or cannot be imported (a missing ``libcudnn``, say:
    :data:`torch_import_error` then says why); a torch already in ``sys.modules`` is
    returned without looking at the import path.
    """
    global torch_import_error
    if "torch" not in sys.modules and importlib.util.find_spec("torch") is None:
        return None
    try:
        import torch
    except ImportError as e:  # installed, but broken: the callers report it as not usable
        torch_import_error = f"{type(e).__name__}: {e}"
        return None
    return torch


#: Why an installed torch could not be imported (see :func:`torch_or_none`), else None.
torch_import_error: str | None = None


def no_torch_reason() -> str:
    """Why :func:`torch_or_none` gave None, as a backend's "no device" reason."""
    if torch_import_error:
        return f"the installed torch cannot be imported ({torch_import_error}): reinstall it"
    return "torch is not installed"


def major_minor(text: str | None) -> tuple[int, int] | None:
    """``"12.8"`` / ``"6.3.42131-fa1d"`` -> ``(12, 8)`` / ``(6, 3)``; None when unparsable."""
    m = re.match(r"^(\d+)\.(\d+)", text or "")
    return (int(m.group(1)), int(m.group(2))) if m else None


@record
class DeviceRequest:
    """A parsed device request: a device type and an optional index."""

    device_type: str
    index: int | None = None


_DEVICE_RE = re.compile(r"^([a-z][a-z0-9_]{0,31})(?::(\d{1,6}))?$")


def parse_device(device: object) -> DeviceRequest:
    """Parse ``"mlu"``, ``"cuda:1"``, a ``torch.device`` or a :class:`DeviceInfo`.

    Raises :class:`~kernel_plugins.errors.DeviceError` naming the bad input.
    """
    if isinstance(device, DeviceInfo):
        return DeviceRequest(device.device_type, device.index)
    type_attr = getattr(device, "type", None)
    if type_attr is not None and not isinstance(device, str):  # a torch.device
        return DeviceRequest(str(type_attr), getattr(device, "index", None))
    if not isinstance(device, str):
        raise DeviceError(f"device must be a string like 'cuda' or 'mlu:1' or a torch.device, "
                          f"got {type(device).__name__}")
    m = _DEVICE_RE.match(device.strip())
    if not m:
        raise DeviceError(f"invalid device string {device!r}: expected '<type>' or '<type>:<index>' with a "
                          "lowercase type and a non-negative integer index, e.g. 'cuda', 'mlu:1'")
    return DeviceRequest(m.group(1), None if m.group(2) is None else int(m.group(2)))
