"""Pin a kernel repository to a commit sha: :func:`resolve`.

A revision, a version ``N`` (branch ``vN``) or nothing (the newest version branch, else
``main``) becomes a :class:`~kernel_plugins.hub.HubRef`. Online this asks the Hub for the
repository's refs; with ``HF_HUB_OFFLINE=1`` the cache answers (see ``_cache``). Only the
repo type asked for is looked up: ``kernel`` unless ``repo_type="model"`` is given.
"""

from __future__ import annotations

import logging
from urllib.parse import quote

from kernel_plugins.errors import HubError, RevisionError, SourceError, VersionNotFoundError

from ._cache import (
    _cached_versions,
    _resolve_offline,
    _write_ref,
    hub_endpoint,
    hub_json,
    is_offline,
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


def resolve(repo_id: str, *, revision: str | None = None, version: int | None = None,
            repo_type: RepoType | None = None, endpoint: str | None = None) -> HubRef:
    """Pin a kernel repository to a commit sha.

    At most one of ``revision`` (branch, tag or 40-hex commit sha) and ``version``
    (``N`` means the tip of branch ``vN``) may be given. With neither, the newest ``vN``
    branch is used (a notice is logged to the ``kernel_plugins`` logger), or ``main`` when
    the repository has no version branches. ``repo_type`` is ``kernel`` (``None`` too) or
    ``model`` (older repositories that a mirror may still keep).

    Online this costs one request (the repository's refs), or one revision request for a
    revision that is neither a branch nor a tag; none for a commit sha already in the cache.
    With ``HF_HUB_OFFLINE=1`` the cache's ``refs/`` and ``snapshots/`` answer. Branch and
    tag answers are written to the cache's ``refs/`` for later offline use.
    :raises RepoIdError: malformed ``repo_id``.
    :raises RevisionError: both ``revision`` and ``version`` given, an invalid value, or a
        revision that does not exist.
    :raises VersionNotFoundError: no branch ``v<version>``; lists the versions that exist.
    :raises HubError: the Hub could not be reached, or the repository was not found."""
    validate_repo_id(repo_id)
    if revision is not None and version is not None:
        raise RevisionError(f"Both revision={revision!r} and version={version!r} were given for {repo_id}; "
                            "pass only one of them (version=N means branch 'vN').")
    if version is not None:
        _check_version(repo_id, version)
    if revision is not None:
        _check_revision(repo_id, revision)
    t: RepoType = repo_type or "kernel"
    if t not in REPO_TYPES:
        raise SourceError(f"Unsupported repo_type {t!r} for {repo_id}; use 'kernel' or 'model'.")
    if revision and _SHA_RE.fullmatch(revision) and (storage_folder(repo_id, t) / "snapshots" / revision).is_dir():
        return HubRef(repo_id, t, revision, revision, None, endpoint)
    if is_offline():
        return _resolve_offline(repo_id, t, revision, version, endpoint)
    return _resolve_online(repo_id, t, revision, version, endpoint)


def _resolve_online(repo_id: str, t: RepoType, revision: str | None, version: int | None,
                    endpoint: str | None) -> HubRef:
    """Resolve with requests to the Hub (see :func:`resolve`): plain API requests
    (:func:`hub_json`), so that a load by version never imports huggingface_hub's ``HfApi``."""
    try:
        if revision is not None and _SHA_RE.fullmatch(revision):
            return HubRef(repo_id, t, revision, _commit(repo_id, t, revision, endpoint), None, endpoint)
        branches, tags = _refs(repo_id, t, endpoint)
    except Exception as exc:
        if not is_not_found(exc):
            raise map_error(exc, repo_id, revision, endpoint, "looking up revisions") from exc
        at = f" at revision {revision!r}" if revision else ""
        raise HubError(f"{repo_id}{at} was not found on {hub_endpoint(endpoint)} as a {t} repository. Check the "
                       "repository id (and revision); if it is private or gated, log in with `hf auth login` or set "
                       "HF_TOKEN. (Repositories of type model are looked up only with repo_type='model'.)") from exc
    versions = _versions(branches)
    requested: str | None = None
    if revision is not None:
        sha = tags.get(revision) or branches.get(revision)
        if sha is None:  # neither a branch nor a tag (e.g. ``refs/pr/1``)
            try:
                sha = _commit(repo_id, t, revision, endpoint)
            except Exception as exc:
                if is_not_found(exc):
                    raise RevisionError(f"Revision {revision!r} of {repo_id} not found; branches and tags: "
                                        f"{_format_refs(branches, tags)}. Pass one of those or a commit sha.") from exc
                raise map_error(exc, repo_id, revision, endpoint, "looking up the revision") from exc
        from_branch = revision not in tags and revision in branches
        name, requested, ver = revision, revision, _version_of(revision) if from_branch else None
    elif version is not None:
        if version not in versions:
            raise VersionNotFoundError(f"Version {version} of {repo_id} not found; available versions: "
                                       f"{_format_versions(versions)}. Pass one of those, or revision= for a "
                                       "branch, tag or commit.")
        if max(versions) > version:
            logger.info("Using version %d of %s; a newer version %d exists.", version, repo_id, max(versions))
        name, requested, sha, ver = f"v{version}", f"v{version}", versions[version], version
    elif versions:
        ver = max(versions)
        logger.info("No version given for %s; using the newest, version %d (branch v%d). Pass "
                    "version=%d to pin it.", repo_id, ver, ver, ver)
        name, sha = f"v{ver}", versions[ver]
    elif "main" in branches:
        logger.info("%s has no version branches; using branch 'main'.", repo_id)
        name, sha, ver = "main", branches["main"], None
    else:
        raise RevisionError(f"{repo_id} has no version branches (v1, v2, ...) and no 'main' branch; pass "
                            f"revision= with one of: {_format_refs(branches, tags)}.")
    _write_ref(repo_id, t, name, sha)
    return HubRef(repo_id, t, requested, sha, ver, endpoint)


def versions(repo_id: str, *, repo_type: RepoType = "kernel", endpoint: str | None = None) -> dict[int, str]:
    """The version branches of a repository, ``N -> sha``: one refs request; offline the
    cached ones, no request. :raises HubError: the Hub could not be asked."""
    if is_offline():
        return _cached_versions(repo_id, repo_type)
    try:
        return _versions(_refs(repo_id, repo_type, endpoint)[0])
    except Exception as exc:
        raise map_error(exc, repo_id, None, endpoint, "listing versions") from exc


def _refs(repo_id: str, t: str, endpoint: str | None) -> tuple[dict[str, str], dict[str, str]]:
    """The branches and tags of a repository, name -> commit sha (one request)."""
    data = hub_json(endpoint, f"/api/{t}s/{repo_id}/refs")
    branches, tags = ({r["name"]: _sha_of(repo_id, r["name"], r["targetCommit"]) for r in data[k]}
                      for k in ("branches", "tags"))
    return branches, tags


def _commit(repo_id: str, t: str, revision: str, endpoint: str | None) -> str:
    """The commit sha of any ``revision`` (branch, tag, ``refs/pr/N``, sha): one request."""
    data = hub_json(endpoint, f"/api/{t}s/{repo_id}/revision/{quote(revision, safe='')}")
    return _sha_of(repo_id, revision, data.get("sha") if isinstance(data, dict) else None)


def _sha_of(repo_id: str, revision: str, sha: object) -> str:
    if isinstance(sha, str) and _SHA_RE.fullmatch(sha):
        return sha
    raise HubError(f"The Hub returned no commit sha for {repo_id} at revision {revision!r} (got {sha!r}).")
