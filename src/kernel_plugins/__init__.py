"""kernel-plugins: load compute kernels for whatever accelerator a machine has.

Every accelerator backend is a pluggy plugin (the built-ins cpu, cuda, rocm, xpu and
metal included). Importing this package imports neither torch nor huggingface_hub
and touches no network: names are resolved lazily on first use.

Example::

    import kernel_plugins
    activation = kernel_plugins.load("activation", device="mlu")
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

#: public name -> module that defines it
_EXPORTS: dict[str, str] = {
    name: module
    for module, names in {
        "loader": "load resolve_variants",
        "registry": "loaded_kernels",
        "dependencies": "get_kernel_dep",
        "provenance": "Provenance KernelLoad",
        "detection": "get_device detect_devices",
        "device": "DeviceInfo SystemInfo BackendSpec PyDepend",
        "hookspecs": "hookimpl",
        "plugins": "get_manager",
        "variants": "Variant parse_variant arch_variant_names noarch_variant_names version_token_reason",
        "resolving": "Decision Resolution",
        "metadata": "KernelMetadata",
        "layers": "kernelize Mode LayerRepository LocalLayerRepository LockedLayerRepository CapabilityRange "
        "register_kernel_mapping use_kernel_mapping use_kernel_forward_from_hub use_kernel_func_from_hub "
        "use_kernelized_func FuncRepository LocalFuncRepository LockedFuncRepository kernel_choice",
    }.items()
    for name in names.split()
}

__all__ = sorted([*_EXPORTS, "__version__", "errors"])


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        if name in ("errors", "layers", "hub", "variants", "device", "plugins"):
            return importlib.import_module(f"{__name__}.{name}")
        raise AttributeError(f"module 'kernel_plugins' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return __all__


if TYPE_CHECKING:  # pragma: no cover
    from .dependencies import get_kernel_dep
    from .detection import detect_devices, get_device
    from .device import BackendSpec, DeviceInfo, PyDepend, SystemInfo
    from .hookspecs import hookimpl
    from .loader import load, resolve_variants
    from .metadata import KernelMetadata
    from .plugins import get_manager
    from .provenance import KernelLoad, Provenance
    from .registry import loaded_kernels
    from .resolving import Decision, Resolution
    from .variants import (
        Variant,
        arch_variant_names,
        noarch_variant_names,
        parse_variant,
        version_token_reason,
    )
