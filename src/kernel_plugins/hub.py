"""The Hub source: resolve a kernel repository to a commit and fetch one build variant.

A kernel repository on the Hugging Face Hub (repo type ``kernel``, or ``model`` for older
ones) keeps one folder per build variant under ``build/``. This module turns what a user
asked for (a revision, a version ``N`` meaning branch ``vN``, or nothing) into a
:class:`HubRef` pinned to a commit sha, lists the variant names at that commit, and
downloads the files of exactly one variant into the huggingface_hub cache.

huggingface_hub is imported inside the functions, never when this module is imported. Its
settings are read at call time from ``huggingface_hub.constants`` (``ENDPOINT``,
``HF_HUB_OFFLINE``, ``HF_HUB_CACHE``). With ``HF_HUB_OFFLINE=1`` everything is answered
from the local cache without a request, and a commit sha already in the cache never causes
a request either.
"""

from __future__ import annotations

import importlib
import logging
import os
import re
import tempfile
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, TypeVar

from kernel_plugins.errors import (
    HubError,
    RepoIdError,
    RevisionError,
    SourceError,
    VersionNotFoundError,
)

__all__ = [
    "REPO_TYPES",
    "RepoType",
    "HubRef",
    "validate_repo_id",
    "resolve",
    "list_variant_names",
    "download_variant",
    "cached_variant_path",
    "clear_repo_type_cache",
    "hub_endpoint",
    "is_offline",
    "is_not_found",
    "map_error",
]

logger = logging.getLogger("kernel_plugins")

RepoType = Literal["kernel", "model"]
#: Repository types a kernel can live in, in the order they are tried.
REPO_TYPES: tuple[RepoType, ...] = ("kernel", "model")

_NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,95}")
_SHA_RE = re.compile(r"[0-9a-f]{40}")
_VERSION_BRANCH_RE = re.compile(r"v([1-9][0-9]*)")
_VARIANT_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+-]*")

_T = TypeVar("_T")

# Which repo type answered for (endpoint, repo_id), so later calls try it first.
_repo_type_cache: dict[tuple[str, str], RepoType] = {}
_repo_type_lock = threading.Lock()


@dataclass(frozen=True)
class HubRef:
    """A kernel repository on the Hub pinned to one commit.

    :param repo_id: ``org/name``.
    :param repo_type: ``"kernel"`` or ``"model"``, the type the repository answered as.
    :param requested: what the caller asked for: the revision string, ``f"v{N}"`` for a
        version, or ``None`` when neither was given.
    :param sha: the 40-hex commit sha everything else uses.
    :param version: the kernel version ``N`` when the commit came from branch ``vN``.
    :param endpoint: the Hub endpoint it was resolved against (``None``: huggingface_hub's).
    """

    repo_id: str
    repo_type: RepoType
    requested: str | None
    sha: str
    version: int | None = None
    endpoint: str | None = None

    def __str__(self) -> str:
        asked = f" ({self.requested})" if self.requested else ""
        return f"{self.repo_id}@{self.sha[:12]}{asked}"


def validate_repo_id(repo_id: str) -> str:
    """Check that ``repo_id`` is a well-formed ``org/name`` and return it unchanged.

    Each part starts with a letter or digit, holds only letters, digits, ``.``, ``_`` and
    ``-``, is at most 96 characters, contains no ``--`` or ``..``, does not end with ``.``
    or ``-``, and the name does not end with ``.git``.

    :raises RepoIdError: naming the id and what to change.
    """
    hint = "Use the form 'org/name', e.g. 'kernels-community/activation'."
    if not isinstance(repo_id, str):
        raise RepoIdError(f"Repository id must be a string, got {type(repo_id).__name__}. {hint}")
    parts = repo_id.split("/")
    if len(parts) != 2:
        raise RepoIdError(
            f"Invalid repository id {repo_id!r}: expected exactly one '/' between the "
            f"organisation and the name. {hint}"
        )
    for label, part in zip(("organisation", "name"), parts, strict=True):
        problem = _repo_id_part_problem(part)
        if problem:
            raise RepoIdError(f"Invalid repository id {repo_id!r}: the {label} {problem}. {hint}")
    if parts[1].endswith(".git"):
        raise RepoIdError(f"Invalid repository id {repo_id!r}: drop the '.git' suffix. {hint}")
    return repo_id


def _repo_id_part_problem(part: str) -> str | None:
    """Return what is wrong with one half of a repo id, or ``None`` when it is fine."""
    if not part:
        return "is empty"
    if not _NAME_RE.fullmatch(part):
        if len(part) > 96:
            return f"is {len(part)} characters long (at most 96)"
        return (
            f"{part!r} must start with a letter or digit and contain only letters, digits, "
            "'.', '_' and '-'"
        )
    if "--" in part or ".." in part:
        return f"{part!r} must not contain '--' or '..'"
    if part[-1] in ".-":
        return f"{part!r} must not end with '.' or '-'"
    return None


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
            if (_storage_folder(repo_id, t) / "snapshots" / revision).is_dir():
                _remember_type(endpoint, repo_id, t)
                return HubRef(repo_id, t, revision, revision, None, endpoint)
    if is_offline():
        return _resolve_offline(repo_id, types, revision, version, endpoint)
    return _resolve_online(repo_id, types, revision, version, endpoint)


def list_variant_names(ref: HubRef) -> list[str]:
    """Return the sorted names of the folders directly under ``build/`` at ``ref.sha``.

    Online this is one tree request, or none when huggingface_hub already cached the
    commit's file listing. Offline (``HF_HUB_OFFLINE=1``) only the variants whose files are
    in the local cache are listed.

    :raises SourceError: the commit has no ``build/`` folder, or nothing is cached offline.
    :raises HubError: the Hub could not be reached.
    """
    if is_offline():
        build = _snapshot_folder(ref) / "build"
        if not build.is_dir():
            raise SourceError(
                f"{ref.repo_id} at commit {ref.sha} is not in the local cache "
                f"({_cache_dir()}) and HF_HUB_OFFLINE=1 forbids downloads; unset "
                "HF_HUB_OFFLINE to fetch it."
            )
        return sorted(p.name for p in build.iterdir() if p.is_dir())
    cached = _cached_tree(ref)
    if cached is not None and _variants_in_tree(cached):
        return _variants_in_tree(cached)
    from huggingface_hub import HfApi

    api = HfApi(endpoint=hub_endpoint(ref.endpoint))
    try:
        entries = list(
            api.list_repo_tree(
                ref.repo_id, path_in_repo="build", revision=ref.sha, repo_type=ref.repo_type
            )
        )
    except Exception as exc:
        if is_not_found(exc):
            raise SourceError(
                f"{ref.repo_id} ({ref.repo_type}) has no build/ folder at commit {ref.sha}; "
                "a kernel repository keeps one folder per build variant under build/. "
                "Check the repository id and revision."
            ) from exc
        raise map_error(exc, ref.repo_id, ref.sha, ref.endpoint, "listing build variants") from exc
    from huggingface_hub import RepoFolder

    return sorted({e.path.rstrip("/").split("/")[-1] for e in entries if isinstance(e, RepoFolder)})


def cached_variant_path(ref: HubRef, variant: str) -> Path | None:
    """Return the cached ``build/<variant>`` folder of ``ref``, or ``None``; no request.

    The folder counts as cached when it exists, is non-empty and, when huggingface_hub
    cached the commit's file listing, holds every file that listing names for the variant.

    :raises SourceError: ``variant`` is not a plain folder name.
    """
    _check_variant(ref, variant)
    folder = _snapshot_folder(ref) / "build" / variant
    if not folder.is_dir() or not any(folder.iterdir()):
        return None
    tree = _cached_tree(ref)
    if tree is not None:
        prefix = f"build/{variant}/"
        for path in tree:
            if path.startswith(prefix) and not (_snapshot_folder(ref) / path).is_file():
                return None
    return folder


def download_variant(ref: HubRef, variant: str, *, progress: bool = True) -> Path:
    """Download the files of ``build/<variant>`` at ``ref.sha`` and return that local folder.

    Nothing else of the repository is fetched. Files already in the cache are not fetched
    again (a fully cached variant costs no request). ``progress=False`` hides the
    huggingface_hub progress bars.

    :raises SourceError: ``variant`` is invalid, is not in the repository, or is not cached
        while ``HF_HUB_OFFLINE=1``.
    :raises HubError: the Hub could not be reached or the download broke off.
    """
    cached = cached_variant_path(ref, variant)
    if cached is not None:
        return cached
    if is_offline():
        raise SourceError(
            f"Variant {variant!r} of {ref.repo_id} at commit {ref.sha} is not in the local "
            f"cache ({_cache_dir()}) and HF_HUB_OFFLINE=1 forbids downloads; unset "
            "HF_HUB_OFFLINE to fetch it."
        )
    tree = _cached_tree(ref)
    if tree is not None and variant not in _variants_in_tree(tree):
        raise _no_such_variant(ref, variant, tree)
    from huggingface_hub import snapshot_download

    try:
        snapshot = snapshot_download(
            ref.repo_id,
            repo_type=ref.repo_type,
            revision=ref.sha,
            allow_patterns=[f"build/{variant}/*"],  # fnmatch: '*' also crosses '/'
            endpoint=hub_endpoint(ref.endpoint),
            tqdm_class=None if progress else _silent_tqdm_class(),
        )
    except Exception as exc:
        raise map_error(exc, ref.repo_id, ref.sha, ref.endpoint, f"downloading {variant}") from exc
    folder = Path(snapshot) / "build" / variant
    if not folder.is_dir() or not any(folder.iterdir()):
        raise _no_such_variant(ref, variant, _cached_tree(ref) or [])
    return folder


def _variants_in_tree(paths: Iterable[str]) -> list[str]:
    """Sorted names of the folders directly under ``build/`` in a list of file paths."""
    return sorted({p.split("/")[1] for p in paths if p.startswith("build/") and p.count("/") >= 2})


def _no_such_variant(ref: HubRef, variant: str, tree: Iterable[str]) -> SourceError:
    """The error for a variant the commit does not have, listing those it has."""
    listed = ", ".join(_variants_in_tree(tree)) or "none found"
    return SourceError(
        f"{ref.repo_id} at commit {ref.sha} has no build variant {variant!r} "
        f"(variants: {listed}); pick one of those."
    )


# --- resolution -------------------------------------------------------------------------


def _resolve_online(
    repo_id: str,
    types: list[RepoType],
    revision: str | None,
    version: int | None,
    endpoint: str | None,
) -> HubRef:
    """Resolve with requests to the Hub (see :func:`resolve`)."""
    from huggingface_hub import HfApi

    api = HfApi(endpoint=hub_endpoint(endpoint))
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

    if revision is not None:
        sha = tags.get(revision) or branches.get(revision)
        if sha is None:
            sha = _revision_via_repo_info(api, repo_id, t, revision, endpoint, branches, tags)
        _write_ref(repo_id, t, revision, sha)
        from_branch = revision not in tags and revision in branches
        ver = _version_of(revision) if from_branch else None
        return HubRef(repo_id, t, revision, sha, ver, endpoint)

    if version is not None:
        if version not in versions:
            raise VersionNotFoundError(
                f"Version {version} of {repo_id} not found; available versions: "
                f"{_format_versions(versions)}. Pass one of those, or revision= for a "
                "branch, tag or commit."
            )
        _notice_older(repo_id, version, versions)
        _write_ref(repo_id, t, f"v{version}", versions[version])
        return HubRef(repo_id, t, f"v{version}", versions[version], version, endpoint)

    if versions:
        newest = max(versions)
        logger.info(
            "No version given for %s; using the newest, version %d (branch v%d). "
            "Pass version=%d to pin it.",
            repo_id,
            newest,
            newest,
            newest,
        )
        _write_ref(repo_id, t, f"v{newest}", versions[newest])
        return HubRef(repo_id, t, None, versions[newest], newest, endpoint)
    if "main" not in branches:
        raise RevisionError(
            f"{repo_id} has no version branches (v1, v2, ...) and no 'main' branch; pass "
            f"revision= with one of: {_format_refs(branches, tags)}."
        )
    logger.info("%s has no version branches; using branch 'main'.", repo_id)
    _write_ref(repo_id, t, "main", branches["main"])
    return HubRef(repo_id, t, None, branches["main"], None, endpoint)


def _revision_via_repo_info(
    api: Any,
    repo_id: str,
    repo_type: RepoType,
    revision: str,
    endpoint: str | None,
    branches: dict[str, str],
    tags: dict[str, str],
) -> str:
    """Resolve a revision that is neither a branch nor a tag (e.g. ``refs/pr/1``)."""
    try:
        info = api.repo_info(repo_id, repo_type=repo_type, revision=revision)
    except Exception as exc:
        if is_not_found(exc):
            raise RevisionError(
                f"Revision {revision!r} of {repo_id} not found; branches and tags: "
                f"{_format_refs(branches, tags)}. Pass one of those or a commit sha."
            ) from exc
        raise map_error(exc, repo_id, revision, endpoint, "looking up the revision") from exc
    if not info.sha:
        raise HubError(f"The Hub returned no commit sha for {repo_id} at revision {revision!r}.")
    return str(info.sha)


def _resolve_offline(
    repo_id: str,
    types: list[RepoType],
    revision: str | None,
    version: int | None,
    endpoint: str | None,
) -> HubRef:
    """Resolve from the local cache only (``HF_HUB_OFFLINE=1``); never makes a request."""
    where = f"the local cache ({_cache_dir()})"
    fix = "unset HF_HUB_OFFLINE to look it up on the Hub"
    present = [t for t in types if _storage_folder(repo_id, t).is_dir()]
    if not present:
        # offline with nothing cached: the Hub cannot be used (a HubError, so that callers
        # may fall back exactly as when the Hub is unreachable)
        raise HubError(f"{repo_id} is not in {where} and HF_HUB_OFFLINE=1 is set; {fix}.")
    if revision is not None and _SHA_RE.fullmatch(revision):
        raise RevisionError(
            f"Commit {revision} of {repo_id} is not in {where} and HF_HUB_OFFLINE=1 is set; {fix}."
        )
    if revision is not None:
        for t in present:
            sha = _read_ref(repo_id, t, revision)
            if sha:
                ver = _version_of(revision)
                return HubRef(repo_id, t, revision, sha, ver, endpoint)
        raise RevisionError(
            f"Revision {revision!r} of {repo_id} is not in {where} and HF_HUB_OFFLINE=1 is set; "
            f"{fix}."
        )
    for t in present:
        cached = _cached_versions(repo_id, t)
        if version is not None:
            if version in cached:
                return HubRef(repo_id, t, f"v{version}", cached[version], version, endpoint)
            continue
        snapshots = _storage_folder(repo_id, t) / "snapshots"
        usable = {n: sha for n, sha in cached.items() if (snapshots / sha).is_dir()} or cached
        if usable:
            newest = max(usable)
            logger.info(
                "No version given for %s; HF_HUB_OFFLINE=1, using the newest cached version %d.",
                repo_id,
                newest,
            )
            return HubRef(repo_id, t, None, usable[newest], newest, endpoint)
        main = _read_ref(repo_id, t, "main")
        if main:
            return HubRef(repo_id, t, None, main, None, endpoint)
    if version is not None:
        known = sorted({n for t in present for n in _cached_versions(repo_id, t)})
        raise VersionNotFoundError(
            f"Version {version} of {repo_id} is not in {where} and HF_HUB_OFFLINE=1 is set; "
            f"cached versions: {_format_versions(known)}. Use one of those or {fix}."
        )
    raise SourceError(f"No usable revision of {repo_id} is in {where}; {fix}.")


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


# --- values and validation --------------------------------------------------------------


def _check_version(repo_id: str, version: object) -> None:
    """Reject anything but a positive ``int`` (``bool`` included)."""
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        raise RevisionError(
            f"Invalid version {version!r} for {repo_id}: a version is a positive integer N "
            "(it selects branch 'vN'), e.g. version=1."
        )


def _check_revision(repo_id: str, revision: object) -> None:
    """Reject revisions that are empty or could escape the cache's ``refs/`` folder."""
    if not isinstance(revision, str) or not revision.strip():
        raise RevisionError(
            f"Invalid revision {revision!r} for {repo_id}: pass a branch, tag or commit sha "
            "as a non-empty string."
        )
    parts = revision.split("/")
    if (
        revision != revision.strip()
        or "\\" in revision
        or "\x00" in revision
        or any(p in ("", ".", "..") for p in parts)
    ):
        raise RevisionError(
            f"Invalid revision {revision!r} for {repo_id}: it must not contain '..', empty "
            "path parts, backslashes or surrounding spaces."
        )


def _check_variant(ref: HubRef, variant: object) -> None:
    """Reject variant names that are not a single plain folder name."""
    if not isinstance(variant, str) or not _VARIANT_RE.fullmatch(variant) or ".." in variant:
        raise SourceError(
            f"Invalid build variant {variant!r} for {ref.repo_id}: a variant is one folder "
            "name under build/ (letters, digits, '.', '_', '+', '-'; no '/', '\\' or '..'), "
            "e.g. 'torch-cpu'."
        )


def _versions(branches: dict[str, str]) -> dict[int, str]:
    """Map version numbers to shas for the ``vN`` entries of ``branches`` (name -> sha)."""
    found = ((_version_of(name), sha) for name, sha in branches.items())
    return {n: sha for n, sha in found if n is not None}


def _version_of(name: str) -> int | None:
    """``3`` for ``"v3"``; ``None`` for anything that is not a canonical version branch."""
    m = _VERSION_BRANCH_RE.fullmatch(name)
    return int(m.group(1)) if m else None


def _notice_older(repo_id: str, version: int, versions: dict[int, str]) -> None:
    """Log a one-line notice when a newer version than the requested one exists."""
    newest = max(versions)
    if newest > version:
        logger.info("Using version %d of %s; a newer version %d exists.", version, repo_id, newest)


def _format_versions(versions: Iterable[int]) -> str:
    """``"1, 2, 10"`` (numeric order) or ``"none"``."""
    ordered = sorted(versions)
    return ", ".join(str(v) for v in ordered) if ordered else "none"


def _format_refs(branches: dict[str, str], tags: dict[str, str]) -> str:
    """A short list of a repository's branches and tags for error messages."""
    names = [f"branch {b}" for b in sorted(branches)] + [f"tag {t}" for t in sorted(tags)]
    return ", ".join(names) if names else "none"


# --- huggingface_hub settings and cache layout ------------------------------------------


def hub_endpoint(endpoint: str | None) -> str:
    """The endpoint to talk to: the given one, else huggingface_hub's current setting."""
    if endpoint:
        return endpoint.rstrip("/")
    from huggingface_hub import constants

    return str(constants.ENDPOINT).rstrip("/")


def is_offline() -> bool:
    """Whether huggingface_hub is in offline mode right now (``HF_HUB_OFFLINE``)."""
    from huggingface_hub import constants

    check = getattr(constants, "is_offline_mode", None)
    return bool(check()) if callable(check) else bool(constants.HF_HUB_OFFLINE)


def _cache_dir() -> Path:
    """huggingface_hub's cache folder (``HF_HUB_CACHE``), read at call time."""
    from huggingface_hub import constants

    return Path(constants.HF_HUB_CACHE).expanduser()


def _storage_folder(repo_id: str, repo_type: str) -> Path:
    """The cache folder of one repository, e.g. ``kernels--org--name``."""
    return _cache_dir() / "--".join([f"{repo_type}s", *repo_id.split("/")])


def _snapshot_folder(ref: HubRef) -> Path:
    """The cache folder holding the files of ``ref.sha``."""
    return _storage_folder(ref.repo_id, ref.repo_type) / "snapshots" / ref.sha


def _read_ref(repo_id: str, repo_type: str, name: str) -> str | None:
    """The sha the cache's ``refs/<name>`` points at, or ``None``."""
    try:
        sha = (_storage_folder(repo_id, repo_type) / "refs" / name).read_text().strip()
    except OSError:
        return None
    return sha if _SHA_RE.fullmatch(sha) else None


def _cached_versions(repo_id: str, repo_type: str) -> dict[int, str]:
    """Versions whose ``refs/vN`` file is in the cache, mapped to their shas."""
    refs = _storage_folder(repo_id, repo_type) / "refs"
    if not refs.is_dir():
        return {}
    shas = {p.name: _read_ref(repo_id, repo_type, p.name) for p in refs.iterdir() if p.is_file()}
    return _versions({name: sha for name, sha in shas.items() if sha})


def _write_ref(repo_id: str, repo_type: str, name: str, sha: str) -> None:
    """Record ``name -> sha`` in the cache's ``refs/`` (as huggingface_hub does); best effort."""
    if _read_ref(repo_id, repo_type, name) == sha:
        return
    path = _storage_folder(repo_id, repo_type) / "refs" / name
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".ref-")
        with os.fdopen(fd, "w") as f:
            f.write(sha)
        os.replace(tmp, path)
    except OSError as exc:
        logger.debug("Could not record %s -> %s in %s: %s", name, sha, path, exc)


def _cached_tree(ref: HubRef) -> list[str] | None:
    """Paths of every file at ``ref.sha`` from huggingface_hub's cached listing, or ``None``."""
    try:
        from huggingface_hub import get_cached_repo_tree
    except ImportError:
        return None
    try:
        files = get_cached_repo_tree(ref.repo_id, repo_type=ref.repo_type, revision=ref.sha)
    except Exception:  # no listing cached (CachedRepoTreeNotFoundError) or unreadable
        return None
    return [f.path for f in files]


def _silent_tqdm_class() -> type:
    """A tqdm class that never draws (for ``progress=False``)."""
    from tqdm.auto import tqdm

    class _Silent(tqdm):  # type: ignore[misc, valid-type]
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            kwargs.pop("name", None)
            kwargs["disable"] = True
            super().__init__(*args, **kwargs)

    return _Silent


# --- error mapping ----------------------------------------------------------------------


def _status(exc: BaseException) -> int | None:
    """HTTP status of a huggingface_hub HTTP error, else ``None``."""
    response = getattr(exc, "response", None)
    status = getattr(response, "status_code", None)
    return status if isinstance(status, int) else None


def is_not_found(exc: BaseException) -> bool:
    """Whether the Hub answered 'repository / revision / entry not found' (401 or 404)."""
    from huggingface_hub.utils import HfHubHTTPError

    return isinstance(exc, HfHubHTTPError) and _status(exc) in (401, 404)


def _connection_error_types() -> tuple[type[BaseException], ...]:
    """Exception classes meaning 'could not talk to the server' for the installed HTTP stack."""
    found: list[type[BaseException]] = [ConnectionError, TimeoutError]
    for module, names in (
        ("httpx2", ("TransportError",)),
        ("httpx", ("TransportError",)),
        ("requests", ("ConnectionError", "Timeout")),
    ):
        try:
            mod = importlib.import_module(module)
        except ImportError:
            continue
        found += [getattr(mod, n) for n in names if isinstance(getattr(mod, n, None), type)]
    return tuple(found)


def map_error(
    exc: BaseException, repo_id: str, revision: str | None, endpoint: str | None, doing: str
) -> SourceError:
    """Turn a huggingface_hub / HTTP error into one of our errors with a fix."""
    from huggingface_hub.utils import HfHubHTTPError

    if isinstance(exc, SourceError):
        return exc
    url = hub_endpoint(endpoint)
    at = f" at revision {revision}" if revision else ""
    detail = f"{exc.__class__.__name__}: {exc}".strip()
    if type(exc).__name__ == "OfflineModeIsEnabled":
        return HubError(
            f"HF_HUB_OFFLINE=1 is set but {repo_id}{at} needed the Hub ({doing}); unset "
            "HF_HUB_OFFLINE or download it first."
        )
    if isinstance(exc, HfHubHTTPError):
        status = _status(exc)
        if type(exc).__name__ == "GatedRepoError":
            return HubError(
                f"{repo_id} is gated on {url}: accept its conditions on the website and log "
                f"in with `hf auth login` (or set HF_TOKEN). ({detail})"
            )
        if status in (401, 404):
            return HubError(
                f"{repo_id}{at} was not found on {url} while {doing}. Check the repository "
                f"id and revision; log in if it is private. ({detail})"
            )
        return HubError(
            f"The Hub at {url} answered HTTP {status} while {doing} for {repo_id}{at}; try "
            f"again later. ({detail})"
        )
    if isinstance(exc, _connection_error_types()):
        hint = (
            f" {repo_id} has files in the local cache: set HF_HUB_OFFLINE=1 to use them "
            "without the network."
            if any(_storage_folder(repo_id, t).is_dir() for t in REPO_TYPES)
            else ""
        )
        names = ("ConnectError", "ConnectTimeout", "ConnectionError")
        if isinstance(exc, ConnectionRefusedError) or type(exc).__name__ in names:
            return HubError(
                f"Could not reach the Hub at {url} while {doing} for {repo_id}{at} ({detail}). "
                f"Check the network and HF_ENDPOINT.{hint}"
            )
        return HubError(
            f"The connection to the Hub at {url} broke off while {doing} for {repo_id}{at} "
            f"({detail}). Try again: files already downloaded are kept.{hint}"
        )
    cause = exc.__cause__
    if isinstance(exc, OSError) and cause is not None and not isinstance(cause, SourceError):
        if isinstance(cause, _connection_error_types()):  # the cache fallback failed too
            return map_error(cause, repo_id, revision, endpoint, doing)
    if isinstance(exc, OSError) and type(exc).__name__ in (
        "LocalEntryNotFoundError",
        "IncompleteSnapshotError",
    ):
        return HubError(
            f"{repo_id}{at} could not be fetched from {url} and is not (fully) in the local "
            f"cache while {doing}. Check the network and try again. ({detail})"
        )
    return HubError(
        f"Unexpected error from the Hub at {url} while {doing} for {repo_id}{at}: {detail}"
    )
