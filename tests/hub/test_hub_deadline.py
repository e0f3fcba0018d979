"""Every Hub request has an overall deadline: a server that drips its answer, one byte at a
time (each read well within the per-read timeout), cannot hold a command forever.

The server is a small loopback socket server in this file (no olah): it answers every
request by dripping the status line and headers, or valid headers and then the body.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import os
import socket
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

import kernel_plugins
from kernel_plugins.cli.main import main
from kernel_plugins.errors import HubError
from kernel_plugins.hub import _plain
from tests.support.threads import loopback_server, within

DEADLINE = "KERNEL_PLUGINS_HUB_DEADLINE"


def dripping_hub(part: str) -> contextlib.AbstractContextManager[str]:
    """A server dripping one byte every 0.05 s of its ``part`` ("headers" or "body")."""

    def answer(conn: socket.socket, stop: threading.Event) -> None:
        with contextlib.suppress(OSError):
            conn.settimeout(1)
            while b"\r\n\r\n" not in conn.recv(65536):
                pass
            if part == "body":
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                             b"Content-Length: 1000000\r\n\r\n")
            else:
                conn.sendall(b"HTTP/1.1 200 OK\r\n")
            while not stop.wait(0.05):
                conn.sendall(b" " if part == "body" else b"X")

    return loopback_server(answer)


@pytest.fixture(params=["standard library", "huggingface_hub's client"])
def request_path(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The way this test's Hub API requests go, chosen here (``hub._plain.usable``), not by which
    test imported huggingface_hub's HTTP module first; returns the URLs the standard library asked."""
    asked: list[str] = []
    if request.param == "standard library":  # as in a process that never loaded the client
        monkeypatch.delitem(sys.modules, "huggingface_hub.utils._http", raising=False)
        for name in [n for n in os.environ if n.lower() in ("http_proxy", "https_proxy", "all_proxy")]:
            monkeypatch.delenv(name)
    else:
        importlib.import_module("huggingface_hub.utils._http")
    get_json = _plain.get_json
    monkeypatch.setattr(_plain, "get_json", lambda url, **kw: asked.append(url) or get_json(url, **kw))
    return asked


@pytest.fixture
def slow_hub(hf_cache: Path, monkeypatch: pytest.MonkeyPatch, request_path: list[str]) -> Iterator[object]:
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setattr(constants, "HF_HUB_ETAG_TIMEOUT", 10)  # per read: never reached, even under load
    monkeypatch.setenv(DEADLINE, "0.5")

    def serve(part: str) -> contextlib.AbstractContextManager[str]:
        @contextlib.contextmanager
        def pointed() -> Iterator[str]:
            with dripping_hub(part) as endpoint:
                monkeypatch.setattr(constants, "ENDPOINT", endpoint)
                yield endpoint
        return pointed()

    return serve


@pytest.mark.parametrize("part", ["headers", "body"])
def test_a_dripping_hub_ends_a_load_at_the_deadline(slow_hub, manager: object, part: str, request_path: list[str],
                                                    request: pytest.FixtureRequest) -> None:
    with slow_hub(part):
        start = time.monotonic()
        with pytest.raises(HubError, match=f"deadline of 0.5 s \\({DEADLINE}\\)"):
            within(30, lambda: kernel_plugins.load("acme/dripping", device="cpu", trust_remote_code=True))
        assert time.monotonic() - start < 25  # a few requests (and retries), each cut at 0.5 s
    assert bool(request_path) == (request.node.callspec.params["request_path"] == "standard library")


def test_versions_and_info_end_at_the_deadline_too(slow_hub, manager: object, capsys: pytest.CaptureFixture[str],
                                                   request_path: list[str], request: pytest.FixtureRequest) -> None:
    with slow_hub("body"):
        for command in ("versions", "info"):
            code = within(30, lambda c=command: main([c, "acme/dripping", "--json"]))
            doc = json.loads(capsys.readouterr().out)
            assert code == 1 and DEADLINE in doc["error"]["message"], doc
    assert bool(request_path) == (request.node.callspec.params["request_path"] == "standard library")


def test_a_bad_deadline_is_an_error_naming_the_variable(manager: object, monkeypatch: pytest.MonkeyPatch) -> None:
    from kernel_plugins.hub import request_args

    for value in ("soon", "0", "-1", "nan"):
        monkeypatch.setenv(DEADLINE, value)
        with pytest.raises(HubError, match=f"{DEADLINE}={value!r}: give the seconds"):
            request_args(None)
