"""The rotary-embedding function (transformers' ``apply_rotary_pos_emb``) that the marking tests
build their models from: a fresh function per call, since marking one changes it."""

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
