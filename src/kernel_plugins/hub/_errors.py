"""Map huggingface_hub and HTTP errors to kernel-plugins errors that say how to fix them.

:func:`is_not_found` tells "no such repository / revision / entry" (HTTP 401 or 404)
apart from other failures; :func:`map_error` turns whatever huggingface_hub or its HTTP
stack raised into a :class:`~kernel_plugins.errors.HubError` that names the repository,
the revision, the endpoint and what was being done.
"""

from __future__ import annotations

import errno
import importlib

from kernel_plugins.errors import HubError, KernelPluginsError, LocalDiskError

from ._cache import hub_endpoint, storage_folder
from ._values import REPO_TYPES, download_advice


def _status(exc: BaseException) -> int | None:
    """HTTP status of a huggingface_hub HTTP error, else ``None``."""
    status = getattr(getattr(exc, "response", None), "status_code", None)
    return status if isinstance(status, int) else None


def _http_errors() -> tuple[type[BaseException], ...]:
    """The classes of an HTTP error answer: huggingface_hub's and the plain request's."""
    from huggingface_hub.utils import HfHubHTTPError

    from ._plain import StatusError

    return HfHubHTTPError, StatusError


def is_not_found(exc: BaseException) -> bool:
    """Whether the Hub answered 'repository / revision / entry not found' (401 or 404)."""
    return isinstance(exc, _http_errors()) and _status(exc) in (401, 404)


#: errno values of a network that cannot be reached (name resolution fails as socket.gaierror)
_NETWORK_ERRNOS = frozenset(getattr(errno, n) for n in ("ENETUNREACH", "EHOSTUNREACH", "ENETDOWN", "EHOSTDOWN",
                                                         "ECONNREFUSED", "ECONNRESET", "ETIMEDOUT")
                            if hasattr(errno, n))


def _unreachable(exc: BaseException) -> bool:
    """Whether ``exc`` means the Hub could not be talked to (any HTTP stack, the plain request too)."""
    import socket

    return (isinstance(exc, (*_connection_error_types(), socket.gaierror))
            or (isinstance(exc, OSError) and exc.errno in _NETWORK_ERRNOS))


def _connection_error_types() -> tuple[type[BaseException], ...]:
    """Exception classes meaning 'could not talk to the server' for the installed HTTP stack."""
    found: list[type[BaseException]] = [ConnectionError, TimeoutError]
    for module, names in (("httpx2", ("TransportError",)), ("httpx", ("TransportError",)),
                          ("requests", ("ConnectionError", "Timeout"))):
        try:
            mod = importlib.import_module(module)
        except ImportError:
            continue
        found += [getattr(mod, n) for n in names if isinstance(getattr(mod, n, None), type)]
    return tuple(found)


#: errno values that mean the local disk, not the network, failed.
_LOCAL_ERRNOS = frozenset(getattr(errno, n) for n in ("ENOSPC", "EROFS", "EACCES", "EPERM", "EDQUOT", "EMFILE",
                                                       "ENFILE", "ENAMETOOLONG", "ENOTDIR", "EISDIR", "EIO")
                          if hasattr(errno, n))


def local_disk_error(exc: BaseException, doing: str) -> LocalDiskError | None:
    """A :class:`LocalDiskError` naming the path when ``exc`` is a local disk failure."""
    if not isinstance(exc, OSError) or exc.errno not in _LOCAL_ERRNOS:
        return None
    path = exc.filename or "(path unknown)"
    permissions = "fix the folder's permissions or point HF_HUB_CACHE at a writable folder"
    fix = {errno.ENOSPC: "free disk space", errno.EROFS: "point HF_HUB_CACHE (or HF_HOME) at a writable folder",
           errno.EACCES: permissions, errno.EPERM: permissions}.get(exc.errno or 0, "check the disk and the folder")
    return LocalDiskError(f"Local disk error while {doing}: {exc.strerror or exc} ({path}). This is not a Hub "
                          f"problem: {fix}, then try again.")


def map_error(exc: BaseException, repo_id: str, revision: str | None, endpoint: str | None,
              doing: str) -> KernelPluginsError:
    """Turn a huggingface_hub / HTTP error into one of our errors with a fix (a local disk failure
    becomes a :class:`LocalDiskError` naming the path, never a Hub error)."""
    if isinstance(exc, KernelPluginsError):
        return exc
    if (local := local_disk_error(exc, f"{doing} for {repo_id}")) is not None:
        return local
    url = hub_endpoint(endpoint)
    at = f" at revision {revision}" if revision else ""
    detail = f"{exc.__class__.__name__}: {exc}".strip()
    if type(exc).__name__ == "OfflineModeIsEnabled":
        return HubError(f"HF_HUB_OFFLINE=1 is set but {repo_id}{at} needed the Hub ({doing}); unset "
                        f"HF_HUB_OFFLINE, or download it first ({download_advice(repo_id, revision)}).")
    if isinstance(exc, _http_errors()):
        status = _status(exc)
        if type(exc).__name__ == "GatedRepoError" or getattr(exc, "error_code", None) == "GatedRepo":
            return HubError(f"{repo_id} is gated on {url}: accept its conditions on the website and log "
                            f"in with `hf auth login` (or set HF_TOKEN). ({detail})")
        if status in (401, 404):
            return HubError(f"{repo_id}{at} was not found on {url} while {doing}. Check the repository "
                            f"id and revision; log in if it is private. ({detail})")
        return HubError(f"The Hub at {url} answered HTTP {status} while {doing} for {repo_id}{at}; try "
                        f"again later. ({detail})")
    if _unreachable(exc):
        if not url.startswith(("http://", "https://")):
            return HubError(f"HF_ENDPOINT is {url!r}, not an http:// or https:// address: set it to "
                            f"the Hub's address (e.g. https://huggingface.co) or unset it. ({detail})")
        cached = any(storage_folder(repo_id, t).is_dir() for t in REPO_TYPES)
        offline = (f"{repo_id} has files in the local cache: set HF_HUB_OFFLINE=1 to use them without the network"
                   if cached else f"to work offline, download it first where the Hub is reachable "
                   f"({download_advice(repo_id, revision)}) and set HF_HUB_OFFLINE=1")
        if isinstance(exc, TimeoutError) or "Timeout" in type(exc).__name__:
            return HubError(f"The Hub at {url} did not answer in time while {doing} for {repo_id}{at} "
                            f"({detail}). Allow it more seconds with HF_HUB_ETAG_TIMEOUT (API requests) "
                            f"or HF_HUB_DOWNLOAD_TIMEOUT (file downloads), or try again later; {offline}.")
        if isinstance(exc, OSError) and not isinstance(exc, ConnectionResetError) or "Connect" in type(exc).__name__:
            return HubError(f"Could not reach the Hub at {url} while {doing} for {repo_id}{at} ({detail}). "
                            f"Check the network and HF_ENDPOINT; {offline}.")
        return HubError(f"The connection to the Hub at {url} broke off while {doing} for {repo_id}{at} "
                        f"({detail}). Try again: files already downloaded are kept; {offline}.")
    cause = exc.__cause__
    if isinstance(exc, OSError) and cause is not None and _unreachable(cause):
        return map_error(cause, repo_id, revision, endpoint, doing)  # the cache fallback failed
    if isinstance(exc, OSError) and type(exc).__name__ in ("LocalEntryNotFoundError", "IncompleteSnapshotError"):
        return HubError(f"{repo_id}{at} could not be fetched from {url} and is not (fully) in the local "
                        f"cache while {doing}. Check the network and try again. ({detail})")
    return HubError(f"Unexpected error from the Hub at {url} while {doing} for {repo_id}{at}: {detail}")
