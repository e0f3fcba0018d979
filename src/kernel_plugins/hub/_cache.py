"""The huggingface_hub cache as the Hub source reads it, and resolution from it alone.

huggingface_hub keeps one folder per repository (``kernels--org--name``) holding ``refs/`` (branch or tag name ->
commit sha), ``snapshots/<sha>/`` (the files) and, in recent versions, a cached file listing per commit. This module
reads huggingface_hub's settings at call time (:func:`hub_endpoint`, :func:`is_offline`, the cache folder), finds
those folders, reads and writes ``refs/``, and answers :func:`~kernel_plugins.hub.resolve` from the cache alone when
``HF_HUB_OFFLINE=1`` (:func:`_resolve_offline`), never making a request.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import logging
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from kernel_plugins.errors import OfflineError, RevisionError, SourceError, VersionNotFoundError
from kernel_plugins.jsonfile import write_atomic

from ._values import _SHA_RE, REPO_TYPES, HubRef, RepoType, _format_versions, _version_of, _versions

logger = logging.getLogger("kernel_plugins")

#: Cached file listings larger than this are ignored (a kernel repo's is a few hundred KiB).
MAX_LISTING_BYTES = 64 << 20


# --- huggingface_hub settings -----------------------------------------------------------
#: Seconds one Hub request may take in all (:data:`DEADLINE_ENV` overrides it).
DEADLINE_S = 300.0
DEADLINE_ENV = "KERNEL_PLUGINS_HUB_DEADLINE"
_limit = [DEADLINE_S]  # the deadline request_args() read last


def request_args(endpoint: str | None) -> dict[str, Any]:
    """``endpoint`` and ``library_name`` for a huggingface_hub call about to send requests, whose
    timeouts and deadline it sets up (:func:`_bound_requests`; answers from the cache build no
    HTTP client). :raises HubError: a bad :data:`DEADLINE_ENV`."""
    from kernel_plugins import __version__

    _deadline()
    _bound_requests()
    return {"endpoint": hub_endpoint(endpoint), "library_name": "kernel-plugins", "library_version": __version__}


def _deadline() -> float:
    """The seconds of :data:`DEADLINE_ENV` (remembered for :func:`_late`). :raises HubError: a bad value."""
    from kernel_plugins.errors import HubError

    raw = os.environ.get(DEADLINE_ENV, "").strip() or str(DEADLINE_S)
    with contextlib.suppress(ValueError):
        if 0 < (seconds := float(raw)) < float("inf"):
            _limit[0] = seconds
            return seconds
    raise HubError(f"{DEADLINE_ENV}={raw!r}: give the seconds one Hub request may take in all (default {DEADLINE_S:g})")


def _late() -> TimeoutError:
    return TimeoutError(f"the Hub sent no complete answer within the request deadline of {_limit[0]:g} s "
                        f"({DEADLINE_ENV}); a stalled server or proxy? Raise {DEADLINE_ENV} for a slow link")


def hub_json(endpoint: str | None, path: str) -> Any:
    """The JSON answer of the Hub API at ``path`` (``/api/...``): one GET with the headers
    ``HfApi`` would send (token, user agent), timeouts and deadline, without importing ``HfApi``:
    through huggingface_hub's shared client (:func:`request_args`), or, in a process that has
    not set that client up, through the standard library (``_plain``; a redirect, HTTP 401 or
    a TLS failure there is asked again through the client). :raises: what huggingface_hub raises
    (``HfHubHTTPError``, transport errors), or ``_plain.StatusError``: map them with ``map_error``."""
    from . import _plain

    url = hub_endpoint(endpoint) + path
    if _plain.usable(url):
        from huggingface_hub import constants

        try:
            return _plain.get_json(url, read_timeout=float(constants.HF_HUB_ETAG_TIMEOUT),
                                   deadline=_deadline(), late=_late)
        except _plain.Unanswered as exc:
            logger.debug("Asking %s again through huggingface_hub's client: %s", url, exc)
    from huggingface_hub.utils import build_hf_headers, get_session, hf_raise_for_status

    args = request_args(endpoint)
    headers = build_hf_headers(library_name=args["library_name"], library_version=args["library_version"])
    response = get_session().get(args["endpoint"] + path, headers=headers)
    hf_raise_for_status(response)
    return response.json()


def hub_endpoint(endpoint: str | None) -> str:
    """The endpoint to talk to: the given one, else huggingface_hub's current setting."""
    if endpoint:
        return endpoint.rstrip("/")
    from huggingface_hub import constants

    return str(constants.ENDPOINT).rstrip("/")


def _request_timeouts(request: Any) -> None:
    """Fill every timeout a request leaves unset: ``HF_HUB_DOWNLOAD_TIMEOUT`` for file
    downloads (``/resolve/``), ``HF_HUB_ETAG_TIMEOUT`` for every other request (seconds), and
    give it an overall deadline that each read of its connection honours (:func:`_bound_streams`):
    a server that never answers, or drips its answer, would otherwise hold a load forever."""
    from huggingface_hub import constants

    limits = request.extensions.get("timeout")
    if not isinstance(limits, dict):
        return
    download = "/resolve/" in str(request.url.path)
    seconds = float(constants.HF_HUB_DOWNLOAD_TIMEOUT if download else constants.HF_HUB_ETAG_TIMEOUT)
    limits = {k: seconds if v is None else v for k, v in limits.items()}
    # the overall deadline: our requests, and every API answer (another library's large
    # downloads through the shared client are left alone)
    if request.headers.get("user-agent", "").startswith("kernel-plugins/") or not download:
        limits = {k: _Until(v) for k, v in limits.items()}
        for timeout in limits.values():
            timeout.at = time.monotonic() + _limit[0]
    request.extensions["timeout"] = limits
    request.extensions["trace"] = functools.partial(_bound_streams, request.extensions.get("trace"))


class _Until(float):
    """A per-read timeout that carries the (monotonic) deadline ``at`` of its request."""

    at = 0.0


def _bound_streams(inner: Any, name: str, info: dict[str, Any]) -> Any:
    """httpcore's ``trace`` hook: a new connection's stream reads no longer than the deadline
    of the request it reads for (each read's timeout is cut to the time left)."""
    stream = info.get("return_value") if name.endswith(("connect_tcp.complete", "start_tls.complete")) else None
    if stream is not None and callable(read := getattr(stream, "read", None)):
        stream.read = functools.partial(_read_until, read)
    return inner(name, info) if inner is not None else None


def _read_until(read: Any, max_bytes: int, timeout: float | None = None) -> bytes:
    if not isinstance(timeout, _Until):
        return read(max_bytes, timeout)  # type: ignore[no-any-return]
    try:
        if (left := timeout.at - time.monotonic()) > 0:
            return read(max_bytes, min(float(timeout), left))  # type: ignore[no-any-return]
    except Exception:
        if time.monotonic() < timeout.at:
            raise
    raise _late()


def _bound_requests() -> None:
    """Hook :func:`_request_timeouts` into huggingface_hub's shared client (once; again
    when huggingface_hub replaced its client). Clients without request hooks are left as
    they are."""
    from huggingface_hub.utils import get_session

    hooks = getattr(get_session(), "event_hooks", None)
    if isinstance(hooks, dict) and _request_timeouts not in hooks.get("request", []):
        hooks.setdefault("request", []).append(_request_timeouts)


_OFFLINE: contextvars.ContextVar[bool] = contextvars.ContextVar("kernel_plugins_hub_offline", default=False)


@contextlib.contextmanager
def offline() -> Iterator[None]:
    """Answer every Hub question from the cache alone inside the block, as with
    ``HF_HUB_OFFLINE=1``, for this thread or task only (the process environment and
    other threads are left as they are)."""
    token = _OFFLINE.set(True)
    try:
        yield
    finally:
        _OFFLINE.reset(token)


def is_offline() -> bool:
    """Whether to work offline here: inside :func:`offline`, or huggingface_hub's offline
    mode (``HF_HUB_OFFLINE``)."""
    if _OFFLINE.get():
        return True
    from huggingface_hub import constants

    check = getattr(constants, "is_offline_mode", None)
    return bool(check()) if callable(check) else bool(constants.HF_HUB_OFFLINE)


# --- cache layout -----------------------------------------------------------------------
def cache_dir() -> Path:
    """The cache folder, read at call time: ``KERNELS_CACHE`` when set and not empty (as
    kernels reads it), else huggingface_hub's ``HF_HUB_CACHE`` (itself ``$HF_HOME/hub``
    by default). Every download and cache lookup of kernel-plugins goes there."""
    from huggingface_hub import constants

    return Path(os.environ.get("KERNELS_CACHE") or constants.HF_HUB_CACHE).expanduser()


def storage_folder(repo_id: str, repo_type: str) -> Path:
    """The cache folder of one repository, e.g. ``kernels--org--name``."""
    return cache_dir() / "--".join([f"{repo_type}s", *repo_id.split("/")])


def _snapshot_folder(ref: HubRef) -> Path:
    """The cache folder holding the files of ``ref.sha``. :raises TrustError: see :func:`_private`."""
    folder = storage_folder(ref.repo_id, ref.repo_type)
    with contextlib.suppress(FileNotFoundError):
        _private(folder, folder.stat())
    return folder / "snapshots" / ref.sha


def _private(path: Path, st: os.stat_result) -> None:
    """:raises TrustError: another user could have written ``path`` (status ``st``) of the download cache."""
    from kernel_plugins.errors import TrustError
    from kernel_plugins.jsonfile import written_by_others

    if why := written_by_others(st):
        raise TrustError(f"{path} in the download cache is not private: {why}, so another user could have changed "
                         "the kernels there. Delete it to download them again, or set KERNELS_CACHE to a folder only "
                         "you can write (see the threat model in docs/loading.md)")


def read_private(path: Path, max_bytes: int) -> bytes:
    """The bytes of a ref, listing or record of the download cache: a regular file, not a link, that
    only this user (or root) could have written. :raises TrustError, OSError, JSONFileError."""
    from kernel_plugins.jsonfile import read_regular_file

    return read_regular_file(path, max_bytes=max_bytes, follow=False, check=lambda st: _private(path, st))


def snapshot_blobs(path: Path) -> tuple[Path, ...]:
    """``(<repo cache>/blobs,)`` when ``path`` lies in a snapshot of a huggingface_hub cache
    (the folder ``hf download`` prints: ``<type>s--<org>--<name>/snapshots/<sha>/``, its
    files links into that repository's own ``blobs/``), else ``()``. Only the layout is
    checked, so any cache folder qualifies, and only that one repository's blobs folder."""
    real = Path(path).resolve()
    for snap in (real, *real.parents):
        repo = snap.parent.parent
        parts = repo.name.split("--")
        if (snap.parent.name == "snapshots" and _SHA_RE.fullmatch(snap.name) and len(parts) == 3
                and parts[0] in {f"{t}s" for t in REPO_TYPES} and all(parts[1:])):
            blobs = repo / "blobs"
            return (blobs,) if blobs.is_dir() and not blobs.is_symlink() else ()
    return ()


def _read_ref(repo_id: str, repo_type: str, name: str) -> str | None:
    """The sha the cache's ``refs/<name>`` points at, or ``None`` (also for a ref refused by :func:`read_private`)."""
    try:
        sha = read_private(storage_folder(repo_id, repo_type) / "refs" / name, 4096).decode("ascii").strip()
    except (OSError, ValueError):  # ValueError: JSONFileError, UnicodeDecodeError
        return None
    return sha if _SHA_RE.fullmatch(sha) else None


def _cached_versions(repo_id: str, repo_type: str) -> dict[int, str]:
    """Versions whose ``refs/vN`` file is in the cache, mapped to their shas."""
    refs = storage_folder(repo_id, repo_type) / "refs"
    if not refs.is_dir():
        return {}
    shas = {p.name: _read_ref(repo_id, repo_type, p.name) for p in refs.iterdir() if p.is_file()}
    return _versions({name: sha for name, sha in shas.items() if sha})


def _write_ref(repo_id: str, repo_type: str, name: str, sha: str) -> None:
    """Record ``name -> sha`` in the cache's ``refs/`` (as huggingface_hub does); best effort."""
    if _read_ref(repo_id, repo_type, name) == sha:
        return
    path = storage_folder(repo_id, repo_type) / "refs" / name
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(path, sha)
    except OSError as exc:
        logger.debug("Could not record %s -> %s in %s: %s", name, sha, path, exc)


def listing_path(ref: HubRef, ours: bool = True) -> Path:
    """Where the listing of ``ref.sha`` is kept: ours (not huggingface_hub's ``trees/<sha>.json``, which would make a
    snapshot holding one variant incomplete to it, and kernels 0.17.2 would not load it offline), else its."""
    return storage_folder(ref.repo_id, ref.repo_type) / "trees" / f"{ref.sha}{'.kernel-plugins' * ours}.json"


def cached_tree_files(ref: HubRef) -> dict[str, dict[str, Any]] | None:
    """The cached file listing of ``ref.sha`` (ours, else huggingface_hub's): path -> entry, or ``None``.

    Reads :func:`listing_path` (format version 1: entries with ``blob_id``, ``lfs_sha256``, ``size``)
    directly: no request, no import of huggingface_hub's API client. ``None`` when no listing is cached, it is
    larger than :data:`MAX_LISTING_BYTES`, nested too deeply, or in a format this code does not know (a warning
    names the file in those cases; verification then falls back to other sources)."""
    from kernel_plugins.errors import KernelPluginsError
    from kernel_plugins.jsonfile import JSONFileError, parse_json

    path = listing_path(ref)
    try:
        if not path.exists():
            path = listing_path(ref, ours=False)
        data = parse_json(read_private(path, MAX_LISTING_BYTES), where=str(path), max_bytes=MAX_LISTING_BYTES)
    except FileNotFoundError:
        return None
    except (OSError, JSONFileError) as exc:
        if isinstance(exc, KernelPluginsError):  # refused: not trusted, never ignored
            raise
        logger.warning("Ignoring the cached file listing %s: %s", path, exc)
        return None
    if not isinstance(data, dict) or data.get("format_version") != 1:
        return None
    files = data.get("files")
    if not isinstance(files, dict) or not all(isinstance(v, dict) for v in files.values()):
        return None
    return {str(k): v for k, v in files.items()}


def _cached_tree(ref: HubRef) -> list[str] | None:
    """Paths of every file at ``ref.sha`` from huggingface_hub's cached listing, or ``None``."""
    if (files := cached_tree_files(ref)) is not None:
        return list(files)
    try:  # a listing in a format this code does not read, or in huggingface_hub's memory: ask it
        with contextlib.suppress(FileNotFoundError):  # never open a FIFO there
            read_private(listing_path(ref, ours=False), MAX_LISTING_BYTES)
        from huggingface_hub import get_cached_repo_tree

        tree = get_cached_repo_tree(ref.repo_id, repo_type=ref.repo_type, revision=ref.sha, cache_dir=cache_dir())
        return [f.path for f in tree]
    except Exception:  # no listing cached (CachedRepoTreeNotFoundError) or unreadable
        return None


# --- offline resolution -----------------------------------------------------------------
def _resolve_offline(repo_id: str, t: RepoType, revision: str | None, version: int | None,
                     endpoint: str | None) -> HubRef:
    """Resolve from the local cache only (``HF_HUB_OFFLINE=1``); never makes a request."""
    from ._values import download_advice

    where = f"the local cache ({cache_dir()})"
    fix = "unset HF_HUB_OFFLINE to look it up on the Hub"
    if not storage_folder(repo_id, t).is_dir():
        # offline with nothing cached: say exactly that (an OfflineError is a HubError, so a
        # load without a pin may still fall back to a reference kernel, saying why)
        raise OfflineError(f"HF_HUB_OFFLINE=1 is set and nothing of {repo_id} is in {where}; {fix}, "
                           f"or download it first ({download_advice(repo_id, revision, version)}).")
    if revision is not None:
        sha = None if _SHA_RE.fullmatch(revision) else _read_ref(repo_id, t, revision)
        if sha is None:
            what = "Commit" if _SHA_RE.fullmatch(revision) else "Revision"
            raise RevisionError(f"{what} {revision!r} of {repo_id} is not in {where} and HF_HUB_OFFLINE=1 is set; "
                                f"{fix}, or download it first ({download_advice(repo_id, revision)}).")
        return HubRef(repo_id, t, revision, sha, _version_of(revision), endpoint)
    cached = _cached_versions(repo_id, t)
    if version is not None:
        if version in cached:
            return HubRef(repo_id, t, f"v{version}", cached[version], version, endpoint)
        raise VersionNotFoundError(f"Version {version} of {repo_id} is not in {where} and HF_HUB_OFFLINE=1 is set; "
                                   f"cached versions: {_format_versions(cached)}. Use one of those or {fix}.")
    snapshots = storage_folder(repo_id, t) / "snapshots"
    usable = {n: sha for n, sha in cached.items() if (snapshots / sha).is_dir()} or cached
    if usable:
        newest = max(usable)
        logger.info("No version given for %s; HF_HUB_OFFLINE=1, using the newest cached version %d.",
                    repo_id, newest)
        return HubRef(repo_id, t, None, usable[newest], newest, endpoint)
    if main := _read_ref(repo_id, t, "main"):
        return HubRef(repo_id, t, None, main, None, endpoint)
    raise SourceError(f"No usable revision of {repo_id} is in {where}; {fix}.")
