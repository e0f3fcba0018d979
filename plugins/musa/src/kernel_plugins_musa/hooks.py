"""kernel-plugins hooks of the Moore Threads MUSA backend (entry point ``musa``).

Detection imports ``torch_musa`` only when it is installed. Arch variants carry the
token ``musa<major><minor>`` of the MUSA SDK in ``torch.version.musa`` and need an
exact major.minor match; ``torch-musa`` and ``torch-universal`` follow.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from types import ModuleType
from typing import TYPE_CHECKING, Any

from kernel_plugins.device import BackendSpec, DeviceInfo, SystemInfo
from kernel_plugins.errors import KernelImportError, PluginError
from kernel_plugins.hookspecs import hookimpl
from kernel_plugins.variants import arch_variant_names, noarch_variant_names, version_token_reason

from .versions import TOKEN_PREFIX, decode_musa_token, musa_token, parse_musa_version

if TYPE_CHECKING:
    from kernel_plugins.importer import KernelLoad
    from kernel_plugins.variants import Variant

__all__ = [
    "NAME",
    "VENDOR",
    "backend_spec",
    "detect_device",
    "list_variants",
    "explain_variant",
    "load_kernel",
    "synchronize",
    "emulate_device",
]

NAME = "musa"
VENDOR = "torch_musa"


def _torch() -> ModuleType | None:
    if "torch" not in sys.modules and importlib.util.find_spec("torch") is None:
        return None
    import torch

    return torch


def _installed(module: str) -> bool:
    """Whether ``module`` can be imported, without importing it."""
    if module in sys.modules:
        return sys.modules[module] is not None
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def _check_privateuse1(torch: ModuleType) -> None:
    """Refuse to import the vendor package when another backend owns PrivateUse1 here."""
    get = getattr(torch._C, "_get_privateuse1_backend_name", None)
    taken = None if get is None else str(get())
    if VENDOR not in sys.modules and taken not in (None, "privateuseone", NAME):
        raise PluginError(
            f"{VENDOR} is installed, but PyTorch's out-of-tree device slot (PrivateUse1) is "
            f"already '{taken}' in this process and PyTorch allows one per process, so "
            f"{VENDOR} was not imported; use '{NAME}' in a process that does not load the "
            f"'{taken}' stack (TORCH_DEVICE_BACKEND_AUTOLOAD=0 stops automatic loading)"
        )


def _import_vendor() -> ModuleType:
    try:
        return importlib.import_module(VENDOR)
    except Exception as e:  # noqa: BLE001 - a broken install is reported with its cause
        raise PluginError(
            f"{VENDOR} is installed but importing it failed ({type(e).__name__}: {e}); check "
            "that the MUSA SDK libraries (libmusart) are on LD_LIBRARY_PATH and match torch_musa"
        ) from e


def _capability(props: Any) -> tuple[int, int] | None:
    major, minor = getattr(props, "major", None), getattr(props, "minor", None)
    if isinstance(major, int) and isinstance(minor, int) and major >= 0 and minor >= 0:
        return (major, minor)
    return None


def _runtime_note(text: object) -> str | None:
    if text is None:
        return (
            "torch.version.musa is not set: the MUSA SDK version is unknown, so only "
            "torch-musa and torch-universal variants can load"
        )
    if parse_musa_version(text) is None:
        return (
            f"unparsable torch.version.musa {text!r} (expected major*1000+minor*10+patch, e.g. "
            "'4030' for MUSA 4.3.0); only torch-musa and torch-universal variants can load"
        )
    return None


@hookimpl
def backend_spec() -> BackendSpec:
    """Declare the musa backend."""
    return BackendSpec(
        name=NAME,
        device_type="musa",
        display_name="Moore Threads MUSA",
        priority=95,
        arch_tokens=(TOKEN_PREFIX,),
        capability_label="MUSA architecture (major*10+minor)",
    )


@hookimpl
def detect_device() -> DeviceInfo | None:
    """``torch_musa`` installed and ``torch.musa.is_available()``."""
    torch = _torch()
    if torch is None or not _installed(VENDOR):
        return None
    _check_privateuse1(torch)
    vendor = _import_vendor()
    musa = getattr(torch, "musa", None)
    if musa is None:
        raise PluginError(
            f"{VENDOR} was imported but torch.musa does not exist: this torch_musa does not "
            f"register itself with torch {torch.__version__}; install the matching torch_musa"
        )
    if not musa.is_available():
        return None
    count = int(musa.device_count())
    if count <= 0:
        return None
    notes: list[str] = []
    props = musa.get_device_properties(0)
    capability = _capability(props)
    if capability is None:
        notes.append(f"torch.musa.get_device_properties(0) has no integer major/minor ({props!r})")
    runtime = getattr(torch.version, "musa", None)
    note = _runtime_note(runtime)
    if note:
        notes.append(note)
    ext = getattr(vendor, "__version__", None)
    return DeviceInfo(
        backend=NAME,
        device_type="musa",
        count=count,
        runtime_version=None if runtime is None else str(runtime),
        name=str(getattr(props, "name", "")) or None,
        capability=capability,
        extension_version=None if ext is None else str(ext),
        emulated=bool(getattr(musa, "__kernel_plugins_emulated__", False)),
        notes=tuple(notes),
    )


@hookimpl
def list_variants(device: DeviceInfo, system: SystemInfo) -> list[str]:
    """Arch variants for exactly the MUSA SDK major.minor, then ``torch-musa``, universal."""
    version = parse_musa_version(device.runtime_version)
    tokens = [musa_token(version)] if version else []
    return arch_variant_names(system, tokens) + noarch_variant_names(NAME)


@hookimpl
def explain_variant(device: DeviceInfo, system: SystemInfo, variant: Variant) -> str | None:
    """``MUSA 4.2 does not match the system's MUSA 4.3 (...)`` and friends."""
    if variant.token is None or variant.token_prefix != TOKEN_PREFIX:
        return None
    system_version = parse_musa_version(device.runtime_version)
    return version_token_reason(
        "MUSA",
        decode_musa_token(variant.token),
        None if system_version is None else system_version[:2],
        "exact",
        token=variant.token,
    )


@hookimpl
def load_kernel(device: DeviceInfo, load: KernelLoad) -> ModuleType | None:
    """Import ``torch_musa`` first (a MUSA kernel's native code links against it)."""
    try:
        importlib.import_module(VENDOR)
    except Exception as e:  # noqa: BLE001
        raise KernelImportError(
            f"kernel {load.repo_id} ({load.variant}) for {device.torch_device} needs {VENDOR}, "
            f"which failed to import ({type(e).__name__}: {e}); install torch_musa for this torch"
        ) from e
    return None


@hookimpl
def synchronize(device: DeviceInfo) -> bool:
    """``torch.musa.synchronize()`` (for the device's index when one was asked for)."""
    import torch

    if device.index is None:
        torch.musa.synchronize()
    else:
        torch.musa.synchronize(device.index)
    return True


@hookimpl
def emulate_device(count: int, facts: dict[str, Any]) -> bool:
    """Install the ``torch_musa`` stand-ins (see :mod:`kernel_plugins_musa.emulation`)."""
    from .emulation import install

    return install(count, facts)
