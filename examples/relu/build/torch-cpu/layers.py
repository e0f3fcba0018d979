"""Kernel layers of the example: forward only, no __init__, no other members (HF kernels
refuses a layer class with more), so its properties are declared in this module's table."""

import torch

__kernel_properties__ = {"ReLU": frozenset({"deterministic", "batch_invariant"})}


class ReLU(torch.nn.Module):
    """Drop-in forward for a module computing ReLU."""

    has_backward = True
    can_torch_compile = True

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.clamp_min(x, 0)
