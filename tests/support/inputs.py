"""Builders for kernel repositories on disk, shared by the validation tests (check, errors, integrity, cli)."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

CORPUS = Path(__file__).parent / "data" / "build-toml"

#: A valid edition-5 build.toml for the kernel ``relu`` (cpu and cuda).
BUILD_TOML = """\
[general]
name = "relu"
version = 1
edition = 5
license = "Apache-2.0"
backends = ["cpu", "cuda"]

[general.hub]
repo-id = "kernels-community/relu"

[torch]
src = ["torch-ext/torch_binding.cpp"]

[kernel.relu_cpu]
backend = "cpu"
depends = ["torch"]
src = ["relu_cpu/relu.cpp"]

[kernel.relu_cuda]
backend = "cuda"
depends = ["torch"]
src = ["relu_cuda/relu.cu"]
cuda-capabilities = ["8.0"]
"""


def metadata(**overrides: Any) -> dict[str, Any]:
    """A valid metadata.json dict for ``relu`` on cpu; ``overrides`` replace keys."""
    data: dict[str, Any] = {
        "name": "relu",
        "id": "_relu_cpu_0a1b2c",
        "version": 1,
        "license": "Apache-2.0",
        "python-depends": [],
        "backend": {"type": "cpu"},
    }
    data.update({k.replace("_", "-"): v for k, v in overrides.items()})
    return data


def write_tree(root: Path, files: Mapping[str, str | bytes]) -> None:
    """Write ``files`` (relative path -> content) under ``root``."""
    for rel, content in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")


def make_variant(
    build: Path,
    name: str,
    meta: Mapping[str, Any] | str | None,
    files: Mapping[str, str | bytes] | None = None,
) -> Path:
    """Create ``build/<name>`` with ``metadata.json`` (dict, raw text or none) and files."""
    folder = build / name
    folder.mkdir(parents=True, exist_ok=True)
    write_tree(folder, {"__init__.py": "VALUE = 1\n"} if files is None else files)
    if isinstance(meta, str):
        (folder / "metadata.json").write_text(meta, encoding="utf-8")
    elif meta is not None:
        (folder / "metadata.json").write_text(json.dumps(meta), encoding="utf-8")
    return folder


def make_repo(
    root: Path,
    variants: Mapping[str, Mapping[str, Any] | str | None],
    build_toml: str | None = BUILD_TOML,
) -> Path:
    """A kernel repository folder with ``build.toml`` and ``build/<variant>/`` folders."""
    root.mkdir(parents=True, exist_ok=True)
    if build_toml is not None:
        (root / "build.toml").write_text(build_toml, encoding="utf-8")
    for name, meta in variants.items():
        make_variant(root / "build", name, meta)
    return root


def tree_state(root: Path) -> dict[str, object]:
    """Every path under ``root`` with its content (files) or link target (links)."""
    state: dict[str, object] = {}
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        for name in [*dirnames, *filenames]:
            p = Path(dirpath) / name
            rel = p.relative_to(root).as_posix()
            if p.is_symlink():
                state[rel] = ("link", os.readlink(p))
            elif p.is_file():
                state[rel] = p.read_bytes()
            else:
                state[rel] = "dir"
    return state


def unvalidated_device(**fields: Any) -> Any:
    """A DeviceInfo built around its validating constructor (as a careless plugin might)."""
    import dataclasses

    from kernel_plugins.device import DeviceInfo

    info = object.__new__(DeviceInfo)
    for f in dataclasses.fields(DeviceInfo):
        default = f.default if f.default is not dataclasses.MISSING else None
        object.__setattr__(info, f.name, fields.get(f.name, default))
    return info
