"""kernel-plugins hooks of the Moore Threads MUSA backend (entry point ``musa``).

Detection imports ``torch_musa`` only when it is installed. Arch variants carry the
token ``musa<major><minor>`` of the MUSA SDK in ``torch.version.musa`` and need an
exact major.minor match; ``torch-musa`` and ``torch-universal`` follow.
"""

from __future__ import annotations

from types import ModuleType
from typing import TYPE_CHECKING, Any

from kernel_plugins.device import BackendSpec, DeviceInfo, SystemInfo
from kernel_plugins.hookspecs import hookimpl
from kernel_plugins.variants import arch_variant_names, noarch_variant_names, version_token_reason
from kernel_plugins.vendor import (
    capability_of,
    device_name_of,
    find_vendor_devices,
    import_vendor_for_kernel,
    missing_capability_note,
    noarch_only_note,
    synchronize_device,
    version_note,
)

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

#: How to fix a ``torch_musa`` that is installed but fails to import.
_IMPORT_HINT = (
    "check that the MUSA SDK libraries (libmusart) are on LD_LIBRARY_PATH and match torch_musa"
)


def _runtime_note(text: object) -> str | None:
    """A note when ``torch.version.musa`` is missing or unparsable."""
    return version_note(
        text,
        parse_musa_version,
        what="torch.version.musa",
        expected="major*1000+minor*10+patch, e.g. '4030' for MUSA 4.3.0",
        backend=NAME,
        unknown=(
            "torch.version.musa is not set: the MUSA SDK version is unknown, so "
            + noarch_only_note(NAME)
        ),
    )


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
    found = find_vendor_devices(NAME, VENDOR, "musa", import_hint=_IMPORT_HINT)
    if found is None:
        return None
    notes: list[str] = []
    props = found.properties(0)
    capability = capability_of(props)
    if capability is None:
        notes.append(missing_capability_note("musa", props))
    runtime = getattr(found.torch.version, "musa", None)
    note = _runtime_note(runtime)
    if note:
        notes.append(note)
    return found.info(
        runtime_version=None if runtime is None else str(runtime),
        name=device_name_of(props),
        capability=capability,
        notes=notes,
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
    import_vendor_for_kernel(VENDOR, device, load)
    return None


@hookimpl
def synchronize(device: DeviceInfo) -> bool:
    """``torch.musa.synchronize()`` (for the device's index when one was asked for)."""
    return synchronize_device(device)


@hookimpl
def emulate_device(count: int, facts: dict[str, Any]) -> bool:
    """Install the ``torch_musa`` stand-ins (see :mod:`kernel_plugins_musa.emulation`)."""
    from .emulation import install

    return install(count, facts)
