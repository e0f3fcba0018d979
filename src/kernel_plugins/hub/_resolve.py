"""Pin a kernel repository to a commit sha: :func:`resolve`.

A revision, a version ``N`` (branch ``vN``) or nothing (the newest version branch, else
``main``) becomes a :class:`~kernel_plugins.hub.HubRef`. Online this asks the Hub for the
repository's refs; with ``HF_HUB_OFFLINE=1`` the cache answers (see ``_cache``). Which
repo type (``kernel`` or ``model``) answered for a repository is remembered per process
and endpoint, so later calls try it first.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import TypeVar

from kernel_plugins.errors import HubError, RevisionError, SourceError, VersionNotFoundError

from ._cache import (
    _resolve_offline,
    _write_ref,
    hub_endpoint,
    is_offline,
    request_args,
    storage_folder,
)
from ._errors import is_not_found, map_error
from ._values import (
    _SHA_RE,
    REPO_TYPES,
    HubRef,
    RepoType,
    _check_revision,
    _check_version,
    _format_refs,
    _format_versions,
    _version_of,
    _versions,
    validate_repo_id,
)

logger = logging.getLogger("kernel_plugins")

_T = TypeVar("_T")

# Which repo type answered for (endpoint, repo_id), so later calls try it first.
_repo_type_cache: dict[tuple[str, str], RepoType] = {}
_repo_type_lock = threading.Lock()


def clear_repo_type_cache() -> None:
    """Forget which repo type (``kernel``/``model``) each repository answered as."""
    with _repo_type_lock:
        _repo_type_cache.clear()


def resolve(
    repo_id: str,
    *,
    revision: str | None = None,
    version: int | None = None,
    repo_type: RepoType | None = None,
    endpoint: str | None = None,
) -> HubRef:
    """Pin a kernel repository to a commit sha.

    At most one of ``revision`` (branch, tag or 40-hex commit sha) and ``version``
    (``N`` means the tip of branch ``vN``) may be given. With neither, the newest ``vN``
    branch is used (a notice is logged to the ``kernel_plugins`` logger), or ``main`` when
    the repository has no version branches. ``repo_type=None`` tries ``kernel`` then
    ``model`` and remembers which answered.

    Online this costs one request (the repository's refs; two when the first repo type
    tried is wrong), or one ``repo_info`` call for a revision that is neither a branch nor
    a tag. A commit sha whose snapshot is already in the cache costs no request. With
    ``HF_HUB_OFFLINE=1`` the answer comes from the cache's ``refs/`` and ``snapshots/``.
    Branch and tag answers are written to the cache's ``refs/`` for later offline use.

    :raises RepoIdError: malformed ``repo_id``.
    :raises RevisionError: both ``revision`` and ``version`` given, an invalid value, or a
        revision that does not exist.
    :raises VersionNotFoundError: no branch ``v<version>``; lists the versions that exist.
    :raises HubError: the Hub could not be reached, or the repository was not found.
    """
    validate_repo_id(repo_id)
    if revision is not None and version is not None:
        raise RevisionError(
            f"Both revision={revision!r} and version={version!r} were given for {repo_id}; "
            "pass only one of them (version=N means branch 'vN')."
        )
    if version is not None:
        _check_version(repo_id, version)
    if revision is not None:
        _check_revision(repo_id, revision)
    types = _candidate_types(repo_id, repo_type, hub_endpoint(endpoint))
    if revision is not None and _SHA_RE.fullmatch(revision):
        for t in types:
            if (storage_folder(repo_id, t) / "snapshots" / revision).is_dir():
                _remember_type(endpoint, repo_id, t)
                return HubRef(repo_id, t, revision, revision, None, endpoint)
    if is_offline():
        return _resolve_offline(repo_id, types, revision, version, endpoint)
    return _resolve_online(repo_id, types, revision, version, endpoint)


def _resolve_online(
    repo_id: str,
    types: list[RepoType],
    revision: str | None,
    version: int | None,
    endpoint: str | None,
) -> HubRef:
    """Resolve with requests to the Hub (see :func:`resolve`)."""
    from huggingface_hub import HfApi

    api = HfApi(**request_args(endpoint))
    if revision is not None and _SHA_RE.fullmatch(revision):
        t, info = _first_type(
            repo_id,
            types,
            endpoint,
            revision,
            lambda t: api.repo_info(repo_id, repo_type=t, revision=revision),
        )
        return HubRef(repo_id, t, revision, info.sha or revision, None, endpoint)

    t, refs = _first_type(
        repo_id, types, endpoint, revision, lambda t: api.list_repo_refs(repo_id, repo_type=t)
    )
    branches = {b.name: b.target_commit for b in refs.branches}
    tags = {g.name: g.target_commit for g in refs.tags}
    versions = _versions(branches)

    requested: str | None = None
    if revision is not None:
        sha = tags.get(revision) or branches.get(revision)
        if sha is None:  # neither a branch nor a tag (e.g. ``refs/pr/1``)
            try:
                info = api.repo_info(repo_id, repo_type=t, revision=revision)
            except Exception as exc:
                if is_not_found(exc):
                    raise RevisionError(
                        f"Revision {revision!r} of {repo_id} not found; branches and tags: "
                        f"{_format_refs(branches, tags)}. Pass one of those or a commit sha."
                    ) from exc
                raise map_error(exc, repo_id, revision, endpoint, "looking up the revision") from exc
            if not info.sha:
                raise HubError(
                    f"The Hub returned no commit sha for {repo_id} at revision {revision!r}."
                )
            sha = str(info.sha)
        from_branch = revision not in tags and revision in branches
        name, requested, ver = revision, revision, _version_of(revision) if from_branch else None
    elif version is not None:
        if version not in versions:
            raise VersionNotFoundError(
                f"Version {version} of {repo_id} not found; available versions: "
                f"{_format_versions(versions)}. Pass one of those, or revision= for a "
                "branch, tag or commit."
            )
        if max(versions) > version:
            logger.info(
                "Using version %d of %s; a newer version %d exists.", version, repo_id, max(versions)
            )
        name, requested, sha, ver = f"v{version}", f"v{version}", versions[version], version
    elif versions:
        ver = max(versions)
        logger.info(
            "No version given for %s; using the newest, version %d (branch v%d). "
            "Pass version=%d to pin it.",
            repo_id,
            ver,
            ver,
            ver,
        )
        name, sha = f"v{ver}", versions[ver]
    elif "main" in branches:
        logger.info("%s has no version branches; using branch 'main'.", repo_id)
        name, sha, ver = "main", branches["main"], None
    else:
        raise RevisionError(
            f"{repo_id} has no version branches (v1, v2, ...) and no 'main' branch; pass "
            f"revision= with one of: {_format_refs(branches, tags)}."
        )
    _write_ref(repo_id, t, name, sha)
    return HubRef(repo_id, t, requested, sha, ver, endpoint)


def _first_type(
    repo_id: str,
    types: list[RepoType],
    endpoint: str | None,
    revision: str | None,
    call: Callable[[RepoType], _T],
) -> tuple[RepoType, _T]:
    """Run ``call`` for each repo type until one is not 'not found'; remember that type."""
    last: BaseException | None = None
    for t in types:
        try:
            result = call(t)
        except Exception as exc:
            if is_not_found(exc):
                last = exc
                continue
            raise map_error(exc, repo_id, revision, endpoint, "looking up revisions") from exc
        _remember_type(endpoint, repo_id, t)
        return t, result
    tried = " or ".join(types)
    at = f" at revision {revision!r}" if revision else ""
    raise HubError(
        f"{repo_id}{at} was not found on {hub_endpoint(endpoint)} as a {tried} repository. Check "
        "the repository id (and revision); if it is private or gated, log in with "
        "`hf auth login` or set HF_TOKEN."
    ) from last


def _candidate_types(repo_id: str, repo_type: str | None, endpoint: str) -> list[RepoType]:
    """Repo types to try, the one remembered for this repository first."""
    if repo_type is not None:
        if repo_type not in REPO_TYPES:
            raise SourceError(
                f"Unsupported repo_type {repo_type!r} for {repo_id}; use 'kernel', 'model' or "
                "None (try both)."
            )
        return [repo_type]  # type: ignore[list-item]
    with _repo_type_lock:
        known = _repo_type_cache.get((endpoint, repo_id))
    if known is None:
        return list(REPO_TYPES)
    return [known] + [t for t in REPO_TYPES if t != known]


def _remember_type(endpoint: str | None, repo_id: str, repo_type: RepoType) -> None:
    """Record which repo type ``repo_id`` answered as."""
    with _repo_type_lock:
        _repo_type_cache[(hub_endpoint(endpoint), repo_id)] = repo_type
