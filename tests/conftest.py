"""Shared fixtures: an isolated plugin manager per test and kernel repo builders.

Hypothesis profiles for the property tests (choose with ``HYPOTHESIS_PROFILE``; default
``quick``): ``quick`` (50 examples per property, a local run), ``ci`` (100, derandomised so
CI runs are reproducible) and ``long`` (5000, a deliberate fuzzing session:
``HYPOTHESIS_PROFILE=long pytest tests -k fuzz``).
"""

from __future__ import annotations

import contextlib
import os

import pytest
from hypothesis import HealthCheck, settings

from kernel_plugins import plugins

pytest_plugins = ["tests.support.fixtures_hub"]

_COMMON = {"deadline": None, "suppress_health_check": [HealthCheck.too_slow]}
settings.register_profile("quick", max_examples=50, **_COMMON)
settings.register_profile("ci", max_examples=100, derandomize=True, **_COMMON)
settings.register_profile("long", max_examples=5000, **_COMMON)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "quick"))


@pytest.hookimpl(hookwrapper=True)
def pytest_collection(session):
    """pytest-xdist's workers collect one after the other: the first compiles (and caches) the
    bytecode of everything the test modules import, torch and transformers included, and the
    next reads it. From a fresh clone, two workers collecting at once compiled it all twice,
    about 25 s of CPU. Nothing is shared but the bytecode cache; the lock is a file of this run
    (``PYTEST_XDIST_TESTRUNUID``) in the temporary folder, never followed if it is a link."""
    run = os.environ.get("PYTEST_XDIST_TESTRUNUID")
    if not run or not run.isalnum():
        yield
        return
    import fcntl
    import tempfile

    path = os.path.join(tempfile.gettempdir(), f"kernel-plugins-collect-{run}.lock")
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        with contextlib.suppress(OSError):
            os.unlink(path)
        os.close(fd)


@pytest.fixture(autouse=True)
def no_real_hub(monkeypatch):
    """Point huggingface_hub at a closed loopback port: no test ever asks the real Hub (a
    trust check of an organisation off the list would; ``hub_env`` points it at olah)."""
    from huggingface_hub import constants

    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")
    monkeypatch.setattr(constants, "ENDPOINT", "http://127.0.0.1:9")


@pytest.fixture(autouse=True)
def _fallbacks_not_yet_reported(monkeypatch):
    """Each test starts as a fresh process would: no reference fallback reported yet (the
    warning is given once per kernel and device in a process)."""
    from kernel_plugins import fallback

    monkeypatch.setattr(fallback, "_WARNED", set())


@pytest.fixture
def manager(monkeypatch):
    """A fresh process-wide plugin manager with built-ins only (no installed entry points)."""
    monkeypatch.delenv("KERNEL_PLUGINS_STRICT", raising=False)
    pm = plugins.PluginManager(entry_points=False)
    old = plugins.reset_manager(pm)
    yield pm
    plugins.reset_manager(old)
