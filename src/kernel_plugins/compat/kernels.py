"""The public API of the Hugging Face ``kernels`` package (0.19.1), on kernel-plugins.

``import kernel_plugins.compat.kernels as kernels`` runs code written for ``kernels``
unchanged, on every backend kernel-plugins has (MLU, MUSA, NPU, Neuron and TPU included):
loading goes through :func:`kernel_plugins.load` (variant resolution by the backend
plugins, integrity checks, reference fallbacks with a warning) and kernelize through
:func:`kernel_plugins.layers.kernelize`. Trust is enforced on every path: Hub
repositories outside the trusted organisations need ``trust_remote_code=True`` (or a list
naming them). Differences from ``kernels`` are listed in ``docs/compat-kernels.md``.

Example::

    import kernel_plugins.compat.kernels as kernels

    activation = kernels.get_kernel("kernels-community/activation", version=1)
    kernels.register_kernel_mapping({"SiluAndMul": {
        "cuda": kernels.LayerRepository("kernels-community/activation",
                                        layer_name="SiluAndMul", version=1),
    }})
    kernels.kernelize(model, mode=kernels.Mode.INFERENCE)
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from .. import layers as _layers
from ..dependencies import KERNELS_API
from ..errors import LayerError
from ..layers import Mode, replace_kernel_forward_from_hub, use_kernel_forward_from_hub
from ..layers.report import KernelizedFunc, KernelizedLayer, KernelizedLayers, get_kernelized_layers
from ..layers.repositories import KernelRepository
from ..metadata import KERNELS_VERSION
from ._kernels_errors import as_kernels_errors, kernels_advice
from ._kernels_loading import (
    LoadedKernel,
    get_kernel,
    get_kernel_dep,
    get_kernel_variants,
    get_loaded_kernels,
    get_local_kernel,
    get_locked_kernel,
    has_kernel,
    install_kernel,
    load_kernel,
)
from ._kernels_repos import (
    FuncRepository,
    LayerRepository,
    LocalFuncRepository,
    LocalLayerRepository,
    LockedFuncRepository,
    LockedLayerRepository,
    kernels_would_refuse,
)
from ._kernels_types import (
    CUDAProperties,
    Device,
    KernelizeFallback,
    Metadata,
    RepoInfo,
    ROCMProperties,
    VariantAccepted,
    VariantRejected,
)

__version__ = KERNELS_VERSION  # the kernels release whose API this module and our formats follow

__all__ = ["__version__", "Benchmark", "CUDAProperties", "Device", "KernelizeFallback", "ROCMProperties",
           "FuncRepository", "LayerRepository", "LoadedKernel", "LocalFuncRepository", "LocalLayerRepository",
           "LockedFuncRepository", "LockedLayerRepository", "Metadata", "Mode", "RepoInfo", "VariantAccepted",
           "VariantRejected", "get_kernel", "get_kernel_dep", "get_kernel_variants", "get_kernelized_layers",
           "KernelizedLayers", "KernelizedLayer", "KernelizedFunc", "get_loaded_kernels", "get_local_kernel",
           "get_locked_kernel", "has_kernel", "install_kernel", "kernelize", "load_kernel", "register_kernel_mapping",
           "replace_kernel_forward_from_hub", "use_kernel_forward_from_hub", "use_kernel_func_from_hub",
           "use_kernel_mapping", "use_kernelized_func"]

log = logging.getLogger("kernel_plugins.compat.kernels")


# ------------------------------------------------------------------------- mapping
def _convert_repo(repo: object, where: str) -> KernelRepository:
    if isinstance(repo, KernelRepository):
        return repo
    raise TypeError(f"{where} must be a repository (LayerRepository, LocalLayerRepository, "
                    f"LockedLayerRepository, FuncRepository...), got {type(repo).__name__}")


def _convert_value(value: object, where: str) -> Any:
    if isinstance(value, Mapping):
        return {m: _convert_repo(r, f"{where}[{m}]") for m, r in value.items()}
    return _convert_repo(value, where)


def _convert_mapping(mapping: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """``kernels`` mapping (Device or str keys) -> kernel-plugins mapping."""
    out: dict[str, dict[str, Any]] = {}
    for layer, devices in mapping.items():
        if not isinstance(devices, Mapping):
            raise TypeError(f"mapping[{layer!r}] must be a dict of device -> repository")
        per_layer: dict[str, Any] = {}
        for key, value in devices.items():
            device = Device(type=key) if isinstance(key, str) else key
            if not isinstance(device, Device):
                raise TypeError(f"mapping[{layer!r}] keys must be device type strings or Device, got {key!r}")
            converted = _convert_value(value, f"mapping[{layer!r}][{device.type!r}]")
            entry = per_layer.setdefault(device.type, {})
            if device.properties is not None:
                entry[device.properties.capability_range()] = converted
            elif isinstance(converted, KernelRepository):
                entry[Mode.FALLBACK] = converted
            else:
                entry.update(converted)
        out[layer] = per_layer
    return out


def register_kernel_mapping(mapping: Mapping[str, Any], inherit_mapping: bool = True) -> None:
    """Register layer name -> device (str or :class:`Device`) -> repository (or
    ``{Mode: repository}``) entries; ``inherit_mapping=False`` replaces the mapping."""
    _layers.register_kernel_mapping(_convert_mapping(mapping), inherit_mapping=inherit_mapping)


@contextmanager
def use_kernel_mapping(mapping: Mapping[str, Any], *, inherit_mapping: bool = True) -> Iterator[None]:
    """Use ``mapping`` inside a ``with`` block (stacked on the current one unless
    ``inherit_mapping=False``)."""
    with _layers.use_kernel_mapping(_convert_mapping(mapping), inherit_mapping=inherit_mapping):
        yield


def use_kernelized_func(*args: Any) -> Any:
    """Attach marked functions to a module class so kernelize finds them (``_kernel_funcs``).

    A function not marked with :func:`use_kernel_forward_from_hub` raises ValueError.
    """
    try:
        return _layers.use_kernelized_func(*args)
    except LayerError as e:
        raise ValueError(str(e)) from e


def use_kernel_func_from_hub(func_name: str) -> Any:
    """Deprecated in ``kernels``: the same as :func:`use_kernel_forward_from_hub`."""
    log.warning("use_kernel_func_from_hub is deprecated in kernels; use use_kernel_forward_from_hub.")
    return use_kernel_forward_from_hub(func_name)


def kernelize(model: Any, *, mode: Mode, device: str | Any | None = None,
              use_fallback: bool | KernelizeFallback = True) -> Any:
    """Replace the forward of marked layers by mapped kernels (see ``kernels.kernelize``).

    ``device`` defaults to the device of the model's parameters. ``use_fallback``:
    ``False`` or ``KernelizeFallback.NONE`` raises when no kernel fits a layer; anything
    else keeps the original forward then. A kernel that cannot be loaded on the device is
    skipped with a warning.
    """
    if mode == Mode.FALLBACK:
        raise ValueError("Mode.FALLBACK can only be used to register kernel mappings.")
    if isinstance(use_fallback, KernelizeFallback):
        keep = use_fallback != KernelizeFallback.NONE
    elif isinstance(use_fallback, bool):
        keep = use_fallback
    else:
        raise TypeError(f"use_fallback must be a bool or KernelizeFallback, got {use_fallback!r}")
    with as_kernels_errors("a mapped kernel repository"), kernels_advice():
        _layers.kernelize(model, mode=mode, device=device, use_fallback=keep)
    for module in model.modules():  # warn about what going back to kernels would refuse
        choice = _layers.kernel_choice(module)
        if choice is not None and choice.candidate is not None and choice.candidate.repo.kind == "layer":
            layers = getattr(sys.modules.get(choice.kernel_module or ""), "layers", None)
            kernels_would_refuse(getattr(layers, choice.candidate.repo.member, None),
                                 choice.candidate.repo.describe())
    return model


# ------------------------------------------------------------------------ benchmark
class Benchmark:
    """Base class of benchmark scripts, as in ``kernels``: ``setup()`` / ``setup_<name>()``,
    ``benchmark_<name>()`` and optionally ``verify_<name>()`` returning what ``self.out``
    must hold; the runner (``kernel-plugins benchmark REPO --scripts``) sets ``kernel`` and
    ``device``."""

    seed: int | None = None
    device: str = "cpu"

    def __init__(self) -> None:
        self.kernel: Any = None
        self.out: Any = None

    def setup(self) -> None:
        """Create inputs (override)."""


KERNELS_API.append(sys.modules[__name__])  # the rest of the `kernels` module offered to kernel code
