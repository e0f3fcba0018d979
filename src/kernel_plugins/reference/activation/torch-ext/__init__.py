"""Reference activation kernel: the API of ``kernels-community/activation`` in plain PyTorch.

Every function takes a preallocated ``out`` and the input ``x``, fills ``out`` and
returns it. The ``*_and_mul`` / ``mul_and_*`` functions split the last dimension of
``x`` in half (``d = x.shape[-1] // 2``)::

    silu_and_mul(out, x)       out = silu(x[..., :d]) * x[..., d:]
    mul_and_silu(out, x)       out = x[..., :d] * silu(x[..., d:])
    gelu_and_mul(out, x)       out = gelu(x[..., :d]) * x[..., d:]
    gelu_tanh_and_mul(out, x)  out = gelu_tanh(x[..., :d]) * x[..., d:]
    fatrelu_and_mul(out, x, threshold=0.0)
                               out = where(a > threshold, a, 0) * x[..., d:], a = x[..., :d]

The others are element-wise: ``silu``, ``gelu`` (erf), ``gelu_tanh``, ``gelu_fast``,
``gelu_new`` and ``gelu_quick``. Results are bitwise equal to the same formula written
with native PyTorch ops in the input dtype, on any device. ``ops`` is the
``torch.ops`` namespace of this build (the metadata ``id``); ``layers`` holds the
``nn.Module`` kernel layers.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from . import _native, _plain, layers
from ._ops import ops

if TYPE_CHECKING:
    from collections.abc import Callable

    from torch import Tensor

    from ._native import Activation

__all__ = [
    "fatrelu_and_mul",
    "gelu",
    "gelu_and_mul",
    "gelu_fast",
    "gelu_new",
    "gelu_quick",
    "gelu_tanh",
    "gelu_tanh_and_mul",
    "layers",
    "mul_and_silu",
    "ops",
    "silu",
    "silu_and_mul",
]

__kernel_properties__: dict[str, frozenset[str]] = {
    spec.name: frozenset({"deterministic", "batch_invariant"})
    if spec.batch_invariant
    else frozenset({"deterministic"})
    for spec in _native.ACTIVATIONS
}
"""Guarantees per function. All are deterministic (same inputs, device and thread count
give the same bits). Only ``fatrelu_and_mul`` is batch invariant: the others use
transcendental functions whose vectorised and scalar CPU code paths can differ in the
last bit, so a row's result can change with the number of rows around it."""


def _function(spec: Activation) -> Callable[..., Tensor]:
    """The API function of one activation: fill ``out`` and return it."""
    op = getattr(ops, spec.name)
    if spec.params:  # fatrelu_and_mul(out, x, threshold=0.0)
        ((_, default),) = spec.params

        def function(out: Tensor, x: Tensor, threshold: float = default) -> Tensor:
            op(out, x, float(threshold))
            return out
    else:

        def function(out: Tensor, x: Tensor) -> Tensor:  # type: ignore[misc]
            op(out, x)
            return out

    function.__name__ = function.__qualname__ = spec.name
    function.__doc__ = f"Fill ``out`` with ``{spec.formula}`` and return it."
    # the flags kernel loaders read on functions (as on layer classes)
    function.has_backward = True  # type: ignore[attr-defined]
    function.can_torch_compile = True  # type: ignore[attr-defined]
    return function


for _spec in _native.ACTIVATIONS:  # one function per row of the table, as the layer classes
    globals()[_spec.name] = _function(_spec)

__benchmark__ = {"reference": _plain}
"""``kernel-plugins benchmark`` times this kernel against the plain native formulas
(``_plain``: op by op, every intermediate allocated), not against itself."""

del annotations, TYPE_CHECKING  # not the kernel's API
