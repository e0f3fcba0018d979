"""The rotary-embedding function (transformers' ``apply_rotary_pos_emb``) and the RMSNorm layer
that the marking tests build their models from: fresh ones per call, since marking changes them."""

from __future__ import annotations

from typing import Any


def make_rotate() -> Any:
    """A new ``rotate(q, k, cos, sin, unsqueeze_dim=1)``, for one test to mark."""
    import torch

    def rotate(q, k, cos, sin, unsqueeze_dim=1):  # type: ignore[no-untyped-def]
        cos, sin = cos.unsqueeze(unsqueeze_dim), sin.unsqueeze(unsqueeze_dim)
        half = q.shape[-1] // 2

        def rot(x):  # type: ignore[no-untyped-def]
            return torch.cat((-x[..., half:], x[..., :half]), dim=-1)

        return q * cos + rot(q) * sin, k * cos + rot(k) * sin

    return rotate


def make_norm(**attrs: Any) -> Any:
    """A new RMSNorm layer class over 8 features (class attributes ``attrs``), for one test to mark."""
    import torch
    from torch import nn

    def __init__(self: nn.Module) -> None:
        nn.Module.__init__(self)
        self.weight = nn.Parameter(torch.rand(8))
        self.variance_epsilon = 1e-6

    def forward(self, x):  # type: ignore[no-untyped-def]
        v = x.float().pow(2).mean(-1, keepdim=True)
        return self.weight * (x.float() * torch.rsqrt(v + self.variance_epsilon)).to(x.dtype)

    return type("Norm", (nn.Module,), {"__init__": __init__, "forward": forward, **attrs})
