"""What a source offers, and fetching the one variant that was chosen.

Two steps of loading live here (see ``docs/loading.md``):

- :func:`offer`: the variant names a :class:`~kernel_plugins.sources.KernelSource` offers.
  For the Hub this checks trust, takes the commit from a lock file or resolves the
  revision (under ``torch.distributed``, rank 0 resolves and shares it) and lists
  ``build/`` at that commit; for a folder it lists the variant folders.
- :func:`fetch`: the local folder of the chosen variant. For the Hub one process per node
  downloads it into huggingface_hub's cache (see :mod:`kernel_plugins.hub`).

When no variant of version ``N`` fits, :func:`later_version` names the newest later version
that has one. ``download`` and ``verify`` enter the line at a commit they already hold:
:func:`commit_offer` offers it without a request, and :func:`cached` finds a variant of
it in the cache without downloading.

Neither reads the files of a variant: verification does, once (:mod:`.verification`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from ._record import field, record
from .errors import KernelPluginsError, LockfileError, NoCompatibleVariantError
from .sources import KernelSource, hub_source, local_variants
from .variants import validate_variant_name

if TYPE_CHECKING:
    from .device import DeviceInfo, SystemInfo
    from .hub import HubRef
    from .lock import KernelLock, Lockfile

__all__ = ["Offer", "Fetched", "offer", "commit_offer", "later_version", "fetch", "cached"]

#: How many versions after the one asked for :func:`later_version` lists.
LATER_VERSIONS = 3


@record
class Offer:
    """The variants a source offers, and how they were pinned.

    Attributes:
        source: where they come from.
        where: how messages name it (``org/name at <sha12> (v1)``, a folder).
        variants: the variant names.
        folders: variant name -> folder, for local sources.
        ref: the Hub commit, for the Hub.
        lock, lockfile: the lock entry and the lock file read, when a lock file pins the commit.
    """

    source: KernelSource
    where: str
    variants: tuple[str, ...]
    folders: Mapping[str, Path] = field(default_factory=dict)
    ref: HubRef | None = None
    lock: KernelLock | None = None
    lockfile: Lockfile | None = None


@record
class Fetched:
    """The local folder of one chosen variant, not yet read.

    Attributes: offer, variant, path (the variant folder), link_roots (folders besides the
    variant that its file links may lead into: huggingface_hub's blobs).
    """

    offer: Offer
    variant: str
    path: Path
    link_roots: tuple[Path, ...] = ()


def offer(source: KernelSource, *, trust_remote_code: bool = False) -> Offer:
    """List the variants ``source`` offers (see the module docs).

    :raises TrustError: a Hub organisation that is not trusted.
    :raises LockfileError: a lock file that is invalid or does not pin the repository.
    :raises SourceError / HubError: the folder or repository cannot be listed.
    """
    if source.kind != "hub":
        assert source.path is not None
        found = local_variants(source.path)
        where = source.label if source.label == str(source.path) else f"{source.label} ({source.path})"
        return Offer(source, where, tuple(found.variants), dict(found.variants))
    return _hub_offer(source, trust_remote_code)


def commit_offer(ref: HubRef, variants: Iterable[str], *, lock: KernelLock | None = None,
                 lockfile: Lockfile | None = None) -> Offer:
    """The offer of ``variants`` of a Hub commit already resolved; makes no request and
    checks no trust (the caller did)."""
    return Offer(hub_source(ref.repo_id), str(ref), tuple(variants), ref=ref, lock=lock, lockfile=lockfile)


def _hub_offer(source: KernelSource, trust_remote_code: bool) -> Offer:
    from . import distributed, hub
    from .trust import check_trusted

    repo_id = source.repo_id
    assert repo_id is not None
    check_trusted(repo_id, trust_remote_code)
    lockfile = source.lockfile
    entry = lockfile.entry(repo_id, version=source.version, revision=source.revision) if lockfile else None

    def pin() -> tuple[HubRef, list[str]]:
        if entry is not None:
            ref = hub.resolve(repo_id, revision=entry.sha, repo_type=source.repo_type)  # type: ignore[arg-type]
            if ref.sha != entry.sha:
                raise LockfileError(f"{lockfile} pins {repo_id} at {entry.sha} but the Hub answered commit "
                                    f"{ref.sha}; re-lock with `kernel-plugins lock PROJECT_DIR`.")
            return ref, sorted(entry.variants) or hub.list_variant_names(ref)
        ref = hub.resolve(repo_id, revision=source.revision, version=source.version,
                          repo_type=source.repo_type)  # type: ignore[arg-type]
        return ref, hub.list_variant_names(ref)

    ref, names = distributed.share_from_rank0(pin, what=f"the revision of {repo_id}")
    where = f"{repo_id} at {ref.sha[:12]}"
    if entry is not None:
        where += f" (locked by {lockfile})"
    elif ref.requested:
        where += f" ({ref.requested})"
    return Offer(source, where, tuple(names), ref=ref, lock=entry, lockfile=lockfile)


def later_version(error: NoCompatibleVariantError, off: Offer, info: DeviceInfo,
                  system: SystemInfo) -> NoCompatibleVariantError:
    """``error``, naming the newest version after the ``vN`` asked for with a variant that
    fits. Costs (after the failure only): the version branches (offline: the cached ones,
    no request), then a listing per later version, newest first, at most
    :data:`LATER_VERSIONS`. A failure there leaves ``error`` as it was."""
    from . import hub
    from .resolving import resolve_variants

    ref = off.ref
    if ref is None or ref.version is None or ref.requested is None or off.lock is not None:
        return error  # not a version asked for (the newest, a commit, a lock)
    try:
        found = hub.versions(ref.repo_id, repo_type=ref.repo_type, endpoint=ref.endpoint)
    except KernelPluginsError:
        return error
    for n in sorted((n for n in found if n > ref.version), reverse=True)[:LATER_VERSIONS]:
        try:  # no build/ folder, or offline and not cached: the next
            names = hub.list_variant_names(hub.HubRef(ref.repo_id, ref.repo_type, f"v{n}", found[n], n, ref.endpoint))
        except KernelPluginsError:
            continue
        if (best := resolve_variants(names, info, system).best) is not None:
            return NoCompatibleVariantError(f"{error}\nVersion {n} of {ref.repo_id} has a build for "
                                            f"{info.device_type} ({best}): pass version={n} to use it.",
                                            resolution=error.resolution)
    return error


def fetch(off: Offer, variant: str, *, progress: bool = True) -> Fetched:
    """The local folder of ``variant`` of ``off`` (downloaded first for the Hub).

    :raises SourceError / HubError / LocalDiskError: it cannot be fetched.
    """
    validate_variant_name(variant)
    from . import distributed, hub

    if off.ref is None:  # a folder; in a huggingface_hub cache snapshot, its links lead to blobs/
        folder = off.folders[variant]
        return Fetched(off, variant, folder, hub.snapshot_blobs(folder))

    ref = off.ref
    path = distributed.once_per_node(lambda: hub.fetch_variant(ref, variant, progress=progress),
                                     what=f"the download of {ref.repo_id} {variant}", folder=hub.cache_dir())
    return Fetched(off, variant, path, (hub.blobs_folder(ref),))


def cached(off: Offer, variant: str) -> Fetched | None:
    """The cached folder of ``variant`` of the Hub offer ``off`` (None when absent); never
    downloads."""
    from . import hub

    assert off.ref is not None
    path = hub.cached_variants(off.ref).get(variant)
    return None if path is None else Fetched(off, variant, path, (hub.blobs_folder(off.ref),))
