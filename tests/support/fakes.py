"""Fake backend plugin modules for plugin-manager tests."""

from __future__ import annotations

import sys
import types
from pathlib import Path
from typing import Any

from kernel_plugins.device import BackendSpec, DeviceInfo
from kernel_plugins.hookspecs import hookimpl
from kernel_plugins.variants import arch_variant_names, noarch_variant_names


def fake_backend(name: str = "fake", *, count: int = 1, detect=None, variants=None, priority: int = 10,
                 spec_name: str | None = None, extra_hooks: dict | None = None) -> types.ModuleType:
    """A hooks module for backend ``name``; ``detect``/``variants`` override the hooks."""
    mod = types.ModuleType(f"fake_{name}_hooks")

    @hookimpl
    def backend_spec():
        return BackendSpec(name=spec_name or name, device_type=spec_name or name,
                           display_name=f"Fake {name}", priority=priority, arch_tokens=(name,))

    @hookimpl
    def detect_device():
        if detect is not None:
            return detect()
        return DeviceInfo(backend=name, device_type=name, count=count, runtime_version="1.0")

    @hookimpl
    def list_variants(device, system):
        if variants is not None:
            return variants(device, system)
        return arch_variant_names(system, [f"{name}10"]) + noarch_variant_names(name)

    mod.backend_spec = backend_spec
    mod.detect_device = detect_device
    mod.list_variants = list_variants
    for k, v in (extra_hooks or {}).items():
        setattr(mod, k, v)
    return mod


def packaged(mod: types.ModuleType, folder: Path, monkeypatch: Any) -> Path:
    """Make the hooks module ``mod`` a package installed in ``folder`` (as a plugin
    distribution's files are), so the kernels it ships there count as its own."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "__init__.py").write_text("")
    mod.__file__, mod.__path__ = str(folder / "__init__.py"), [str(folder)]
    monkeypatch.setitem(sys.modules, mod.__name__, mod)
    return folder


class FakeDist:
    def __init__(self, name, version):
        self.name, self.version = name, version


class FakeEntryPoint:
    """Stands in for importlib.metadata.EntryPoint."""

    group = "kernel_plugins"

    def __init__(self, name, loader, dist=("kernel-plugins-fake", "9.9")):
        self.name = name
        self._loader = loader
        self.dist = FakeDist(*dist)

    def load(self):
        return self._loader()
