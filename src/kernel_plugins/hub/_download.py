"""List the build variants of a pinned commit and fetch exactly one of them.

:func:`list_variant_names` names the folders under ``build/`` at a commit, from one recursive listing of ``build/``,
kept in the cache (:func:`list_files`); :func:`download_variant` downloads one ``build/<variant>/`` into the
huggingface_hub cache (nothing else of the repository) with one GET per file, no metadata request: each file is
named, and checked as it arrives, by the hash the listing gives. :func:`cached_variant_path` finds a variant there
without a request.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from contextlib import suppress
from pathlib import Path
from typing import Any

from kernel_plugins.errors import HubError, SourceError
from kernel_plugins.integrity import Hasher
from kernel_plugins.integrity.varianthash import listing_entry_hash
from kernel_plugins.jsonfile import write_atomic

from ._cache import (
    _cached_tree,
    _snapshot_folder,
    cache_dir,
    cached_tree_files,
    is_offline,
    listing_path,
    request_args,
    storage_folder,
)
from ._errors import is_not_found, map_error
from ._values import HubRef, _check_variant


def list_variant_names(ref: HubRef) -> list[str]:
    """Return the sorted names of the folders directly under ``build/`` at ``ref.sha``.

    Online this is one recursive tree request (its listing is kept for the download and the checks), or none
    when the commit's listing is cached. Offline (``HF_HUB_OFFLINE=1``) only the variants cached are listed.
    :raises SourceError: the commit has no ``build/`` folder, or nothing is cached offline.
    :raises HubError: the Hub could not be reached."""
    if is_offline():
        build = _snapshot_folder(ref) / "build"
        if not build.is_dir():
            raise _not_cached(f"{ref.repo_id} at commit {ref.sha}")
        return sorted(p.name for p in build.iterdir() if downloaded(p))
    return _variants_in_tree(_cached_tree(ref) or list_files(ref))


def list_files(ref: HubRef) -> dict[str, dict[str, Any]]:
    """Every file under ``build/`` at ``ref.sha`` with its hashes (path -> ``size``, ``blob_id``,
    ``lfs_sha256``...) in huggingface_hub's listing format, kept in a file of our own
    (:func:`listing_path`): one recursive tree request (paged by huggingface_hub).
    :raises SourceError: no ``build/`` folder. HubError: the Hub cannot be used."""
    from huggingface_hub import HfApi, RepoFile

    missing = SourceError(f"{ref.repo_id} ({ref.repo_type}) offers no build variants at commit {ref.sha}; a kernel "
                          "repository keeps one folder per build variant under build/. Check the repository id "
                          "and revision.")
    try:
        entries = list(HfApi(**request_args(ref.endpoint)).list_repo_tree(
            ref.repo_id, path_in_repo="build", revision=ref.sha, repo_type=ref.repo_type, recursive=True))
    except Exception as exc:
        raise (missing if is_not_found(exc) else map_error(exc, ref.repo_id, ref.sha, ref.endpoint,
                                                           "listing files")) from exc
    files = {e.path: {"size": e.size, "blob_id": e.blob_id, **({"lfs_sha256": e.lfs.sha256, "lfs_size": e.lfs.size}
             if e.lfs else {}), **({"xet_hash": e.xet_hash} if getattr(e, "xet_hash", None) else {})}
             for e in entries if isinstance(e, RepoFile)}
    if not _variants_in_tree(files):
        raise missing
    path = listing_path(ref)
    with suppress(OSError):
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(path, json.dumps({"format_version": 1, "files": files}, indent=1))
    return files


def cached_variant_path(ref: HubRef, variant: str) -> Path | None:
    """Return the cached ``build/<variant>`` folder of ``ref``, or ``None``; no request.

    The folder counts as cached when it holds more than ``metadata.json`` (see :func:`downloaded`) and,
    when the commit's file listing is cached, every file that listing names for the variant.
    :raises SourceError: ``variant`` is not a plain folder name."""
    _check_variant(ref, variant)
    snapshot = _snapshot_folder(ref)
    folder = snapshot / "build" / variant
    if not downloaded(folder):
        return None
    listed = (p for p in _cached_tree(ref) or [] if p.startswith(f"build/{variant}/"))
    return None if any(not (snapshot / p).is_file() for p in listed) else folder


def download_variant(ref: HubRef, variant: str, *, progress: bool = True) -> Path:
    """Download the files of ``build/<variant>`` at ``ref.sha`` and return that local folder.

    Nothing else of the repository is fetched, nor files already cached (a fully cached variant costs
    no request). ``progress=False`` hides the progress bar.
    :raises SourceError: ``variant`` is invalid, not in the repository, or not cached while ``HF_HUB_OFFLINE=1``.
    :raises HubError: the Hub could not be reached or the download broke off."""
    if (cached := cached_variant_path(ref, variant)) is not None:
        return cached
    if is_offline():
        raise _not_cached(f"Variant {variant!r} of {ref.repo_id} at commit {ref.sha}")
    files = cached_tree_files(ref) or list_files(ref)
    if not (wanted := [p for p in files if p.startswith(f"build/{variant}/")]):
        listed = ", ".join(_variants_in_tree(files)) or "none found"
        raise SourceError(f"{ref.repo_id} at commit {ref.sha} has no build variant {variant!r} "
                          f"(variants: {listed}); pick one of those.")
    from tqdm.auto import tqdm

    with ThreadPoolExecutor(8) as pool, tqdm(total=len(wanted), desc=f"Fetching {len(wanted)} files",
                                             disable=not progress) as bar:
        for _ in pool.map(lambda p: _download(ref, p, files[p]), wanted):
            bar.update()
    return _snapshot_folder(ref) / "build" / variant


def _download(ref: HubRef, path_in_repo: str, entry: dict[str, Any]) -> Path:
    """One listed file into the cache: one GET, checked as it arrives against the listing's
    hash, which names its blob (nothing is kept when they differ); its snapshot link."""
    target = _snapshot_folder(ref) / path_in_repo
    if target.is_file():
        return target
    if (fh := listing_entry_hash(entry.get("blob_id"), entry.get("lfs_sha256"), entry.get("size"))) is None:
        raise HubError(f"The Hub listed {path_in_repo} of {ref.repo_id}@{ref.sha} without a git blob id or LFS "
                       "sha256, so it cannot be checked; is the endpoint a Hugging Face Hub?")
    blob = storage_folder(ref.repo_id, ref.repo_type) / "blobs" / fh.hex
    if not blob.is_file():
        from huggingface_hub import hf_hub_url
        from huggingface_hub.file_download import http_get
        from huggingface_hub.utils import build_hf_headers

        args = request_args(ref.endpoint)
        url = hf_hub_url(ref.repo_id, path_in_repo, repo_type=ref.repo_type, revision=ref.sha,
                         endpoint=args["endpoint"])
        hasher = Hasher(fh.size or 0, ("git" if fh.kind == "git" else "sha256",))
        blob.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=blob.parent, prefix=f".{fh.hex}.", suffix=".incomplete")
        try:
            with os.fdopen(fd, "w+b") as f:
                http_get(url, f, headers=build_hf_headers(library_name=args["library_name"],
                                                          library_version=args["library_version"]),
                         expected_size=fh.size, displayed_filename=path_in_repo.rsplit("/", 1)[-1],
                         tqdm_class=_silent_tqdm_class())
                f.seek(0)
                while chunk := f.read(1 << 20):
                    hasher.update(chunk)
            if (got := next(iter(hasher.hexdigests().values()))) != fh.hex:
                raise HubError(f"{url}: the Hub sent a file that hashes to {got}, not to the {fh.describe()} its "
                               "listing names; nothing of it was kept. Try again; if it persists, the repository "
                               "or a proxy between is broken.")
            os.replace(tmp, blob)
        except Exception as exc:
            raise map_error(exc, ref.repo_id, ref.sha, ref.endpoint, f"downloading {path_in_repo}") from exc
        finally:
            with suppress(FileNotFoundError):
                os.unlink(tmp)
    target.parent.mkdir(parents=True, exist_ok=True)
    with suppress(FileExistsError):
        os.symlink(os.path.relpath(blob, target.parent), target)
    return target


def downloaded(folder: Path) -> bool:
    """Whether a cached variant folder holds more than the ``metadata.json`` (and signature) read to
    choose it (:func:`download_file`): whether the variant was downloaded."""
    return folder.is_dir() and any(p.name not in ("metadata.json", "metadata.json.sigstore") for p in folder.iterdir())


def download_file(ref: HubRef, path_in_repo: str) -> Path:
    """One file of ``ref`` in the cache, downloaded when missing (a cached file costs no
    request). :raises SourceError: no such file. HubError: the Hub cannot be used."""
    if (cached := _snapshot_folder(ref) / path_in_repo).is_file():
        return cached
    if is_offline():
        raise _not_cached(f"{path_in_repo} of {ref.repo_id} at commit {ref.sha}")
    files = cached_tree_files(ref) or list_files(ref)  # the listing, then one GET, checked
    if path_in_repo not in files:
        raise SourceError(f"{ref.repo_id} at commit {ref.sha} has no {path_in_repo}")
    return _download(ref, path_in_repo, files[path_in_repo])


def _variants_in_tree(paths: Iterable[str]) -> list[str]:
    """Sorted names of the folders directly under ``build/`` in a list of file paths."""
    return sorted({p.split("/")[1] for p in paths if p.startswith("build/") and p.count("/") >= 2})


def _not_cached(what: str) -> SourceError:
    """The error for something not in the cache while ``HF_HUB_OFFLINE=1``."""
    return SourceError(f"{what} is not in the local cache ({cache_dir()}) and HF_HUB_OFFLINE=1 "
                       "forbids downloads; unset HF_HUB_OFFLINE to fetch it.")


def _silent_tqdm_class() -> type:
    """A tqdm class that never draws (for ``progress=False``)."""
    from tqdm.auto import tqdm

    class _Silent(tqdm):  # type: ignore[misc, valid-type]
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            kwargs.pop("name", None)
            kwargs["disable"] = True
            super().__init__(*args, **kwargs)

    return _Silent
