"""Fixtures for the layers tests: a clean mapping, fake devices, kernel repos on disk."""

from __future__ import annotations

import hashlib
import json
import textwrap
import types
from pathlib import Path

import pytest

from kernel_plugins.device import DeviceInfo
from kernel_plugins.layers import _session as session_module
from kernel_plugins.layers import mapping


@pytest.fixture(autouse=True)
def clean_layers(manager, monkeypatch):
    """Built-in backends only, no registered mapping, DISABLE_KERNEL_MAPPING unset."""
    monkeypatch.delenv("DISABLE_KERNEL_MAPPING", raising=False)
    mapping.register_kernel_mapping({}, inherit_mapping=False)
    yield
    mapping.register_kernel_mapping({}, inherit_mapping=False)


def fake_device(backend="cuda", device_type=None, capability=None, emulated=False) -> DeviceInfo:
    """A DeviceInfo as a backend would report it."""
    return DeviceInfo(
        backend=backend,
        device_type=device_type or backend,
        count=1,
        capability=capability,
        emulated=emulated,
    )


class FakeLoader:
    """Stands in for kernel_plugins.load: repo target -> module (or exception)."""

    def __init__(self) -> None:
        self.modules: dict[str, object] = {}
        self.calls: list[tuple[str, object]] = []

    def add(self, target: str, layers: dict[str, type] | None = None, **functions) -> object:
        mod = types.ModuleType(f"fake_{len(self.modules)}")
        if layers is not None:
            lmod = types.ModuleType(f"{mod.__name__}.layers")
            for name, cls in layers.items():
                setattr(lmod, name, cls)
            mod.layers = lmod
        for name, fn in functions.items():
            setattr(mod, name, fn)
        self.modules[target] = mod
        return mod

    def fail(self, target: str, error: Exception) -> None:
        self.modules[target] = error

    def __call__(self, repo, device, *, trust=False, fallback="reference"):
        self.calls.append((repo.target(), device))
        self.trust = trust
        self.fallback = fallback
        mod = self.modules[repo.target()]
        if isinstance(mod, Exception):
            raise mod
        return mod


@pytest.fixture
def fake_loader(monkeypatch) -> FakeLoader:
    """Replace loading and device resolution in kernelize; the device defaults to cuda 8.0."""
    loader = FakeLoader()
    monkeypatch.setattr(session_module, "_load_kernel", loader)
    state = {"device": fake_device("cuda", capability=(8, 0))}
    monkeypatch.setattr(session_module, "_resolve_device", lambda device: state["device"])
    loader.state = state  # type: ignore[attr-defined]
    return loader


def write_kernel_repo(
    root: Path,
    *,
    name: str,
    layers_code: str = "",
    init_code: str = "from . import layers\n",
    backend: str = "cpu",
    variant: str = "torch-cpu",
) -> Path:
    """A local kernel repository ``root/build/<variant>/`` with ``__init__.py`` + ``layers.py``."""
    vdir = root / "build" / variant
    vdir.mkdir(parents=True, exist_ok=True)
    digest = hashlib.sha256(str(root).encode()).hexdigest()[:10]
    kernel_id = f"_{name.replace('-', '_')}_{digest}"
    meta = {
        "name": name,
        "id": kernel_id,
        "version": 1,
        "license": "Apache-2.0",
        "python-depends": [],
        "backend": {"type": backend},
    }
    (vdir / "metadata.json").write_text(json.dumps(meta))
    (vdir / "__init__.py").write_text(textwrap.dedent(init_code))
    (vdir / "layers.py").write_text(textwrap.dedent(layers_code))
    return root


@pytest.fixture
def make_device():
    """The :func:`fake_device` builder."""
    return fake_device


@pytest.fixture
def kernel_repo(tmp_path):
    """Build a local kernel repo under tmp_path: ``kernel_repo(name, layers_code, ...)``."""

    def make(name: str, layers_code: str = "", **kwargs) -> Path:
        return write_kernel_repo(tmp_path / name, name=name, layers_code=layers_code, **kwargs)

    return make
