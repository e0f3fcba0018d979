"""The Hub's organisation API on loopback, which olah does not serve.

``GET /api/organizations/<org>/overview`` is answered from a table by the counting proxy in
front of olah (:mod:`tests.support.hub`), so its requests are recorded with the others. An
organisation not in the table gets 404, as on the Hub. Entries can answer a trusted
publisher (``trustedKernelPublisher: true``), another organisation, any status or body, or
answer late (to exceed the client's timeout).
"""

from __future__ import annotations

import json
import re
import threading
from dataclasses import dataclass

__all__ = ["Answer", "Organisations"]

_PATH = re.compile(r"/api/organizations/([^/?]+)/overview(?:\?.*)?")


@dataclass(frozen=True)
class Answer:
    """What one request gets: the status, the body and a delay in seconds before it."""

    status: int = 200
    body: bytes = b""
    delay: float = 0.0


class Organisations:
    """The table the proxy answers organisation overviews from."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._answers: dict[str, Answer] = {}

    def set(self, org: str, trusted: object = None, *, status: int = 200, body: bytes | None = None,
            delay: float = 0.0) -> None:
        """Answer for ``org``: an overview whose ``trustedKernelPublisher`` is ``trusted`` (left
        out when None), or ``body`` as it is, with ``status`` after ``delay`` seconds."""
        doc: dict[str, object] = {"name": org, "fullname": org.title(), "avatarUrl": ""}
        if trusted is not None:
            doc["trustedKernelPublisher"] = trusted
        with self._lock:
            self._answers[org.lower()] = Answer(status, json.dumps(doc).encode() if body is None else body, delay)

    def clear(self) -> None:
        """Forget every entry: every organisation is unknown (404) again."""
        with self._lock:
            self._answers.clear()

    def answer(self, path: str) -> Answer | None:
        """The answer to a request for ``path``, or None when it is not an organisation overview."""
        m = _PATH.fullmatch(path)
        if m is None:
            return None
        with self._lock:
            return self._answers.get(m[1].lower(), Answer(404, b'{"error": "Organization not found"}'))
