"""kernel-plugins hooks of the Huawei Ascend NPU backend (entry point ``npu``).

Detection imports ``torch_npu`` only when it is installed. Arch variants carry the
token ``cann<major><minor>`` of ``torch.version.cann`` (the existing Hub convention)
and need an exact major.minor match; ``torch-npu`` and ``torch-universal`` follow.
Ascend devices report no compute capability.
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

from .versions import TOKEN_PREFIX, cann_token, decode_cann_token, parse_cann_version, soc_family

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

NAME = "npu"
VENDOR = "torch_npu"


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
            f"{VENDOR} is installed but importing it failed ({type(e).__name__}: {e}); source "
            "the CANN environment (set_env.sh) and check that torch_npu matches torch"
        ) from e


def _cann_note(text: object) -> str | None:
    if text is None or (isinstance(text, str) and text.strip().lower() == "not known"):
        return (
            f"CANN version unknown (torch.version.cann is {text!r}): only torch-npu and "
            "torch-universal variants can load; source the CANN set_env.sh"
        )
    if parse_cann_version(text) is None:
        return (
            f"unparsable torch.version.cann {text!r} (expected e.g. '8.3.RC1' or '8.5.0'); only "
            "torch-npu and torch-universal variants can load"
        )
    return None


def _soc_note(npu: Any) -> str | None:
    get = getattr(npu, "get_soc_version", None)
    if get is None:
        return None
    try:
        soc = get()
    except Exception as e:  # noqa: BLE001 - informational only
        return f"torch.npu.get_soc_version() failed: {type(e).__name__}: {e}"
    family = soc_family(soc)
    return f"SoC version {soc}" + (f" ({family} family)" if family else "")


@hookimpl
def backend_spec() -> BackendSpec:
    """Declare the npu backend."""
    return BackendSpec(
        name=NAME,
        device_type="npu",
        display_name="Huawei Ascend NPU",
        priority=95,
        arch_tokens=(TOKEN_PREFIX,),
        capability_label="capability (not reported by Ascend)",
    )


@hookimpl
def detect_device() -> DeviceInfo | None:
    """``torch_npu`` installed and ``torch.npu.is_available()``."""
    torch = _torch()
    if torch is None or not _installed(VENDOR):
        return None
    _check_privateuse1(torch)
    vendor = _import_vendor()
    npu = getattr(torch, "npu", None)
    if npu is None:
        raise PluginError(
            f"{VENDOR} was imported but torch.npu does not exist: this torch_npu does not "
            f"register itself with torch {torch.__version__}; install the matching torch_npu"
        )
    if not npu.is_available():
        return None
    count = int(npu.device_count())
    if count <= 0:
        return None
    notes: list[str] = []
    props = npu.get_device_properties(0)
    cann = getattr(torch.version, "cann", None)
    for note in (_cann_note(cann), _soc_note(npu)):
        if note:
            notes.append(note)
    ext = getattr(vendor, "__version__", None)
    return DeviceInfo(
        backend=NAME,
        device_type="npu",
        count=count,
        runtime_version=None if cann is None else str(cann),
        name=str(getattr(props, "name", "")) or None,
        capability=None,
        extension_version=None if ext is None else str(ext),
        emulated=bool(getattr(npu, "__kernel_plugins_emulated__", False)),
        notes=tuple(notes),
    )


@hookimpl
def list_variants(device: DeviceInfo, system: SystemInfo) -> list[str]:
    """Arch variants for exactly the CANN major.minor, then ``torch-npu``, universal."""
    version = parse_cann_version(device.runtime_version)
    tokens = [cann_token(version)] if version else []
    return arch_variant_names(system, tokens) + noarch_variant_names(NAME)


@hookimpl
def explain_variant(device: DeviceInfo, system: SystemInfo, variant: Variant) -> str | None:
    """``CANN 8.2 does not match the system's CANN 8.3 (...)`` and friends."""
    if variant.token is None or variant.token_prefix != TOKEN_PREFIX:
        return None
    return version_token_reason(
        "CANN",
        decode_cann_token(variant.token),
        parse_cann_version(device.runtime_version),
        "exact",
        token=variant.token,
    )


@hookimpl
def load_kernel(device: DeviceInfo, load: KernelLoad) -> ModuleType | None:
    """Import ``torch_npu`` first (an Ascend kernel's native code links against it)."""
    try:
        importlib.import_module(VENDOR)
    except Exception as e:  # noqa: BLE001
        raise KernelImportError(
            f"kernel {load.repo_id} ({load.variant}) for {device.torch_device} needs {VENDOR}, "
            f"which failed to import ({type(e).__name__}: {e}); install torch_npu for this torch"
        ) from e
    return None


@hookimpl
def synchronize(device: DeviceInfo) -> bool:
    """``torch.npu.synchronize()`` (for the device's index when one was asked for)."""
    import torch

    if device.index is None:
        torch.npu.synchronize()
    else:
        torch.npu.synchronize(device.index)
    return True


@hookimpl
def emulate_device(count: int, facts: dict[str, Any]) -> bool:
    """Install the ``torch_npu`` stand-ins (see :mod:`kernel_plugins_npu.emulation`)."""
    from .emulation import install

    return install(count, facts)
