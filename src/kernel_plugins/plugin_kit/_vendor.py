"""Generic steps of finding an out-of-tree PyTorch vendor stack (part of the plugin kit):
a vendor extension (``torch_<name>``) registering the device type ``<name>`` in PyTorch's
one out-of-tree slot, PrivateUse1. Every name is a parameter: look without importing, never
import a vendor package while another backend owns PrivateUse1, name the cause of a broken
install, the detection skeleton (:func:`find_vendor_devices`), defensive property readers
and the wording of notes. Importing this module imports neither torch nor any vendor package.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import importlib.util
import re
import sys
from collections.abc import Callable, Iterable
from types import ModuleType
from typing import TYPE_CHECKING, Any

from .._record import record
from ..device import DeviceInfo, major_minor
from ..device import torch_or_none as torch_if_installed
from ..errors import KernelImportError, PluginError

if TYPE_CHECKING:
    from ..provenance import KernelLoad

#: The name PyTorch gives PrivateUse1 until a backend renames it.
_UNNAMED_PRIVATEUSE1 = "privateuseone"


def module_installed(name: str) -> bool:
    """Whether the module ``name`` can be imported, without importing it.

    A module blocked with ``sys.modules[name] = None`` counts as absent, and so does a
    name whose spec cannot be looked up (``ValueError``, or ``ImportError`` from a
    missing parent package).

    >>> module_installed("sys"), module_installed("surely_not_installed_here")
    (True, False)
    """
    if name in sys.modules:
        return sys.modules[name] is not None
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def vendor_version(name: str) -> str | None:
    """The version of the vendor package ``name``, without importing it: the imported
    module's ``__version__``, else its distribution's; None when neither is known."""
    module = sys.modules.get(name)
    if module is not None:
        version = getattr(module, "__version__", None)
        return None if version is None else str(version)
    try:
        return importlib.metadata.version(name)
    except (importlib.metadata.PackageNotFoundError, ValueError):
        return None


def privateuse1_name(torch: ModuleType | None = None) -> str | None:
    """The name PyTorch's PrivateUse1 device slot has in this process.

    ``"privateuseone"`` while no backend has claimed it; None when torch is not
    installed or too old to say.

    :param torch: the torch module (default: :func:`torch_if_installed`).
    """
    if (torch := torch or torch_if_installed()) is None:
        return None
    get = getattr(torch._C, "_get_privateuse1_backend_name", None)
    return None if get is None else str(get())


def privateuse1_conflict(backend: str, torch: ModuleType | None = None) -> str | None:
    """The name of *another* backend that owns PrivateUse1 in this process, or None.

    None when the slot is unclaimed, already ``backend``, or torch cannot say.
    PyTorch allows one PrivateUse1 name per process, so a non-None answer means
    ``backend``'s device cannot exist here.

    :param backend: the device type the caller would register, e.g. ``"mlu"``.
    :param torch: the torch module (default: :func:`torch_if_installed`).
    """
    taken = privateuse1_name(torch)
    return None if taken in (None, _UNNAMED_PRIVATEUSE1, backend) else taken


def check_privateuse1_free(vendor_module: str, backend: str) -> None:
    """Refuse to import ``vendor_module`` while another backend owns PrivateUse1 here.

    Nothing is raised when the vendor package is already imported (it owns the slot
    or failed on its own), or when the slot is free or named ``backend``.

    :param vendor_module: the vendor package, e.g. ``"torch_mlu"``.
    :param backend: the backend and device type it registers, e.g. ``"mlu"``.
    :raises PluginError: the slot is taken; the message names both stacks and the fix.
    """
    taken = privateuse1_conflict(backend)
    if vendor_module not in sys.modules and taken is not None:
        raise PluginError(
            f"{vendor_module} is installed, but PyTorch's out-of-tree device slot (PrivateUse1) "
            f"is already '{taken}' in this process and PyTorch allows one per process, so "
            f"{vendor_module} was not imported; use '{backend}' in a process that does not "
            f"load the '{taken}' stack (TORCH_DEVICE_BACKEND_AUTOLOAD=0 stops automatic loading)"
        )


def import_vendor(vendor_module: str, hint: str) -> ModuleType:
    """Import the installed vendor package; a broken install becomes a :class:`PluginError`.

    :param vendor_module: the package to import, e.g. ``"torch_mlu"``.
    :param hint: how to fix a failed import, appended after ``"; "``, e.g.
        ``"check that NEUWARE_HOME points at a Neuware install matching torch_mlu"``.
    :raises PluginError: any exception of the import, named with its type and chained.
    """
    try:
        return importlib.import_module(vendor_module)
    except Exception as e:  # noqa: BLE001 - a broken install is reported with its cause
        raise PluginError(
            f"{vendor_module} is installed but importing it failed ({type(e).__name__}: {e}); "
            f"{hint}"
        ) from e


def import_vendor_for_kernel(vendor_module: str, device: DeviceInfo, load: KernelLoad, *,
                             hint: str | None = None) -> ModuleType:
    """Import ``vendor_module`` before a kernel whose native code links against it.

    The body of a ``load_kernel`` hook that only imports the vendor (then returns None).

    :param hint: how to fix a failed import (default: ``"install <vendor_module> for this torch"``).
    :raises KernelImportError: the import failed; names the kernel, variant, device and cause.
    """
    try:
        return importlib.import_module(vendor_module)
    except Exception as e:  # noqa: BLE001 - any failure is the kernel's import failure
        fix = hint if hint is not None else f"install {vendor_module} for this torch"
        raise KernelImportError(
            f"kernel {load.repo_id} ({load.variant}) for {device.torch_device} needs "
            f"{vendor_module}, which failed to import ({type(e).__name__}: {e}); {fix}"
        ) from e


def capability_of(props: Any) -> tuple[int, int] | None:
    """``(props.major, props.minor)`` when both are integers >= 0, else None.

    >>> from types import SimpleNamespace
    >>> capability_of(SimpleNamespace(major=5, minor=0)), capability_of(SimpleNamespace())
    ((5, 0), None)
    """
    major, minor = getattr(props, "major", None), getattr(props, "minor", None)
    ok = isinstance(major, int) and isinstance(minor, int) and major >= 0 and minor >= 0
    return (major, minor) if ok else None  # type: ignore[return-value]


def missing_capability_note(device_type: str, props: Any, index: int = 0) -> str:
    """The note for device properties without a usable capability (see :func:`capability_of`)."""
    return f"torch.{device_type}.get_device_properties({index}) has no integer major/minor ({props!r})"


def device_name_of(props: Any) -> str | None:
    """``str(props.name)``, or None when it is missing or empty."""
    return str(getattr(props, "name", "")) or None


def torch_major_minor(torch: ModuleType | None = None) -> tuple[int, int] | None:
    """The installed torch's ``(major, minor)``; None when torch is absent or unparsable.

    :param torch: the torch module (default: :func:`torch_if_installed`).
    """
    torch = torch or torch_if_installed()
    return None if torch is None else major_minor(str(torch.__version__))


def match_version(pattern: re.Pattern[str], text: object) -> tuple[int, int] | None:
    """``(major, minor)`` from the first two groups of ``pattern`` matched on ``text``.

    ``text`` is stripped first; None when it is not a string or does not match.

    >>> match_version(re.compile(r"(\\d+)\\.(\\d+)"), " 3.13 ")
    (3, 13)
    """
    m = pattern.match(text.strip()) if isinstance(text, str) else None
    return (int(m.group(1)), int(m.group(2))) if m else None


def noarch_only_note(backend: str) -> str:
    """``"only torch-<backend> and torch-universal variants can load"``."""
    return f"only torch-{backend} and torch-universal variants can load"


def unparsable_note(what: str, text: object, expected: str, *, backend: str | None = None) -> str:
    """``"unparsable <what> <text!r> (expected <expected>)"``, plus the noarch-only tail.

    :param what: where the text came from, e.g. ``"torch.version.cann"``.
    :param expected: what a good value looks like, e.g. ``"e.g. '8.3.RC1'"``.
    :param backend: when given, ``"; "`` + :func:`noarch_only_note` is appended
        (the version gates arch variants, so only noarch ones can load).
    """
    note = f"unparsable {what} {text!r} (expected {expected})"
    return note if backend is None else f"{note}; {noarch_only_note(backend)}"


def version_note(text: object, parse: Callable[[object], object | None], *, what: str, expected: str,
                 backend: str | None = None, unknown: str | None = None,
                 unknown_texts: Iterable[str] = ()) -> str | None:
    """A note about a vendor version ``text``, or None when ``parse`` accepts it.

    :param parse: the vendor's parser; returns None for text it cannot read.
    :param what: where the text came from, e.g. ``"torch.version.musa"``.
    :param expected: what a good value looks like (see :func:`unparsable_note`).
    :param backend: adds the noarch-only tail to the "unparsable" note.
    :param unknown: the note when the version is not known at all (``text`` None, or
        one of ``unknown_texts``); None treats those like any unparsable text.
    :param unknown_texts: values the vendor writes for "unknown" (compared without
        case and surrounding blanks), e.g. ``("not known",)``.
    """
    markers = {t.strip().lower() for t in unknown_texts}
    if unknown is not None and (text is None or str(text).strip().lower() in markers):
        return unknown
    if parse(text) is not None:
        return None
    return unparsable_note(what, text, expected, backend=backend)


@record
class VendorDevices:
    """A vendor stack with at least one device, as :func:`find_vendor_devices` found it.

    Attributes:
        backend: the backend name. device_type: the torch device type.
        torch: the torch module. vendor: the imported vendor package.
        module: ``torch.<device_type>``. count: the number of devices (> 0).
        index: the device described (its properties by default; ``DeviceInfo.index``), None: device 0.
    """

    backend: str
    device_type: str
    torch: ModuleType
    vendor: ModuleType
    module: Any
    count: int
    index: int | None = None

    @property
    def emulated(self) -> bool:
        """Whether ``torch.<device_type>`` is an emulated module (kernel_plugins_testing)."""
        return bool(getattr(self.module, "__kernel_plugins_emulated__", False))

    @property
    def extension_version(self) -> str | None:
        """``str(vendor.__version__)``, or None when the vendor has none."""
        version = getattr(self.vendor, "__version__", None)
        return None if version is None else str(version)

    def properties(self, index: int | None = None) -> Any:
        """``torch.<device_type>.get_device_properties(index)`` (default: the device described)."""
        return self.module.get_device_properties(index if index is not None else self.index or 0)

    def info(self, *, runtime_version: str | None = None, name: str | None = None,
             capability: tuple[int, int] | None = None, notes: Iterable[str] = (),
             arch: str | None = None) -> DeviceInfo:
        """The :class:`~kernel_plugins.device.DeviceInfo` to return from ``detect_device``.

        Backend, device type, count, extension version and the emulated flag come from
        this object; the rest is the vendor's.
        """
        return DeviceInfo(backend=self.backend, device_type=self.device_type, count=self.count,
                          runtime_version=runtime_version, name=name, capability=capability, arch=arch,
                          extension_version=self.extension_version, emulated=self.emulated, notes=tuple(notes),
                          index=self.index)


def find_vendor_devices(backend: str, vendor_module: str, device_type: str, *,
                        import_hint: str) -> VendorDevices | None:
    """The generic part of ``detect_device`` for a PrivateUse1 vendor stack.

    In order: None when torch or ``vendor_module`` is not installed (nothing is
    imported); :func:`check_privateuse1_free`; :func:`import_vendor`; an error when
    ``torch.<device_type>`` does not exist after the import; None when it is not
    available or has no device.

    :param backend: the backend name, e.g. ``"mlu"``.
    :param vendor_module: the vendor package, e.g. ``"torch_mlu"``.
    :param device_type: the torch device type it registers, e.g. ``"mlu"``.
    :param import_hint: how to fix a failed import (see :func:`import_vendor`).
    :raises PluginError: PrivateUse1 is taken by another backend, the vendor package
        fails to import, or it does not register ``torch.<device_type>``.
    """
    torch = torch_if_installed()
    if torch is None or not module_installed(vendor_module):
        return None
    check_privateuse1_free(vendor_module, backend)
    vendor = import_vendor(vendor_module, import_hint)
    module = getattr(torch, device_type, None)
    if module is None:
        raise PluginError(f"{vendor_module} was imported but torch.{device_type} does not exist: this "
                          f"{vendor_module} does not register itself with torch {torch.__version__}; "
                          f"install the matching {vendor_module}")
    if not module.is_available() or (count := int(module.device_count())) <= 0:
        return None
    return VendorDevices(backend, device_type, torch, vendor, module, count)


def synchronize_device(device: DeviceInfo, *, accelerator_fallback: bool = False) -> bool:
    """``torch.<device_type>.synchronize([index])``; the body of a ``synchronize`` hook.

    :param device: the device (its ``index``, when set, is passed on).
    :param accelerator_fallback: when ``torch.<device_type>`` has no ``synchronize``,
        call ``torch.accelerator.synchronize(index)`` instead (else the missing
        attribute raises).
    :return: True (the hook's "handled").
    """
    import torch

    if accelerator_fallback and not hasattr(getattr(torch, device.device_type, None), "synchronize"):
        torch.accelerator.synchronize(device.index)
    else:
        getattr(torch, device.device_type).synchronize(*([] if device.index is None else [device.index]))
    return True
