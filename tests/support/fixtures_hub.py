"""pytest fixtures for tests against a real Hub server (olah) on loopback.

Enable with ``pytest_plugins = ["tests.support.fixtures_hub"]`` in the top-level
``tests/conftest.py``. Fixtures:

- ``hub_server`` (session): a started :class:`~tests.support.hub.HubServer`. When olah is
  not installed the test is skipped (run ``scripts/install-olah.sh``), except when the
  ``CI`` environment variable is set: then it fails, so CI never skips Hub tests silently.
- ``hf_cache`` (function): a fresh, empty huggingface_hub cache folder for this test.
- ``hub_env`` (function): ``hf_cache`` plus huggingface_hub pointed at ``hub_server``
  (online), with the request log cleared; returns the server.
- ``hub_offline`` (function): a function ``set(offline=True)`` switching huggingface_hub's
  offline mode (``HF_HUB_OFFLINE``) for the rest of the test.

huggingface_hub reads ``HF_ENDPOINT``, ``HF_HUB_OFFLINE`` and ``HF_HUB_CACHE`` when it is
imported, so the fixtures set the environment variables (for subprocesses) *and* patch
``huggingface_hub.constants`` (for this process).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.support.hub import HubServer, olah_cli, olah_venv

__all__ = ["hub_server", "hf_cache", "hub_env", "hub_offline", "require_olah"]


def require_olah() -> Path:
    """Return olah's ``olah-cli``; skip the test when missing (fail when ``CI`` is set)."""
    cli = olah_cli()
    if cli is not None:
        return cli
    message = (
        f"olah (the local Hub server for tests) is not installed in {olah_venv()}; run "
        "scripts/install-olah.sh (or set KERNEL_PLUGINS_OLAH_VENV to its virtual environment)."
    )
    if os.environ.get("CI"):
        pytest.fail(f"CI is set, so Hub tests must not be skipped: {message}", pytrace=False)
    pytest.skip(message)


@pytest.fixture(scope="session")
def hub_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HubServer]:
    """A running olah server behind a counting proxy, shared by the whole session."""
    cli = require_olah()
    server = HubServer(tmp_path_factory.mktemp("hub-server"), olah_cli_path=cli)
    server.start()
    try:
        yield server
    finally:
        server.close()


#: Seconds a test that talks to a Hub (every one with ``hf_cache``) may run before the run is
#: stopped with every thread's traceback: a request that waits forever is a failure, never a hang.
TIME_LIMIT_S = 900  # far above the slowest test of the suite on 2 loaded cores


@pytest.fixture
def hf_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A fresh huggingface_hub cache folder (``HF_HOME``/``HF_HUB_CACHE``) for one test, which
    gets a time limit (:data:`TIME_LIMIT_S`)."""
    import faulthandler

    from huggingface_hub import constants

    home = tmp_path / "hf-home"
    cache = home / "hub"
    cache.mkdir(parents=True)
    monkeypatch.setenv("HF_HOME", str(home))
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    monkeypatch.setattr(constants, "HF_HOME", str(home))
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(cache))
    for name, value in (
        ("HF_XET_CACHE", home / "xet"),
        ("AGENT_HARNESSES_PATH", home / ".agent_harnesses.json"),
        ("HF_TOKEN_PATH", home / "token"),  # never send a developer's token to the test server
        ("HF_STORED_TOKENS_PATH", home / "stored_tokens"),
    ):
        if hasattr(constants, name):
            monkeypatch.setattr(constants, name, str(value))
    for name in ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "HF_TOKEN_PATH"):
        monkeypatch.delenv(name, raising=False)
    faulthandler.dump_traceback_later(TIME_LIMIT_S, exit=True)
    yield cache
    faulthandler.cancel_dump_traceback_later()


def _set_offline(monkeypatch: pytest.MonkeyPatch, offline: bool) -> None:
    from huggingface_hub import constants

    if offline:
        monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    else:
        monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
        monkeypatch.delenv("TRANSFORMERS_OFFLINE", raising=False)
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", offline)


@pytest.fixture
def hub_env(hub_server: HubServer, hf_cache: Path, monkeypatch: pytest.MonkeyPatch) -> HubServer:
    """huggingface_hub talking to ``hub_server`` with an empty cache; returns the server.

    Restarts olah if an earlier test stopped it, clears the request log and forgets the
    organisations the organisation API knew.
    """
    from huggingface_hub import constants

    hub_server.start()
    endpoint = hub_server.endpoint
    monkeypatch.setenv("HF_ENDPOINT", endpoint)
    monkeypatch.setattr(constants, "ENDPOINT", endpoint)
    monkeypatch.setattr(
        constants,
        "HUGGINGFACE_CO_URL_TEMPLATE",
        endpoint + "/{repo_id}/resolve/{revision}/{filename}",
    )
    no_proxy = ",".join(filter(None, [os.environ.get("NO_PROXY"), "127.0.0.1", "localhost"]))
    monkeypatch.setenv("NO_PROXY", no_proxy)
    monkeypatch.setenv("HF_HUB_DISABLE_TELEMETRY", "1")
    _set_offline(monkeypatch, False)
    _warm_up_client()
    hub_server.organisations.clear()
    hub_server.clear_requests()
    return hub_server


def _warm_up_client() -> None:
    """Let huggingface_hub make its once-per-process requests now, not inside a test.

    huggingface_hub 2.x fetches ``/api/agent-harnesses`` on its first request of a process
    (to fill a User-Agent field); doing that here keeps request counts in tests exact.
    """
    try:
        from huggingface_hub.utils import detect_agent
    except ImportError:
        return
    detect_agent()


@pytest.fixture
def hub_offline(monkeypatch: pytest.MonkeyPatch) -> Callable[[bool], None]:
    """A function switching huggingface_hub's offline mode for the rest of the test."""

    def set_offline(offline: bool = True) -> None:
        _set_offline(monkeypatch, offline)

    return set_offline
