"""Make the Hub fixtures available to tests/hub even when tests/conftest.py does not load them.

tests/conftest.py is expected to list ``"tests.support.fixtures_hub"`` in ``pytest_plugins``;
registering the same module again under the same name is skipped, so fixtures are defined once.
"""

from __future__ import annotations

import pytest

_PLUGIN = "tests.support.fixtures_hub"


def pytest_configure(config: pytest.Config) -> None:
    """Register the Hub fixtures plugin unless it is registered already."""
    if not config.pluginmanager.has_plugin(_PLUGIN):
        config.pluginmanager.import_plugin(_PLUGIN)
