"""A process that has not set up huggingface_hub's HTTP client asks the Hub API through the
standard library (``hub._plain``): same headers, same error mapping, the same deadline; and
it leaves the request to huggingface_hub's client whenever a user's client, proxy or OIDC
setting could apply.

The server is a small loopback socket server in this file that records each request and
answers with what the test queued.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from kernel_plugins.errors import HubError
from kernel_plugins.hub import _plain, is_not_found, map_error
from kernel_plugins.jsonfile import JSONFileError
from tests.support.threads import loopback_server, within

SHA = "a" * 40
REFS = {"branches": [{"name": "v1", "ref": "refs/heads/v1", "targetCommit": SHA}], "tags": [], "converts": []}


class Answers:
    """What the server answers, in order (the last one again when they run out), and the requests it got."""

    def __init__(self) -> None:
        self.queue: list[bytes] = []
        self.requests: list[dict[str, str]] = []

    def json(self, doc: object, status: str = "200 OK", *headers: str) -> None:
        body = json.dumps(doc).encode()
        head = "".join(f"{h}\r\n" for h in (f"HTTP/1.1 {status}", "Content-Type: application/json",
                                              f"Content-Length: {len(body)}", "Connection: close", *headers))
        self.queue.append(head.encode() + b"\r\n" + body)

    def handle(self, conn: socket.socket, stop: threading.Event) -> None:
        with contextlib.suppress(OSError):
            conn.settimeout(5)
            data = b""
            while b"\r\n\r\n" not in data:
                if not (chunk := conn.recv(65536)):
                    return
                data += chunk
            line, *fields = data.split(b"\r\n\r\n")[0].decode().split("\r\n")
            if "/api/agent-harnesses" in line:  # huggingface_hub's own lookup, not the test's
                conn.sendall(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
                return
            self.requests.append({"line": line, **{k.lower(): v.strip() for k, v in (f.split(":", 1) for f in fields)}})
            answer = self.queue.pop(0) if len(self.queue) > 1 else self.queue[0]
            if answer.startswith(b"HOLD"):  # the answer, then nothing more on an open connection
                conn.sendall(answer[4:])
                stop.wait(60)
                return
            if answer == b"drip":
                conn.sendall(b"HTTP/1.1 200 OK\r\n")
                while not stop.wait(0.05):
                    conn.sendall(b"X")
            conn.sendall(answer)


@pytest.fixture
def server() -> Iterator[tuple[str, Answers]]:
    answers = Answers()
    with loopback_server(answers.handle) as url:
        yield url, answers


@pytest.fixture
def fresh(hf_cache: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """As in a process where nothing loaded huggingface_hub's HTTP module (restored after)."""
    monkeypatch.delitem(sys.modules, "huggingface_hub.utils._http", raising=False)
    for name in list(os.environ):
        if name.lower() in ("http_proxy", "https_proxy", "all_proxy", "hf_oidc_resource"):
            monkeypatch.delenv(name)
    return hf_cache


def get(url: str, deadline: float = 30.0) -> object:
    return _plain.get_json(url, read_timeout=10, deadline=deadline, late=lambda: TimeoutError("late"))


def test_a_fresh_process_resolves_a_version_without_huggingface_hubs_client(server, hf_cache: Path) -> None:
    url, answers = server
    answers.json(REFS)
    code = ("import sys; from kernel_plugins import hub; r = hub.resolve('acme/plain', version=1); "
            "print(r.sha, 'huggingface_hub.utils._http' in sys.modules, 'httpx2' in sys.modules or 'httpx' in sys.modules)")
    env = {k: v for k, v in os.environ.items() if not k.lower().endswith("_proxy") and not k.startswith("HF_")}
    env.update(HF_ENDPOINT=url, HF_HOME=str(hf_cache.parent), HF_HUB_CACHE=str(hf_cache), HF_TOKEN="hf_secret")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == [SHA, "False", "False"]
    (request,) = answers.requests
    assert request["line"] == "GET /api/kernels/acme/plain/refs HTTP/1.1"
    assert request["authorization"] == "Bearer hf_secret"
    assert request["user-agent"].startswith("kernel-plugins/") and "; hf_hub/" in request["user-agent"]
    assert (hf_cache / "kernels--acme--plain" / "refs" / "v1").read_text() == SHA


def test_the_plain_request_is_used_only_where_no_users_client_or_setting_is_bypassed(
        fresh: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert _plain.usable("http://127.0.0.1:1/api/x") and _plain.usable("https://hub.example/api/x")
    assert not _plain.usable("ftp://hub.example/api/x")
    for name in ("HTTPS_PROXY", "http_proxy", "ALL_PROXY", "HF_OIDC_RESOURCE"):
        with monkeypatch.context() as m:
            m.setenv(name, "http://127.0.0.1:9")
            assert not _plain.usable("https://hub.example/api/x"), name
    with monkeypatch.context() as m:
        m.setattr(sys, "platform", "darwin")  # huggingface_hub asks the OS for certificates there
        assert not _plain.usable("https://hub.example/api/x") and _plain.usable("http://hub.example/api/x")
    with monkeypatch.context() as m:
        m.setitem(sys.modules, "google.colab", type(sys)("google.colab"))
        assert not _plain.usable("http://hub.example/api/x")
    import huggingface_hub.utils._http as http  # a user's client factory could now be set

    monkeypatch.setitem(sys.modules, "huggingface_hub.utils._http", http)
    assert not _plain.usable("http://hub.example/api/x")


def test_the_token_comes_from_the_environment_or_the_token_file_unless_implicit_tokens_are_off(
        server, fresh: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from huggingface_hub import constants

    url, answers = server
    answers.json({"ok": True})
    (fresh.parent / "token").write_text("  hf_from_file\n")
    assert get(url + "/api/a") == {"ok": True}
    monkeypatch.setenv("HF_TOKEN", "hf_from_env")
    get(url + "/api/b")
    monkeypatch.setattr(constants, "HF_HUB_DISABLE_IMPLICIT_TOKEN", True)
    get(url + "/api/c")
    assert [r.get("authorization") for r in answers.requests] == ["Bearer hf_from_file", "Bearer hf_from_env", None]
    monkeypatch.setattr(constants, "HF_HUB_DISABLE_IMPLICIT_TOKEN", False)
    monkeypatch.delenv("HF_TOKEN")
    (fresh.parent / "token").unlink()
    os.mkfifo(fresh.parent / "token")  # never read: it would block
    with pytest.raises(_plain.Unanswered, match="not a regular file"):
        within(10, lambda: get(url + "/api/d"))


def test_error_answers_map_as_huggingface_hubs_do_with_one_request(server, fresh: Path) -> None:
    url, answers = server
    answers.json({"error": "Repository not found"}, "404 Not Found", "X-Error-Code: RepoNotFound")
    answers.json({"error": "gated"}, "403 Forbidden", "X-Error-Code: GatedRepo")
    answers.json({"error": "busy"}, "503 Service Unavailable")
    with pytest.raises(_plain.StatusError) as missing:
        get(url + "/api/kernels/acme/x/refs")
    assert is_not_found(missing.value) and "not found on" in str(map_error(missing.value, "acme/x", None, url, "looking"))
    with pytest.raises(_plain.StatusError) as gated:
        get(url + "/api/kernels/acme/x/refs")
    assert "is gated on" in str(map_error(gated.value, "acme/x", None, url, "looking"))
    with pytest.raises(_plain.StatusError) as busy:
        get(url + "/api/kernels/acme/x/refs")
    assert not is_not_found(busy.value) and "answered HTTP 503" in str(map_error(busy.value, "acme/x", None, url, "x"))
    assert len(answers.requests) == 3


@pytest.mark.parametrize("status", [307, 401])
def test_a_redirect_or_a_401_is_asked_again_through_huggingface_hub_and_its_answer_used(
        server, fresh: Path, monkeypatch: pytest.MonkeyPatch, status: int) -> None:
    """huggingface_hub follows the redirect; on a 401 it may refresh an OAuth token first."""
    from huggingface_hub import constants

    from kernel_plugins import hub

    url, answers = server
    moved = (f"HTTP/1.1 {status} Moved or refused\r\nLocation: {url}/api/kernels/acme/new/refs\r\n"
             "Content-Length: 0\r\nConnection: close\r\n\r\n").encode()
    answers.queue += [moved] * (2 if status == 307 else 1)  # the plain request's, then the client's
    answers.json(REFS)
    monkeypatch.setattr(constants, "ENDPOINT", url)
    assert hub.resolve("acme/old", version=1).sha == SHA
    paths = [r["line"].split()[1] for r in answers.requests]
    assert paths == ["/api/kernels/acme/old/refs"] * 2 + ["/api/kernels/acme/new/refs"] * (status == 307)
    assert all(r["user-agent"].startswith("kernel-plugins/") for r in answers.requests)


def test_a_dripping_answer_ends_at_the_deadline_and_a_closed_port_is_unreachable(server, fresh: Path) -> None:
    url, answers = server
    answers.queue.append(b"drip")
    start = time.monotonic()
    with pytest.raises(TimeoutError, match="late"):
        within(20, lambda: get(url + "/api/slow", deadline=0.5))
    assert time.monotonic() - start < 5  # each read waits 10 s at most: the deadline cut it
    closed = socket.socket()
    closed.bind(("127.0.0.1", 0))
    port = closed.getsockname()[1]
    closed.close()
    with pytest.raises(OSError) as refused:
        get(f"http://127.0.0.1:{port}/api/x")
    error = map_error(refused.value, "acme/x", None, f"http://127.0.0.1:{port}", "looking up revisions")
    assert isinstance(error, HubError) and "Could not reach the Hub" in str(error)


def test_an_answer_too_large_or_not_json_is_refused_naming_the_address(server, fresh: Path) -> None:
    url, answers = server
    big = b"[" * (_plain.MAX_ANSWER_BYTES + 10)
    answers.queue.append(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(big), big))
    answers.queue.append(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n<html")
    with pytest.raises(JSONFileError, match="the answer of http.*/api/big: larger than"):
        get(url + "/api/big")
    with pytest.raises(JSONFileError, match="/api/html: malformed JSON"):
        get(url + "/api/html")


def test_a_large_answer_is_read_only_up_to_the_cap(server, fresh: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The reader stops at the cap: one that takes the whole announced body would wait here for
    the rest (to the per-read timeout, then the deadline) instead of refusing it at once."""
    url, answers = server
    monkeypatch.setattr(_plain, "MAX_ANSWER_BYTES", 4096)
    answers.queue.append(b"HOLDHTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (1 << 30, b"[" * 8192))
    start = time.monotonic()
    with pytest.raises(JSONFileError, match="/api/huge: larger than the 4096 allowed"):
        within(20, lambda: _plain.get_json(url + "/api/huge", read_timeout=15, deadline=30, late=lambda: TimeoutError("late")))
    assert time.monotonic() - start < 10  # not the per-read timeout: nothing more was waited for
