"""One Hub API GET without huggingface_hub's HTTP client, for a process that has not set it up.

Building that client costs a fresh process more than the request itself (its HTTP and token modules, an SSL context,
the agent lookup), and a warm load by version needs exactly one request. :func:`usable` says when the standard
library may send it instead: while no code of the process has loaded huggingface_hub's HTTP module (so no client
factory, hook or proxy of the user's can be bypassed), with no proxy or OIDC setting in the environment, outside
Google Colab, and over ``http://``, or ``https://`` where the system's certificate store is OpenSSL's (not on
Windows or macOS, where huggingface_hub asks the OS). The request carries the headers huggingface_hub would send
(user agent, the token of ``HF_TOKEN`` or the token file, unless ``HF_HUB_DISABLE_IMPLICIT_TOKEN``), follows no
redirect (a redirect or HTTP 401 is asked again through huggingface_hub's client), and is bounded as a whole by the
deadline (the socket is shut at it).
"""

from __future__ import annotations

import contextlib
import os
import platform
import sys
import threading
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any
from urllib.parse import urlsplit

from kernel_plugins.jsonfile import parse_json, read_regular_file

#: Answers larger than this are not read here (a refs answer is a few KiB).
MAX_ANSWER_BYTES = 16 << 20
_BLOCKERS = frozenset({"http_proxy", "https_proxy", "all_proxy", "hf_oidc_resource"})


class Unanswered(Exception):
    """No usable answer (a redirect, HTTP 401, a TLS or protocol failure): ask through huggingface_hub."""


class StatusError(Exception):
    """The Hub answered with an HTTP error; ``response.status_code`` as on huggingface_hub's errors."""

    def __init__(self, status: int, code: str | None, message: str) -> None:
        super().__init__(f"HTTP {status}{f' ({code})' if code else ''}: {message}".strip())
        self.response = SimpleNamespace(status_code=status)
        self.error_code = code


def usable(url: str) -> bool:
    """Whether :func:`get_json` may ask ``url`` in this process (see the module docstring)."""
    if "huggingface_hub.utils._http" in sys.modules or "google.colab" in sys.modules:
        return False
    if any(value and name.lower() in _BLOCKERS for name, value in os.environ.items()):
        return False
    scheme = urlsplit(url).scheme
    return scheme == "http" or (scheme == "https" and sys.platform not in ("win32", "darwin"))


def _headers() -> dict[str, str]:
    from huggingface_hub import __version__ as hf_version
    from huggingface_hub import constants

    from kernel_plugins import __version__

    agent = f"kernel-plugins/{__version__}; hf_hub/{hf_version}; python/{platform.python_version()}"
    if not constants.HF_HUB_DISABLE_TELEMETRY and (torch := sys.modules.get("torch")) is not None:
        agent += f"; torch/{getattr(torch, '__version__', 'unknown')}"
    if constants.HF_HUB_USER_AGENT_ORIGIN:
        agent += f"; origin/{constants.HF_HUB_USER_AGENT_ORIGIN}"
    headers = {"user-agent": agent}
    token = None if constants.HF_HUB_DISABLE_IMPLICIT_TOKEN else (
        os.environ.get("HF_TOKEN") or os.environ.get("HUGGING_FACE_HUB_TOKEN") or _token_file(constants.HF_TOKEN_PATH))
    if token := (token or "").replace("\r", "").replace("\n", "").strip():
        headers["authorization"] = f"Bearer {token}"
    return headers


def _token_file(path: str) -> str | None:
    try:  # a regular file of at most 64 KiB, opened without blocking (never a FIFO)
        return read_regular_file(path, max_bytes=65536).decode("utf-8")
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        raise Unanswered(f"token file {path}: {exc}") from exc


def get_json(url: str, *, read_timeout: float, deadline: float, late: Callable[[], Exception]) -> Any:
    """The JSON answer of one GET of ``url``: each socket operation waits at most
    ``read_timeout`` seconds and the whole request ``deadline`` seconds (then ``late()`` is
    raised). :raises StatusError: an HTTP error answer. :raises Unanswered: see the class.
    :raises JSONFileError: an answer that is not JSON, too large or nested too deeply.
    :raises OSError: the Hub could not be reached."""
    import http.client
    import socket
    import ssl  # http.client imported it already

    parts = urlsplit(url)
    timeout = min(read_timeout, deadline)
    if parts.scheme == "https":
        conn: http.client.HTTPConnection = http.client.HTTPSConnection(
            parts.hostname or "", parts.port, timeout=timeout, context=ssl.create_default_context())
    else:
        conn = http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=timeout)
    expired = threading.Event()

    def cut() -> None:
        expired.set()
        if (sock := conn.sock) is not None:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)

    timer = threading.Timer(deadline, cut)
    timer.daemon = True
    timer.start()
    try:
        conn.request("GET", parts.path + (f"?{parts.query}" if parts.query else ""), headers=_headers())
        response = conn.getresponse()
        body = response.read(MAX_ANSWER_BYTES + 1)
    except (OSError, http.client.HTTPException) as exc:
        if expired.is_set():
            raise late() from exc
        if type(exc).__module__ == "ssl" or isinstance(exc, http.client.HTTPException):
            raise Unanswered(f"{type(exc).__name__}: {exc}") from exc
        raise
    finally:
        timer.cancel()
        conn.close()
    if expired.is_set():
        raise late()
    if 300 <= response.status < 400 or response.status == 401:  # huggingface_hub follows redirects
        raise Unanswered(f"HTTP {response.status}")  # and refreshes an OAuth token that expired
    if response.status != 200:
        raise StatusError(response.status, response.getheader("x-error-code"),
                          response.getheader("x-error-message") or body[:500].decode("utf-8", "replace"))
    return parse_json(body, where=f"the answer of {url}", max_bytes=MAX_ANSWER_BYTES)

