"""Inputs and comparisons shared by the reference fast-path tests."""

from __future__ import annotations

import torch


def sample_input(shape, dtype, seed=0) -> torch.Tensor:
    """Normal values times 4 in ``dtype``, the first ones replaced by the special values
    (signed zeros, infinities, NaN, a tiny and a large number)."""
    gen = torch.Generator().manual_seed(seed)
    x = (torch.randn(shape, generator=gen) * 4).to(dtype)
    specials = torch.tensor([0.0, -0.0, float("inf"), float("-inf"), float("nan"), 1e-30, 30.0])
    x.view(-1)[: specials.numel()] = specials.to(dtype)
    return x


def bitwise(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Same dtype, shape and values, a NaN matching a NaN."""
    same = (a == b) | (a.isnan() & b.isnan())
    return bool(same.all()) and a.dtype == b.dtype and a.shape == b.shape


def spy(monkeypatch, owner, name: str, calls: list, label=None, when=lambda result: True):
    """Replace ``owner.name`` with a wrapper that calls it and appends ``label`` (or, with
    no label, the result) to ``calls`` when ``when(result)``; returns the real function."""
    real = getattr(owner, name)

    def wrapper(*args):
        result = real(*args)
        if when(result):
            calls.append(result if label is None else label)
        return result

    monkeypatch.setattr(owner, name, wrapper)
    return real
