"""kernel-plugins hooks of the Cambricon MLU backend (entry point ``mlu``).

Detection imports ``torch_mlu`` only when it is installed. Arch variants carry the
token ``mlu<major><minor>`` of the CNToolkit release the kernel was built with and
need an exact major.minor match; ``torch-mlu`` and ``torch-universal`` follow.
"""

from __future__ import annotations

import importlib
import importlib.util
import re
import sys
from types import ModuleType
from typing import TYPE_CHECKING, Any

from kernel_plugins.device import BackendSpec, DeviceInfo, SystemInfo
from kernel_plugins.errors import KernelImportError, PluginError
from kernel_plugins.hookspecs import hookimpl
from kernel_plugins.variants import arch_variant_names, noarch_variant_names, version_token_reason

from .versions import (
    TOKEN_PREFIX,
    TOOLKIT_ENV,
    decode_mlu_token,
    parse_extension_version,
    parse_toolkit_version,
    read_toolkit_version,
    toolkit_token,
)

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

NAME = "mlu"
VENDOR = "torch_mlu"


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
            "that NEUWARE_HOME and LD_LIBRARY_PATH point at a Neuware install matching torch_mlu"
        ) from e


def _torch_major_minor(torch: ModuleType) -> tuple[int, int] | None:
    m = re.match(r"^(\d+)\.(\d+)", str(torch.__version__))
    return (int(m.group(1)), int(m.group(2))) if m else None


def _capability(props: Any) -> tuple[int, int] | None:
    major, minor = getattr(props, "major", None), getattr(props, "minor", None)
    if isinstance(major, int) and isinstance(minor, int) and major >= 0 and minor >= 0:
        return (major, minor)
    return None


@hookimpl
def backend_spec() -> BackendSpec:
    """Declare the mlu backend."""
    return BackendSpec(
        name=NAME,
        device_type="mlu",
        display_name="Cambricon MLU",
        priority=95,
        arch_tokens=(TOKEN_PREFIX,),
        capability_label="MLU compute capability",
    )


@hookimpl
def detect_device() -> DeviceInfo | None:
    """``torch_mlu`` installed and ``torch.mlu.device_count() > 0``."""
    torch = _torch()
    if torch is None or not _installed(VENDOR):
        return None
    _check_privateuse1(torch)
    vendor = _import_vendor()
    mlu = getattr(torch, "mlu", None)
    if mlu is None:
        raise PluginError(
            f"{VENDOR} was imported but torch.mlu does not exist: this torch_mlu does not "
            f"register itself with torch {torch.__version__}; install the matching torch_mlu"
        )
    if not mlu.is_available():
        return None
    count = int(mlu.device_count())
    if count <= 0:
        return None
    notes: list[str] = []
    props = mlu.get_device_properties(0)
    capability = _capability(props)
    if capability is None:
        notes.append(f"torch.mlu.get_device_properties(0) has no integer major/minor ({props!r})")
    ext_text = getattr(vendor, "__version__", None)
    ext = parse_extension_version(ext_text)
    if ext is None:
        notes.append(
            f"unparsable torch_mlu.__version__ {ext_text!r} (expected e.g. '1.22.0+torch2.4.0')"
        )
    elif ext.torch_major_minor != _torch_major_minor(torch):
        notes.append(
            f"torch_mlu {ext_text} was built for torch {ext.torch}, but torch "
            f"{torch.__version__} is installed"
        )
    toolkit = read_toolkit_version()
    if toolkit.note:
        notes.append(toolkit.note)
    return DeviceInfo(
        backend=NAME,
        device_type="mlu",
        count=count,
        runtime_version=toolkit.text,
        name=str(getattr(props, "name", "")) or None,
        capability=capability,
        extension_version=str(ext_text) if ext_text is not None else None,
        emulated=bool(getattr(mlu, "__kernel_plugins_emulated__", False)),
        notes=tuple(notes),
    )


@hookimpl
def list_variants(device: DeviceInfo, system: SystemInfo) -> list[str]:
    """Arch variants for exactly the CNToolkit major.minor, then ``torch-mlu``, universal."""
    version = parse_toolkit_version(device.runtime_version)
    tokens = [toolkit_token(version)] if version else []
    return arch_variant_names(system, tokens) + noarch_variant_names(NAME)


@hookimpl
def explain_variant(device: DeviceInfo, system: SystemInfo, variant: Variant) -> str | None:
    """``CNToolkit 3.12 does not match the system's CNToolkit 3.13 (...)`` and friends."""
    if variant.token is None or variant.token_prefix != TOKEN_PREFIX:
        return None
    system_version = parse_toolkit_version(device.runtime_version)
    reason = version_token_reason(
        "CNToolkit", decode_mlu_token(variant.token), system_version, "exact", token=variant.token
    )
    if system_version is None:
        reason += f" (set {TOOLKIT_ENV}, e.g. 3.13.5, when $NEUWARE_HOME/version.txt is missing)"
    return reason


@hookimpl
def load_kernel(device: DeviceInfo, load: KernelLoad) -> ModuleType | None:
    """Import ``torch_mlu`` first (an MLU kernel's native code links against it)."""
    try:
        importlib.import_module(VENDOR)
    except Exception as e:  # noqa: BLE001
        raise KernelImportError(
            f"kernel {load.repo_id} ({load.variant}) for {device.torch_device} needs {VENDOR}, "
            f"which failed to import ({type(e).__name__}: {e}); install torch_mlu for this torch"
        ) from e
    return None


@hookimpl
def synchronize(device: DeviceInfo) -> bool:
    """``torch.mlu.synchronize()`` (for the device's index when one was asked for)."""
    import torch

    if device.index is None:
        torch.mlu.synchronize()
    else:
        torch.mlu.synchronize(device.index)
    return True


@hookimpl
def emulate_device(count: int, facts: dict[str, Any]) -> bool:
    """Install the ``torch_mlu`` stand-ins (see :mod:`kernel_plugins_mlu.emulation`)."""
    from .emulation import install

    return install(count, facts)
