"""List the build variants of a pinned commit and fetch exactly one of them.

:func:`list_variant_names` names the folders under ``build/`` at a commit;
:func:`download_variant` downloads one ``build/<variant>/`` into the huggingface_hub cache
(nothing else of the repository), and :func:`cached_variant_path` finds it there without
a request.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from kernel_plugins.errors import SourceError

from ._cache import _cached_tree, _snapshot_folder, cache_dir, is_offline, request_args
from ._errors import is_not_found, map_error
from ._values import HubRef, _check_variant


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
            raise _not_cached(f"{ref.repo_id} at commit {ref.sha}")
        return sorted(p.name for p in build.iterdir() if downloaded(p))
    if cached := _variants_in_tree(_cached_tree(ref) or []):
        return cached
    entries = build_tree(ref, "listing build variants", f"{ref.repo_id} ({ref.repo_type}) has no "
                         f"build/ folder at commit {ref.sha}; a kernel repository keeps one folder "
                         "per build variant under build/. Check the repository id and revision.")
    from huggingface_hub import RepoFolder

    return sorted({e.path.rstrip("/").split("/")[-1] for e in entries if isinstance(e, RepoFolder)})


def build_tree(ref: HubRef, doing: str, missing: str, *, recursive: bool = False) -> list[Any]:
    """The entries under ``build/`` at ``ref.sha``: one tree request (``recursive``: every
    file, paged by huggingface_hub). A commit without ``build/`` raises
    :class:`SourceError` with the message ``missing``; any other failure is mapped with
    :func:`map_error`, naming ``doing``."""
    from huggingface_hub import HfApi

    api = HfApi(**request_args(ref.endpoint))
    try:
        return list(api.list_repo_tree(ref.repo_id, path_in_repo="build", revision=ref.sha,
                                       repo_type=ref.repo_type, recursive=recursive))
    except Exception as exc:
        if is_not_found(exc):
            raise SourceError(missing) from exc
        raise map_error(exc, ref.repo_id, ref.sha, ref.endpoint, doing) from exc


def cached_variant_path(ref: HubRef, variant: str) -> Path | None:
    """Return the cached ``build/<variant>`` folder of ``ref``, or ``None``; no request.

    The folder counts as cached when it holds more than ``metadata.json`` (see
    :func:`downloaded`) and, when huggingface_hub cached the commit's file listing, every
    file that listing names for the variant.

    :raises SourceError: ``variant`` is not a plain folder name.
    """
    _check_variant(ref, variant)
    snapshot = _snapshot_folder(ref)
    folder = snapshot / "build" / variant
    if not downloaded(folder):
        return None
    listed = (p for p in _cached_tree(ref) or [] if p.startswith(f"build/{variant}/"))
    return None if any(not (snapshot / p).is_file() for p in listed) else folder


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
        raise _not_cached(f"Variant {variant!r} of {ref.repo_id} at commit {ref.sha}")
    tree = _cached_tree(ref)
    if tree is not None and variant not in _variants_in_tree(tree):
        raise _no_such_variant(ref, variant, tree)
    from huggingface_hub import snapshot_download

    try:
        snapshot = snapshot_download(
            ref.repo_id, repo_type=ref.repo_type, revision=ref.sha, cache_dir=cache_dir(),
            allow_patterns=[f"build/{variant}/*"],  # fnmatch: '*' also crosses '/'
            **request_args(ref.endpoint), tqdm_class=None if progress else _silent_tqdm_class(),
        )
    except Exception as exc:
        raise map_error(exc, ref.repo_id, ref.sha, ref.endpoint, f"downloading {variant}") from exc
    folder = Path(snapshot) / "build" / variant
    if not folder.is_dir() or not any(folder.iterdir()):
        raise _no_such_variant(ref, variant, _cached_tree(ref) or [])
    return folder


def downloaded(folder: Path) -> bool:
    """Whether a cached variant folder holds more than the ``metadata.json`` (and signature) read to
    choose it (:func:`download_file`): whether the variant was downloaded."""
    return folder.is_dir() and any(p.name not in ("metadata.json", "metadata.json.sigstore") for p in folder.iterdir())


def download_file(ref: HubRef, path_in_repo: str) -> Path:
    """One file of ``ref`` in the cache, downloaded when missing (a cached file costs no
    request). :raises SourceError: no such file. HubError: the Hub cannot be used."""
    if (cached := _snapshot_folder(ref) / path_in_repo).is_file():
        return cached  # huggingface_hub would build its HTTP client (and ask the Hub) first
    from huggingface_hub import hf_hub_download

    try:
        return Path(hf_hub_download(ref.repo_id, path_in_repo, repo_type=ref.repo_type,
                                    revision=ref.sha, cache_dir=cache_dir(),
                                    **request_args(ref.endpoint)))
    except Exception as exc:
        if is_not_found(exc):
            raise SourceError(f"{ref.repo_id} at commit {ref.sha} has no {path_in_repo}") from exc
        raise map_error(exc, ref.repo_id, ref.sha, ref.endpoint, f"downloading {path_in_repo}") from exc


def _variants_in_tree(paths: Iterable[str]) -> list[str]:
    """Sorted names of the folders directly under ``build/`` in a list of file paths."""
    return sorted({p.split("/")[1] for p in paths if p.startswith("build/") and p.count("/") >= 2})


def _not_cached(what: str) -> SourceError:
    """The error for something not in the cache while ``HF_HUB_OFFLINE=1``."""
    return SourceError(f"{what} is not in the local cache ({cache_dir()}) and HF_HUB_OFFLINE=1 "
                       "forbids downloads; unset HF_HUB_OFFLINE to fetch it.")


def _no_such_variant(ref: HubRef, variant: str, tree: Iterable[str]) -> SourceError:
    """The error for a variant the commit does not have, listing those it has."""
    listed = ", ".join(_variants_in_tree(tree)) or "none found"
    return SourceError(f"{ref.repo_id} at commit {ref.sha} has no build variant {variant!r} "
                       f"(variants: {listed}); pick one of those.")


def _silent_tqdm_class() -> type:
    """A tqdm class that never draws (for ``progress=False``)."""
    from tqdm.auto import tqdm

    class _Silent(tqdm):  # type: ignore[misc, valid-type]
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            kwargs.pop("name", None)
            kwargs["disable"] = True
            super().__init__(*args, **kwargs)

    return _Silent
