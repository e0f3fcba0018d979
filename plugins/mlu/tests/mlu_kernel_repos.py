"""Build small kernel repositories on disk for the mlu plugin's tests.

Each variant is a real kernel package: ``VARIANT`` names it, ``double(x)`` computes on
whatever device ``x`` lives on, and ``layers.SiluAndMul`` is a kernel layer.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Iterable
from pathlib import Path

from kernel_plugins.variants import parse_variant

_INIT = '''"""Fixture kernel, variant {variant}."""
from . import layers

VARIANT = {variant!r}


def double(x):
    """2 * x, on x's device."""
    return x * 2
'''

_LAYERS = '''"""Kernel layers of the fixture kernel."""
import torch
import torch.nn.functional as F


class SiluAndMul(torch.nn.Module):
    """silu(x[..., :d]) * x[..., d:]."""

    def forward(self, x):
        d = x.shape[-1] // 2
        return F.silu(x[..., :d]) * x[..., d:]
'''


def _backend_of(variant: str) -> str:
    v = parse_variant(variant)
    if v.kind == "noarch":
        return str(v.noarch_backend)
    if v.kind == "universal":
        return "universal"
    prefix = v.token_prefix or ""
    return {"cu": "cuda", "cann": "npu"}.get(prefix, prefix)


def make_repo(
    root: Path,
    variants: Iterable[str],
    *,
    name: str = "fixture",
    python_depends: Iterable[str] = (),
) -> Path:
    """Create ``root/build/<variant>/`` for every variant and return ``root``."""
    for variant in variants:
        folder = root / "build" / variant
        folder.mkdir(parents=True)
        slug = re.sub(r"[^a-z0-9]", "_", variant)
        ident = f"_{name.replace('-', '_')}_{slug}_{uuid.uuid4().hex[:8]}"
        metadata = {
            "name": name,
            "id": ident,
            "version": 1,
            "license": "Apache-2.0",
            "python-depends": list(python_depends),
            "backend": {"type": _backend_of(variant)},
        }
        (folder / "metadata.json").write_text(json.dumps(metadata), encoding="utf-8")
        (folder / "__init__.py").write_text(_INIT.format(variant=variant), encoding="utf-8")
        (folder / "layers.py").write_text(_LAYERS, encoding="utf-8")
    return root
