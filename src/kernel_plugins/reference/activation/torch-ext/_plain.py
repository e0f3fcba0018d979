"""The activations as plain PyTorch computes them (``kernel-plugins benchmark``'s reference):
each kernel function's name and signature, the ``_native`` formula op by op with every
intermediate allocated, copied into ``out``."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from ._native import ACTIVATIONS, Activation
from ._ops import _forward

if TYPE_CHECKING:
    from torch import Tensor

__all__ = [spec.name for spec in ACTIVATIONS]


def _plain(spec: Activation) -> Callable[..., Tensor]:
    def run(out: Tensor, x: Tensor, *params: float) -> Tensor:
        defaults = tuple(d for _, d in spec.params[len(params) :])
        out.copy_(_forward(spec, x, tuple(float(p) for p in (*params, *defaults))))
        return out

    run.__name__ = run.__qualname__ = spec.name
    run.__doc__ = f"``{spec.name}`` with the plain native formula, copied into ``out``."
    return run


for _spec in ACTIVATIONS:
    globals()[_spec.name] = _plain(_spec)
