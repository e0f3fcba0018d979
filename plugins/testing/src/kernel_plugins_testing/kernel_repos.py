"""Small kernel repositories on disk, for a backend plugin's tests.

:func:`make_repo` writes ``<root>/build/<variant>/`` for every variant name: a real
kernel package whose ``VARIANT`` names the variant, whose ``double(x)`` computes
``2 * x`` on whatever device ``x`` lives on, and whose ``layers.SiluAndMul`` is a kernel
layer (``silu(x[..., :d]) * x[..., d:]``). Load it with ``kernel_plugins.load(root,
device=...)`` to see which variant a backend picks. Importing this module does not
import torch (the written kernels do, when they are loaded).

Example::

    repo = make_repo(tmp_path / "repo", ["torch-mlu", "torch-universal"])
    assert kernel_plugins.load(repo, device="mlu").VARIANT == "torch-mlu"
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Iterable, Mapping
from pathlib import Path

from kernel_plugins.known_plugins import known_token_owner
from kernel_plugins.variants import parse_variant

__all__ = ["make_repo"]

#: Arch-token prefixes of the built-in backends that differ from the backend's name.
_BUILTIN_TOKEN_BACKENDS = {"cu": "cuda"}

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


def _backend_of(variant: str, token_backends: Mapping[str, str]) -> str:
    """The ``backend.type`` a kernel builder would write for ``variant``."""
    v = parse_variant(variant)
    if v.kind == "noarch":
        return str(v.noarch_backend)
    if v.kind == "universal":
        return "universal"
    prefix = v.token_prefix or ""
    if prefix in token_backends:
        return token_backends[prefix]
    return _BUILTIN_TOKEN_BACKENDS.get(prefix) or known_token_owner(prefix) or prefix


def make_repo(
    root: Path,
    variants: Iterable[str],
    *,
    name: str = "fixture",
    python_depends: Iterable[str] = (),
    token_backends: Mapping[str, str] | None = None,
    archs: Mapping[str, Iterable[str]] | None = None,
) -> Path:
    """Create ``root/build/<variant>/`` for every variant and return ``root``.

    Each variant gets its own unique metadata ``id``, so builds of one repository (and
    repositories made by several calls) import side by side.

    :param root: the repository folder (created; the variant folders must not exist).
    :param variants: variant names, e.g. ``"torch-universal"`` or an arch variant.
    :param name: the kernel's ``name`` in ``metadata.json``.
    :param python_depends: the kernel's ``python-depends``.
    :param token_backends: the backend of an arch-token prefix that is neither the
        backend's own name nor known to the core, e.g. ``{"acme": "acme_gpu"}``; by
        default ``cu`` -> ``cuda``, the known plugins' tokens, else the prefix itself.
    :param archs: variant -> the ``backend.archs`` its ``metadata.json`` declares.
    """
    tokens = dict(token_backends or {})
    depends = list(python_depends)
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
            "python-depends": depends,
            "backend": {"type": _backend_of(variant, tokens),
                        "archs": list((archs or {}).get(variant, ()))},
        }
        (folder / "metadata.json").write_text(json.dumps(metadata), encoding="utf-8")
        (folder / "__init__.py").write_text(_INIT.format(variant=variant), encoding="utf-8")
        (folder / "layers.py").write_text(_LAYERS, encoding="utf-8")
    return root
