"""Fixtures of the loading-pipeline tests: Hub repositories and module bookkeeping."""

from tests.lock.conftest import forget_kernel_modules, kernel_repo  # noqa: F401 - fixtures
