"""kernel-plugins hooks of the Huawei Ascend NPU backend (entry point ``npu``).

Detection imports ``torch_npu`` only when it is installed. Arch variants carry the
token ``cann<major><minor>`` of ``torch.version.cann`` (the existing Hub convention)
and need an exact major.minor match; ``torch-npu`` and ``torch-universal`` follow.
Ascend devices report no compute capability.
"""

from __future__ import annotations

from types import ModuleType
from typing import TYPE_CHECKING, Any

from kernel_plugins.device import BackendSpec, DeviceInfo, SystemInfo
from kernel_plugins.hookspecs import hookimpl
from kernel_plugins.variants import arch_variant_names, noarch_variant_names, version_token_reason
from kernel_plugins.vendor import (
    device_name_of,
    find_vendor_devices,
    import_vendor_for_kernel,
    noarch_only_note,
    synchronize_device,
    version_note,
)

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

#: How to fix a ``torch_npu`` that is installed but fails to import.
_IMPORT_HINT = "source the CANN environment (set_env.sh) and check that torch_npu matches torch"


def _cann_note(text: object) -> str | None:
    """A note when ``torch.version.cann`` is missing, "not known" or unparsable."""
    return version_note(
        text,
        parse_cann_version,
        what="torch.version.cann",
        expected="e.g. '8.3.RC1' or '8.5.0'",
        backend=NAME,
        unknown=(
            f"CANN version unknown (torch.version.cann is {text!r}): "
            f"{noarch_only_note(NAME)}; source the CANN set_env.sh"
        ),
        unknown_texts=("not known",),
    )


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
    found = find_vendor_devices(NAME, VENDOR, "npu", import_hint=_IMPORT_HINT)
    if found is None:
        return None
    props = found.properties(0)
    cann = getattr(found.torch.version, "cann", None)
    notes = [note for note in (_cann_note(cann), _soc_note(found.module)) if note]
    return found.info(
        runtime_version=None if cann is None else str(cann),
        name=device_name_of(props),
        capability=None,
        notes=notes,
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
    import_vendor_for_kernel(VENDOR, device, load)
    return None


@hookimpl
def synchronize(device: DeviceInfo) -> bool:
    """``torch.npu.synchronize()`` (for the device's index when one was asked for)."""
    return synchronize_device(device)


@hookimpl
def emulate_device(count: int, facts: dict[str, Any]) -> bool:
    """Install the ``torch_npu`` stand-ins (see :mod:`kernel_plugins_npu.emulation`)."""
    from .emulation import install

    return install(count, facts)
