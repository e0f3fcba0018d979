"""Plain values of the Hub source: :class:`HubRef` and checks of what a caller passes.

Repository ids, revisions, versions and variant names are checked here, before any request is made; version branch
names (``vN``) are parsed and formatted here too. Nothing in this module imports huggingface_hub.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Literal

from kernel_plugins.errors import RepoIdError, RevisionError, SourceError

from .._record import record

RepoType = Literal["kernel", "model"]

#: Repository types a kernel can live in; ``kernel`` is looked up unless ``model`` is asked for.
REPO_TYPES: tuple[RepoType, ...] = ("kernel", "model")

_NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,95}")
_SHA_RE = re.compile(r"[0-9a-f]{40}(?:[0-9a-f]{24})?")  # SHA-1 or SHA-256 git commits
_VERSION_BRANCH_RE = re.compile(r"v([1-9][0-9]*)")
_VARIANT_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+-]*")


@record
class HubRef:
    """A kernel repository on the Hub pinned to one commit.

    :param repo_id: ``org/name``.
    :param repo_type: ``"kernel"`` or ``"model"``, the type the repository answered as.
    :param requested: what the caller asked for: the revision string, ``f"v{N}"`` for a
        version, or ``None`` when neither was given.
    :param sha: the commit sha (40 or 64 hex digits) everything else uses.
    :param version: the kernel version ``N`` when the commit came from branch ``vN``.
    :param endpoint: the Hub endpoint it was resolved against (``None``: huggingface_hub's)."""

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
    :raises RepoIdError: naming the id and what to change."""
    hint = "Use the form 'org/name', e.g. 'kernels-community/activation'."
    if not isinstance(repo_id, str):
        raise RepoIdError(f"Repository id must be a string, got {type(repo_id).__name__}. {hint}")
    parts = repo_id.split("/")
    if len(parts) != 2:
        raise RepoIdError(f"Invalid repository id {repo_id!r}: expected exactly one '/' between the "
                          f"organisation and the name. {hint}")
    for label, part in zip(("organisation", "name"), parts, strict=True):
        if problem := _repo_id_part_problem(part):
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
        return f"{part!r} must start with a letter or digit and contain only letters, digits, '.', '_' and '-'"
    if "--" in part or ".." in part:
        return f"{part!r} must not contain '--' or '..'"
    if part[-1] in ".-":
        return f"{part!r} must not end with '.' or '-'"
    return None


def _check_version(repo_id: str, version: object) -> None:
    """Reject anything but a positive ``int`` (``bool`` included)."""
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        raise RevisionError(f"Invalid version {version!r} for {repo_id}: a version is a positive "
                            "integer N (it selects branch 'vN'), e.g. version=1.")


def _check_revision(repo_id: str, revision: object) -> None:
    """Reject revisions that are empty or could escape the cache's ``refs/`` folder."""
    if not isinstance(revision, str) or not revision.strip():
        raise RevisionError(f"Invalid revision {revision!r} for {repo_id}: pass a branch, tag or "
                            "commit sha as a non-empty string.")
    if (revision != revision.strip() or "\\" in revision or "\x00" in revision
            or any(p in ("", ".", "..") for p in revision.split("/"))):
        raise RevisionError(f"Invalid revision {revision!r} for {repo_id}: it must not contain '..', empty "
                            "path parts, backslashes or surrounding spaces.")


def _check_variant(ref: HubRef, variant: object) -> None:
    """Reject variant names that are not a single plain folder name."""
    if not isinstance(variant, str) or not _VARIANT_RE.fullmatch(variant) or ".." in variant:
        raise SourceError(f"Invalid build variant {variant!r} for {ref.repo_id}: a variant is one folder name under "
                          "build/ (letters, digits, '.', '_', '+', '-'; no '/', '\\' or '..'), e.g. 'torch-cpu'.")


def _versions(branches: dict[str, str]) -> dict[int, str]:
    """Map version numbers to shas for the ``vN`` entries of ``branches`` (name -> sha)."""
    found = ((_version_of(name), sha) for name, sha in branches.items())
    return {n: sha for n, sha in found if n is not None}


def _version_of(name: str) -> int | None:
    """``3`` for ``"v3"``; ``None`` for anything that is not a canonical version branch."""
    m = _VERSION_BRANCH_RE.fullmatch(name)
    return int(m.group(1)) if m else None


def _format_versions(versions: Iterable[int]) -> str:
    """``"1, 2, 10"`` (numeric order) or ``"none"``."""
    return ", ".join(str(v) for v in sorted(versions)) or "none"


def _format_refs(branches: dict[str, str], tags: dict[str, str]) -> str:
    """A short list of a repository's branches and tags for error messages."""
    names = [f"branch {b}" for b in sorted(branches)] + [f"tag {t}" for t in sorted(tags)]
    return ", ".join(names) or "none"


def download_advice(repo_id: str, revision: str | None = None, version: int | None = None) -> str:
    """The ``kernel-plugins download`` command that fetches what was asked for: a locked commit
    (``--revision SHA``; a project's whole lock: ``download PROJECT``), a revision, or version N."""
    if revision is not None and _SHA_RE.fullmatch(revision):
        return (f"kernel-plugins download {repo_id} --revision {revision} (a project's kernels.lock: "
                "kernel-plugins download PROJECT)")
    pin = f"--revision {revision}" if revision is not None else f"--version {version or 'N'}"
    return f"kernel-plugins download {repo_id} {pin}"
