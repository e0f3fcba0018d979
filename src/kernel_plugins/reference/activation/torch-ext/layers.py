"""Kernel layers of the reference activation kernel, one per row of ``_native.ACTIVATIONS``.

Each defines only ``forward`` and the flags ``has_backward`` / ``can_torch_compile`` (no
``__init__``, as kernel loaders check). ``FatreluAndMul(threshold)`` still takes the
community constructor argument: its metaclass stores it as ``self.threshold``, which
``forward`` reads (as on a model's own ``FatreluAndMul``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import torch
from torch import nn

from ._native import ACTIVATIONS, Activation
from ._ops import ops

if TYPE_CHECKING:
    from torch import Tensor

__all__ = [
    "FastGELU",
    "FatreluAndMul",
    "Gelu",
    "GeluAndMul",
    "GeluTanh",
    "GeluTanhAndMul",
    "MulAndSilu",
    "NewGELU",
    "QuickGELU",
    "Silu",
    "SiluAndMul",
]

__kernel_properties__: dict[str, frozenset[str]] = {
    spec.layer: frozenset({"deterministic", "batch_invariant"})
    if spec.batch_invariant
    else frozenset({"deterministic"})
    for spec in ACTIVATIONS
}
"""Guarantees per layer class: those of the function the layer computes."""


class _ParamsConstructor(type):
    """Metaclass giving a layer with float parameters the community constructor
    (``FatreluAndMul(threshold=0.0)``) while the class keeps ``nn.Module.__init__``."""

    _params: tuple[tuple[str, float], ...] = ()

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        names = [n for n, _ in cls._params]
        if len(args) > len(names) or set(kwargs) - set(names[len(args) :]):
            raise TypeError(f"{cls.__name__}() takes the optional arguments {', '.join(names)} (floats); "
                            f"got {args!r} {kwargs!r}")
        layer = super().__call__()
        for i, (name, default) in enumerate(cls._params):
            setattr(layer, name, args[i] if i < len(args) else kwargs.get(name, default))
        return layer


def _layer(spec: Activation) -> type[nn.Module]:
    """The layer class of ``spec``: ``forward(x)`` allocates ``out`` and runs the op."""
    op = getattr(ops, spec.name)
    gated = spec.kind != "unary"
    names = tuple(n for n, _ in spec.params)

    def forward(self: nn.Module, x: Tensor) -> Tensor:
        shape = (*x.shape[:-1], x.shape[-1] // 2) if gated else x.shape
        out = torch.empty(shape, dtype=x.dtype, device=x.device)
        if names:
            op(out, x, *[float(getattr(self, n)) for n in names])
        else:
            op(out, x)
        return out

    forward.__qualname__ = f"{spec.layer}.forward"
    forward.__doc__ = "Apply the activation to ``x``" + (f" with ``self.{', self.'.join(names)}``." if names else ".")
    doc = f"``{spec.formula}`` with ``d = x.shape[-1] // 2``." if gated else f"``{spec.formula}``."
    members = {"__module__": __name__, "__qualname__": spec.layer, "__doc__": doc, "forward": forward,
               "has_backward": True, "can_torch_compile": True}
    if not names:
        return type(spec.layer, (nn.Module,), members)
    meta = type(f"_{spec.layer}Constructor", (_ParamsConstructor,), {"_params": spec.params})
    return meta(spec.layer, (nn.Module,), members)  # type: ignore[no-any-return]


_BY_LAYER = {spec.layer: _layer(spec) for spec in ACTIVATIONS}
SiluAndMul = _BY_LAYER["SiluAndMul"]
MulAndSilu = _BY_LAYER["MulAndSilu"]
GeluAndMul = _BY_LAYER["GeluAndMul"]
GeluTanhAndMul = _BY_LAYER["GeluTanhAndMul"]
FatreluAndMul = _BY_LAYER["FatreluAndMul"]
Silu = _BY_LAYER["Silu"]
Gelu = _BY_LAYER["Gelu"]
GeluTanh = _BY_LAYER["GeluTanh"]
FastGELU = _BY_LAYER["FastGELU"]
NewGELU = _BY_LAYER["NewGELU"]
QuickGELU = _BY_LAYER["QuickGELU"]
