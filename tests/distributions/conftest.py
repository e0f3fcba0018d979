"""Register ``plugin_install``, the marker of the plugin-distribution tests.

Deselect them with ``-m "not plugin_install"``.
"""

from __future__ import annotations

import pytest


def pytest_configure(config: pytest.Config) -> None:
    """Declare ``plugin_install``."""
    config.addinivalue_line(
        "markers",
        "plugin_install: builds and installs the plugin distributions under plugins/ into "
        "throw-away folders (slower; runs by default, deselect with -m 'not plugin_install')",
    )
