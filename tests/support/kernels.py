"""Build small kernel repositories on disk for tests."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

DEFAULT_CODE = '''
import torch

def add_one(x):
    """x + 1."""
    return x + 1

def identify():
    return __name__
'''


def make_variant(
    root: Path,
    variant: str,
    *,
    name: str = "mykernel",
    kernel_id: str | None = None,
    backend: str | None = None,
    code: str = DEFAULT_CODE,
    layout: str = "flat",
    python_depends: list[str] | None = None,
    extra_files: dict[str, str] | None = None,
    metadata: dict | None = None,
    in_build: bool = True,
) -> Path:
    """Create ``root/build/<variant>/`` (or ``root/<variant>/``) and return the variant folder."""
    vdir = (root / "build" / variant) if in_build else (root / variant)
    vdir.mkdir(parents=True, exist_ok=True)
    if kernel_id is None:
        digest = hashlib.sha256(f"{root}/{variant}/{name}".encode()).hexdigest()[:8]
        kernel_id = f"_{name.replace('-', '_')}_{digest}"
    if backend is None:
        if variant == "torch-universal":
            backend = "universal"
        elif variant.startswith("torch-") and variant.count("-") == 1:
            backend = variant.split("-", 1)[1]
        else:
            backend = "cpu"
    meta = {
        "name": name,
        "id": kernel_id,
        "version": 1,
        "license": "Apache-2.0",
        "python-depends": python_depends or [],
        "backend": {"type": backend},
    }
    if metadata:
        meta.update(metadata)
    (vdir / "metadata.json").write_text(json.dumps(meta))
    pkg = vdir if layout == "flat" else vdir / name.replace("-", "_")
    pkg.mkdir(parents=True, exist_ok=True)
    (pkg / "__init__.py").write_text(code)
    for rel, text in (extra_files or {}).items():
        p = pkg / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    return vdir


def make_repo(root: Path, variants: list[str], **kwargs) -> Path:
    """A repository folder with ``build/<variant>`` for each name."""
    for v in variants:
        make_variant(root, v, **kwargs)
    return root
