"""kernel-plugins hooks of the Cambricon MLU backend (entry point ``mlu``).

Detection imports ``torch_mlu`` only when it is installed. Arch variants carry the
token ``mlu<major><minor>`` of the CNToolkit release the kernel was built with and
need an exact major.minor match; ``torch-mlu`` and ``torch-universal`` follow.
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
    synchronize_device,
    torch_major_minor,
    unparsable_note,
)

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

#: How to fix a ``torch_mlu`` that is installed but fails to import.
_IMPORT_HINT = (
    "check that NEUWARE_HOME and LD_LIBRARY_PATH point at a Neuware install matching torch_mlu"
)


def _extension_note(text: object, torch: ModuleType) -> str | None:
    """A note when ``torch_mlu.__version__`` is unparsable or names another torch."""
    ext = parse_extension_version(text)
    if ext is None:
        return unparsable_note(f"{VENDOR}.__version__", text, "e.g. '1.22.0+torch2.4.0'")
    if ext.torch_major_minor != torch_major_minor(torch):
        return (
            f"torch_mlu {text} was built for torch {ext.torch}, but torch "
            f"{torch.__version__} is installed"
        )
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
    found = find_vendor_devices(NAME, VENDOR, "mlu", import_hint=_IMPORT_HINT)
    if found is None:
        return None
    notes: list[str] = []
    props = found.properties(0)
    capability = capability_of(props)
    if capability is None:
        notes.append(missing_capability_note("mlu", props))
    ext_note = _extension_note(getattr(found.vendor, "__version__", None), found.torch)
    if ext_note:
        notes.append(ext_note)
    toolkit = read_toolkit_version()
    if toolkit.note:
        notes.append(toolkit.note)
    return found.info(
        runtime_version=toolkit.text,
        name=device_name_of(props),
        capability=capability,
        notes=notes,
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
    import_vendor_for_kernel(VENDOR, device, load)
    return None


@hookimpl
def synchronize(device: DeviceInfo) -> bool:
    """``torch.mlu.synchronize()`` (for the device's index when one was asked for)."""
    return synchronize_device(device)


@hookimpl
def emulate_device(count: int, facts: dict[str, Any]) -> bool:
    """Install the ``torch_mlu`` stand-ins (see :mod:`kernel_plugins_mlu.emulation`)."""
    from .emulation import install

    return install(count, facts)
