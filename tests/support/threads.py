"""Run a call in a thread with a time limit: a test of a hang fails instead of hanging."""

from __future__ import annotations

import threading
from collections.abc import Callable
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
