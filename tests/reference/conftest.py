"""Fixtures for the reference-kernel tests: import each variant the way the loader does."""

from __future__ import annotations

import importlib.util
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import pytest

from kernel_plugins.reference import reference_repo

VARIANT = "torch-cpu"


def variant_dir(name: str, variant: str = VARIANT) -> Path:
    """The ``build/<variant>`` folder (default ``torch-cpu``) of the reference kernel ``name``."""
    repo = reference_repo(name)
    assert repo is not None, name
    return repo / "build" / variant


def metadata_id(name: str) -> str:
    """The metadata ``id`` of the reference kernel ``name``."""
    return json.loads((variant_dir(name) / "metadata.json").read_text("utf-8"))["id"]


def import_variant(variant: Path, module_name: str) -> ModuleType:
    """Import ``variant`` as the package ``module_name`` (flat layout), like the loader."""
    spec = importlib.util.spec_from_file_location(
        module_name, variant / "__init__.py", submodule_search_locations=[str(variant)]
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(module_name, None)
        raise
    return module


def load_reference(name: str) -> ModuleType:
    """The reference kernel ``name`` for cpu, through the loader (one module per process)."""
    import kernel_plugins

    repo = reference_repo(name)
    assert repo is not None, name
    return kernel_plugins.load(repo, device="cpu")


@pytest.fixture(scope="session")
def load() -> Callable[[str], ModuleType]:
    """Function that returns a reference kernel module by name."""
    return load_reference


@pytest.fixture(scope="session")
def activation() -> ModuleType:
    """The reference ``activation`` kernel module."""
    return load_reference("activation")


@pytest.fixture(scope="session")
def rmsnorm() -> ModuleType:
    """The reference ``rmsnorm`` kernel module."""
    return load_reference("rmsnorm")


@pytest.fixture(scope="session")
def rotary() -> ModuleType:
    """The reference ``rotary`` kernel module."""
    return load_reference("rotary")


@pytest.fixture(scope="session")
def importer() -> Callable[[Path, str], ModuleType]:
    """``import_variant(variant_folder, module_name)``, the loader's way of importing."""
    return import_variant


@pytest.fixture(scope="session")
def inductor() -> str:
    """The ``inductor`` backend name; skips when no C++ compiler is available for it (fails
    under ``CI``, which installs one)."""
    import shutil

    if not any(shutil.which(c) for c in ("g++", "c++", "clang++")):
        message = "torch.compile backend 'inductor' needs a C++ compiler on CPU (scripts/setup.sh installs one)"
        pytest.fail(message) if os.environ.get("CI") else pytest.skip(message)
    return "inductor"


@pytest.fixture
def low_thresholds(rotary, monkeypatch) -> None:
    """The blocked rotary path from the direct path's threshold on, in blocks of 64 KiB, so
    that small test inputs reach it in several blocks (the shipped thresholds are used by
    the other tests)."""
    fast = sys.modules[rotary.__name__ + "._fast"]
    monkeypatch.setattr(fast, "BLOCKED_MIN_ELEMENTS", fast.MIN_ELEMENTS)
    monkeypatch.setattr(fast, "BLOCK_BYTES", 1 << 16)
