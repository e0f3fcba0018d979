"""The model-level API: mark layers, map them to kernels, and kernelize a model.

The names and behaviour follow the Hub ``kernels`` package, on top of kernel-plugins'
backends: mapping keys may be the device type or backend name of any installed backend,
and one :class:`CapabilityRange` type selects by capability on any backend that reports
one. Importing this package does not import torch; :func:`kernelize` and marking a plain
function do.

Example::

    from kernel_plugins.layers import (LayerRepository, Mode, kernelize,
                                       register_kernel_mapping, use_kernel_forward_from_hub)

    @use_kernel_forward_from_hub("SiluAndMul")
    class SiluAndMul(nn.Module):
        def forward(self, x):
            d = x.shape[-1] // 2
            return F.silu(x[..., :d]) * x[..., d:]

    register_kernel_mapping({"SiluAndMul": {
        "cuda": LayerRepository("kernels-community/activation", layer_name="SiluAndMul"),
        "mlu": {Mode.INFERENCE: LayerRepository("org/mlu-activation", layer_name="SiluAndMul")},
    }})
    model = kernelize(model, mode=Mode.INFERENCE)
"""

from __future__ import annotations

from ._errors import MappingError, ModeError
from .capability import CapabilityRange
from .decorators import (
    replace_kernel_forward_from_hub,
    use_kernel_forward_from_hub,
    use_kernel_func_from_hub,
    use_kernelized_func,
)
from .kernelizing import KernelChoice, kernel_choice, kernelize
from .mapping import (
    Candidate,
    KernelMapping,
    current_mapping,
    register_kernel_mapping,
    use_kernel_mapping,
)
from .mode import Mode
from .report import KernelizedFunc, KernelizedLayer, KernelizedLayers, get_kernelized_layers
from .repositories import (
    FuncRepository,
    KernelRepository,
    LayerRepository,
    LocalFuncRepository,
    LocalLayerRepository,
    LockedFuncRepository,
    LockedLayerRepository,
)

__all__ = ["Mode", "CapabilityRange", "KernelRepository", "LayerRepository", "LocalLayerRepository",
           "LockedLayerRepository", "FuncRepository", "LocalFuncRepository", "LockedFuncRepository",
           "use_kernel_forward_from_hub", "use_kernel_func_from_hub", "replace_kernel_forward_from_hub",
           "use_kernelized_func", "register_kernel_mapping", "use_kernel_mapping", "current_mapping",
           "KernelMapping", "Candidate", "kernelize", "KernelChoice", "kernel_choice",
           "get_kernelized_layers", "KernelizedLayers", "KernelizedLayer", "KernelizedFunc", "ModeError",
           "MappingError"]
