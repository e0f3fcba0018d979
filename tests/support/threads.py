"""Threads for tests of hangs: a call with a time limit (the test fails instead of hanging),
and a loopback server that answers as slowly as a test needs."""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest


def within(seconds: float, call: Callable[[], Any], *, release: Callable[[], None] | None = None,
           what: str = "no overall deadline") -> Any:
    """``call()``'s result (or its exception, raised here); the test fails when it has not
    ended after ``seconds``, once ``release`` (if given) has let the waiting call go."""
    box: dict[str, Any] = {}

    def run() -> None:
        try:
            box["result"] = call()
        except BaseException as e:  # noqa: BLE001 - handed to the test
            box["error"] = e

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(seconds)
    if thread.is_alive():
        if release is not None:
            release()
            thread.join(10)
        pytest.fail(f"still running after {seconds} s: {what}")
    if "error" in box:
        raise box["error"]
    return box.get("result")


@contextlib.contextmanager
def loopback_server(handle: Callable[[socket.socket, threading.Event], None]) -> Iterator[str]:
    """A server on loopback whose every connection goes to ``handle(conn, stop)`` in a thread
    of its own; yields its URL. ``stop`` is set when the block ends; the connections are
    closed then."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(16)
    server.settimeout(0.1)
    stop, conns = threading.Event(), []

    def serve() -> None:
        while not stop.is_set():
            with contextlib.suppress(OSError):
                conns.append(conn := server.accept()[0])
                threading.Thread(target=handle, args=(conn, stop), daemon=True).start()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.getsockname()[1]}"
    finally:
        stop.set()
        thread.join(5)
        for conn in conns:
            conn.close()
        server.close()
