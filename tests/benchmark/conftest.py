"""Kernel fixtures for the benchmark tests: small kernel repositories built in tmp_path."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest

from kernel_plugins.reference import reference_repo

REPO_ROOT = Path(__file__).resolve().parents[2]
ACTIVATION_REFERENCE = reference_repo("activation")
assert ACTIVATION_REFERENCE is not None

#: silu_and_mul is wrong by +0.01 everywhere; gelu is right.
WRONG_ACTIVATION = """
import torch


def silu_and_mul(out, x):
    d = x.shape[-1] // 2
    torch.mul(torch.nn.functional.silu(x[..., :d]), x[..., d:], out=out)
    out.add_(0.01)
    return out


def gelu(out, x):
    out.copy_(torch.nn.functional.gelu(x))
    return out
"""


def make_kernel(
    root: Path, source: str, name: str = "activation", backends: tuple[str, ...] = ("cpu", "mlu")
) -> Path:
    """A kernel repository with one noarch variant (``torch-<backend>``) per backend, each
    holding ``source``.

    The metadata id is unique per call and variant, so several fixtures load side by side.
    """
    for backend in backends:
        variant = root / "build" / f"torch-{backend}"
        variant.mkdir(parents=True)
        metadata = {
            "name": name,
            "id": f"_bench_test_{uuid.uuid4().hex[:12]}",
            "version": 1,
            "license": "Apache-2.0",
            "python-depends": [],
            "backend": {"type": backend},
        }
        (variant / "metadata.json").write_text(json.dumps(metadata))
        (variant / "__init__.py").write_text(source)
    return root


@pytest.fixture
def wrong_kernel(tmp_path: Path) -> Path:
    """An ``activation`` kernel whose silu_and_mul is off by 0.01 (gelu is right)."""
    return make_kernel(tmp_path / "wrong-activation", WRONG_ACTIVATION)
