"""Hardening tests: hypothesis profiles and an isolated plugin manager.

Profiles (choose with ``HYPOTHESIS_PROFILE``; default ``quick``):

- ``quick``: 50 examples per property, for a local run.
- ``ci``: 100 examples, derandomised so CI runs are reproducible.
- ``long``: 5000 examples, for a deliberate fuzzing session:
  ``HYPOTHESIS_PROFILE=long pytest tests/hardening``.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, settings

from kernel_plugins import plugins

_COMMON = {"deadline": None, "suppress_health_check": [HealthCheck.too_slow]}
settings.register_profile("quick", max_examples=50, **_COMMON)
settings.register_profile("ci", max_examples=100, derandomize=True, **_COMMON)
settings.register_profile("long", max_examples=5000, **_COMMON)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "quick"))


@pytest.fixture
def builtin_manager(monkeypatch: pytest.MonkeyPatch) -> Iterator[plugins.PluginManager]:
    """A fresh process-wide plugin manager with the built-in backends only.

    Installed plugin distributions are not loaded, so the known backends are exactly the
    built-ins plus the known plugin names, whatever is installed in the environment.
    """
    monkeypatch.delenv("KERNEL_PLUGINS_STRICT", raising=False)
    pm = plugins.PluginManager(entry_points=False)
    old = plugins.reset_manager(pm)
    try:
        yield pm
    finally:
        plugins.reset_manager(old)
