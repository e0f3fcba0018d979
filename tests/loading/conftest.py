"""Fixtures of the loading-pipeline tests: Hub repositories and module bookkeeping."""

from __future__ import annotations

import sys
from collections.abc import Iterator

import pytest

from tests.lockfiles.conftest import kernel_repo  # noqa: F401 - a fixture


@pytest.fixture(autouse=True)
def forget_kernels() -> Iterator[None]:
    """Drop the kernel modules a test imported, so ids never clash across tests."""
    from kernel_plugins import importer

    before = set(sys.modules)
    with importer._lock:
        kernels = set(importer._kernels)
    yield
    with importer._lock:
        for key in set(importer._kernels) - kernels:
            del importer._kernels[key]
    for name in set(sys.modules) - before:
        if name.startswith("_"):
            del sys.modules[name]
