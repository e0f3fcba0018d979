"""What the download cache holds: each kernel repository, each cached commit (``cache ls``)."""

from __future__ import annotations

from typing import Any

from ._cache import cache_dir


def cached_kernels() -> tuple[list[dict[str, Any]], list[str]]:
    """The kernel repositories in :func:`cache_dir` (repositories of type ``kernel``, and
    others with a ``build/`` folder), each with its cached commits (refs, version, variants,
    size, last access), and what could not be read; nothing is changed or downloaded.
    :raises LocalDiskError: the cache folder cannot be listed."""
    from huggingface_hub import CacheNotFound, scan_cache_dir

    from kernel_plugins.errors import LocalDiskError

    try:
        scan = scan_cache_dir(cache_dir())
    except CacheNotFound:
        return [], []
    except (OSError, ValueError) as e:  # a file, or unreadable
        raise LocalDiskError(f"cannot list the kernel cache {cache_dir()}: {e}; set KERNELS_CACHE to the cache folder") from e
    repos: list[dict[str, Any]] = []
    for repo in sorted(scan.repos, key=lambda r: (r.repo_id, r.repo_type)):
        revisions = []
        for rev in repo.revisions:
            build = rev.snapshot_path / "build"
            variants = sorted({f.file_path.relative_to(build).parts[0] for f in rev.files if build in f.file_path.parents})
            numbers = [int(r[1:]) for r in rev.refs if r[:1] == "v" and r[1:].isdecimal()]
            revisions.append({"commit": rev.commit_hash, "ref_names": sorted(rev.refs), "version": max(numbers, default=None),
                              "variants": variants, "size_on_disk": rev.size_on_disk,
                              "last_accessed": max((f.blob_last_accessed for f in rev.files), default=None)})
        if any(r["variants"] for r in revisions) or repo.repo_type == "kernel":
            revisions.sort(key=lambda r: (r["version"] is None, r["version"] or 0, r["ref_names"], r["commit"]))
            repos.append({"repo_id": repo.repo_id, "repo_type": repo.repo_type, "size_on_disk": repo.size_on_disk,
                          "last_accessed": repo.last_accessed, "revisions": revisions})
    return repos, [str(w) for w in scan.warnings]
