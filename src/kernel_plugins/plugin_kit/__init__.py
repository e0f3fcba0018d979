"""Everything a backend plugin author needs, in one package.

Plugin authors import from here only::

    from kernel_plugins.plugin_kit import PrivateUse1Backend, RuntimeVersion, VariantTokens

A backend is a pluggy plugin *object*: its hooks are methods marked with
:data:`hookimpl`, and the ``kernel_plugins`` entry point names the object
(``mlu = "kernel_plugins_mlu.hooks:MLU"``). For a vendor extension on PyTorch's
PrivateUse1 slot, :class:`PrivateUse1Backend` builds every hook from stated facts:

* the device type, display name and priority;
* the vendor module and the hint shown when importing it fails;
* where the runtime version comes from (:class:`RuntimeVersion`);
* the variant token form and the compatibility rule (:class:`VariantTokens`);
* how to synchronise;
* what the stack shows PyTorch, for emulation in tests (:class:`Emulation`: data only;
  kernel-plugins-testing builds the stand-ins from it).

A hook the facts cannot express is a ``@hookimpl`` method of a subclass. The generic
vendor-stack helpers (:mod:`._vendor`) and the names plugins need from the core
(``BackendSpec``, ``DeviceInfo``, ``hookimpl``, variant helpers, errors) are re-exported.
Importing this package imports neither torch nor any vendor package.
"""

from __future__ import annotations

from typing import Any

from ..device import BackendSpec, DeviceInfo, PyDepend, SystemInfo, no_torch_reason
from ..errors import DeviceError, KernelImportError, PluginError
from ..hookspecs import hookimpl
from ..variants import (
    Variant,
    arch_variant_names,
    decode_token_version,
    judge_archs,
    noarch_variant_names,
    parse_variant,
    version_token_reason,
)
from ._emulation import Emulation, SdkFile
from ._privateuse1 import PrivateUse1Backend, Reading, RuntimeReading, RuntimeVersion, VariantTokens
from ._vendor import (
    VendorDevices,
    capability_of,
    check_privateuse1_free,
    device_name_of,
    find_vendor_devices,
    import_vendor,
    import_vendor_for_kernel,
    match_version,
    missing_capability_note,
    module_installed,
    noarch_only_note,
    privateuse1_conflict,
    privateuse1_name,
    synchronize_device,
    torch_if_installed,
    torch_major_minor,
    unparsable_note,
    version_note,
)

__all__ = [
    "BackendSpec", "DeviceError", "DeviceInfo", "Emulation", "KernelImportError", "KernelLoad", "PluginError",
    "PrivateUse1Backend", "PyDepend", "Reading", "RuntimeReading", "RuntimeVersion", "SdkFile", "SystemInfo",
    "Variant", "VariantTokens", "VendorDevices", "arch_variant_names", "capability_of",
    "check_privateuse1_free", "decode_token_version", "device_name_of", "find_vendor_devices", "hookimpl",
    "import_vendor", "import_vendor_for_kernel", "judge_archs", "match_version", "missing_capability_note",
    "module_installed", "noarch_only_note", "noarch_variant_names", "no_torch_reason", "parse_variant",
    "privateuse1_conflict", "privateuse1_name", "synchronize_device", "torch_if_installed",
    "torch_major_minor", "unparsable_note", "version_note", "version_token_reason",
]


def __getattr__(name: str) -> Any:
    """``KernelLoad`` on first use (only needed for annotations; keeps imports light)."""
    if name == "KernelLoad":
        from ..provenance import KernelLoad

        return KernelLoad
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
