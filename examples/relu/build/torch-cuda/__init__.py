"""Example kernel: ReLU written with plain PyTorch ops."""

import torch

from . import layers

__all__ = ["relu", "layers"]
__kernel_properties__ = {"relu": frozenset({"deterministic", "batch_invariant"})}


def relu(out: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    """Fill ``out`` with ``max(x, 0)`` and return it."""
    torch.clamp_min(x, 0, out=out)
    return out


def _relu_reference(out: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    out.copy_(torch.relu(x))
    return out


# How `kernel-plugins benchmark` builds inputs and what it compares against.
__benchmark__ = {"functions": {"relu": {"inputs": "unary", "reference": _relu_reference}}}
