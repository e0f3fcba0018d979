"""What a model was kernelized with, in HF ``kernels``' structure: :func:`get_kernelized_layers`.

Either kernelize (this package's or HF ``kernels``') leaves the repository it used in the
module's ``__dict__`` (``_kernel_repo``), for marked layers and for the marked functions that a
module holds (``_kernel_funcs``), whichever package placed the marks.
"""

from __future__ import annotations

from typing import Any

from .._record import field, record

__all__ = ["KernelizedLayer", "KernelizedFunc", "KernelizedLayers", "get_kernelized_layers", "REPO"]

#: The key of the repository a module's kernel came from in its ``__dict__`` (HF kernels' own).
REPO = "_kernel_repo"


@record
class KernelizedLayer:
    """A kernelized layer (``module``) and the repository (``repo``) its kernel came from."""

    module: Any
    repo: Any


@record
class KernelizedFunc(KernelizedLayer):
    """A kernelized function (``module``: the module standing for it) and its ``repo``."""


@record
class KernelizedLayers:
    """The kernels a model uses: ``layers`` by module name (as ``named_modules`` gives it) and
    ``funcs`` by (module name, function name) for the functions modules hold."""

    layers: dict[str, KernelizedLayer] = field(default_factory=dict)
    funcs: dict[tuple[str, str], KernelizedFunc] = field(default_factory=dict)


def get_kernelized_layers(model: Any) -> KernelizedLayers:
    """The layers and functions of ``model`` whose forward a kernel replaced, with the repository
    of each (modules keeping their original forward are left out).

    Example::

        kernelize(model, mode=Mode.INFERENCE)
        found = get_kernelized_layers(model)
        found.layers            # {"model.norm": KernelizedLayer(module=..., repo=...), ...}
        found.funcs             # {("model.layers.0.self_attn", "apply_rotary_pos_emb"): ...}
    """
    found = KernelizedLayers()
    for name, module in model.named_modules():
        if (repo := module.__dict__.get(REPO)) is not None:
            found.layers[name] = KernelizedLayer(module, repo)
        funcs = module.__dict__.get("_kernel_funcs")
        for func_name, func in funcs.items() if isinstance(funcs, dict) else ():
            if (repo := getattr(func, "__dict__", {}).get(REPO)) is not None:
                found.funcs[(name, func_name)] = KernelizedFunc(func, repo)
    return found
