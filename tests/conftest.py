"""Shared fixtures: an isolated plugin manager per test and kernel repo builders."""

from __future__ import annotations

import pytest

from kernel_plugins import plugins

pytest_plugins = ["tests.support.fixtures_hub"]


@pytest.fixture
def manager(monkeypatch):
    """A fresh process-wide plugin manager with built-ins only (no installed entry points)."""
    monkeypatch.delenv("KERNEL_PLUGINS_STRICT", raising=False)
    pm = plugins.PluginManager(entry_points=False)
    old = plugins.reset_manager(pm)
    yield pm
    plugins.reset_manager(old)
