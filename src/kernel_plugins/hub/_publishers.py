"""Whether the Hub marks an organisation as a trusted kernel publisher, remembered on disk.

Asked as kernels 0.17.2 asks (``/api/organizations/<org>/overview``, ``trustedKernelPublisher``), but only a JSON
``true`` counts and a failure is never a "yes" (nor remembered). Answers live one file per endpoint and organisation
in ``<cache>/.locks/kernel-plugins-publishers/`` and are believed only from a regular file and folder no other user
could have written. See ``docs/loading.md``, "Trusted publishers".
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import stat
import time
from pathlib import Path

from ..jsonfile import JSONFileError, parse_json, read_regular_file, write_atomic, written_by_others
from ._cache import cache_dir, hub_endpoint, hub_json, is_offline
from ._values import validate_repo_id

logger = logging.getLogger("kernel_plugins")

#: Seconds an answer of the Hub is used online before it is asked again (offline: forever).
ANSWER_TTL_S = 24 * 3600


def trusted_publisher(org: str, endpoint: str | None = None) -> tuple[bool, str]:
    """Whether the Hub marks ``org`` as a trusted kernel publisher, and when not, a clause
    saying why. A remembered answer costs no request. :raises RepoIdError: a bad ``org``."""
    validate_repo_id(f"{org}/x")
    url = hub_endpoint(endpoint)
    path = answer_path(org, url)
    known = _remembered(path, org, url)
    if known is not None and (is_offline() or 0 <= time.time() - known[1] < ANSWER_TTL_S):
        trusted = known[0]
    elif is_offline():
        return False, f"HF_HUB_OFFLINE=1 is set and no answer of the Hub about {org!r} is cached, so only that list applies"
    else:
        try:
            trusted = _ask(org, url)
        except Exception as exc:  # noqa: BLE001 - whatever failed, it is not a "yes"
            return False, f"whether the Hub at {url} marks it as a trusted kernel publisher could not be checked ({type(exc).__name__}: {exc})"
        try:
            path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            write_atomic(path, json.dumps({"endpoint": url, "org": org.lower(), "trusted": trusted, "checked": time.time()}))
        except OSError as exc:
            logger.debug("Could not remember the Hub's answer in %s: %s", path, exc)
    return trusted, "" if trusted else f"the Hub at {url} does not mark it as a trusted kernel publisher"


def answer_path(org: str, url: str) -> Path:
    """The file that remembers the answer of the Hub at ``url`` about ``org``."""
    key = hashlib.sha256(url.encode()).hexdigest()[:16]
    return cache_dir() / ".locks" / "kernel-plugins-publishers" / f"{org.lower()}--{key}.json"


def _ask(org: str, url: str) -> bool:
    if not isinstance(data := hub_json(url, f"/api/organizations/{org}/overview"), dict):
        raise ValueError(f"the answer is a JSON {type(data).__name__}, not an object")
    return data.get("trustedKernelPublisher") is True


def _remembered(path: Path, org: str, url: str) -> tuple[bool, float] | None:
    """``(trusted, when)`` remembered for ``org`` at ``url``, or None: believed only from a regular
    file (not a link) in a real folder, neither of which another user could have written."""
    def check(st: os.stat_result) -> None:
        folder = path.parent.lstat()
        if why := written_by_others(folder) or written_by_others(st) or (not stat.S_ISDIR(folder.st_mode) and "a link"):
            raise JSONFileError(f"it or its folder is not private ({why})")

    try:
        data = parse_json(read_regular_file(path, max_bytes=4096, follow=False, check=check), where=str(path),
                          max_bytes=4096)
    except JSONFileError as exc:
        logger.warning("Ignoring %s: %s", path, exc)
        return None
    except OSError:
        return None
    if (isinstance(data, dict) and (data.get("endpoint"), data.get("org")) == (url, org.lower())
            and isinstance(data.get("trusted"), bool) and type(data.get("checked")) in (int, float)):
        return data["trusted"], float(data["checked"])
    return None
