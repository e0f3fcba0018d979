"""Loading from a Hub repository: trust, pin, resolve, fetch, verify, import.

Every Hub load (plain, locked, through layers) goes through :func:`load_from_hub`:

1. trust: the repository's organisation must be trusted (:mod:`kernel_plugins.trust`);
2. pin: the revision is resolved to a commit sha, or taken from a lock file; with
   ``torch.distributed`` initialised, rank 0 resolves and shares the sha
   (:mod:`kernel_plugins.distributed`);
3. resolve the variant for the device among those the commit (or the lock) lists;
4. fetch: :func:`fetch_variant` downloads the variant under a per-variant file lock, so
   of many processes only one downloads while the others wait and then reuse its files;
5. verify before every import (:func:`verify_variant`): the files on disk are hashed
   again and compared with the commit's file listing, with the lock's variant hash when
   the variant is pinned, and with the ``digest`` of ``metadata.json`` when it has one.
   Nothing from a variant that fails is imported; the error names each bad file with both
   hashes and says how to repair the cache.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

from .device import DeviceInfo, SystemInfo
from .errors import IntegrityError, LockfileError, SourceError
from .variants import validate_variant_name

if TYPE_CHECKING:
    from .hub import HubRef
    from .integrity import DigestMismatch
    from .loader import Candidate
    from .lock import KernelLock, VariantLock
    from .varianthash import FileHash, FileMismatch

__all__ = ["load_from_hub", "fetch_variant", "verify_variant", "VariantCheck", "repair_hint"]

log = logging.getLogger("kernel_plugins")

#: Seconds between "still waiting" notices while another process downloads a variant.
_LOCK_NOTICE_S = 30.0


def load_from_hub(
    repo_id: str,
    info: DeviceInfo,
    system: SystemInfo,
    candidates: list[Candidate],
    *,
    revision: str | None = None,
    version: int | None = None,
    lockfile: str | os.PathLike[str] | None = None,
    trust_remote_code: bool = False,
    repo_type: str | None = None,
) -> ModuleType:
    """Load ``repo_id`` from the Hub (or its cache) for ``info``.

    :param lockfile: a ``kernels.lock`` (or a folder holding one) pinning ``repo_id``; the
        commit and variant hashes come from it and ``revision``/``version`` must be None.
    :raises TrustError: the organisation is not trusted and ``trust_remote_code`` is False.
    :raises LockfileError: the lock file is invalid or does not pin ``repo_id``.
    :raises IntegrityError: the variant's files differ from what was published or pinned.
    """
    from . import distributed, hub
    from .loader import Candidate, _resolve_candidate, import_resolved
    from .trust import check_trusted

    check_trusted(repo_id, trust_remote_code)
    entry, lock_path = _locked_entry(repo_id, lockfile, revision, version)

    def pin() -> tuple[HubRef, list[str]]:
        if entry is not None:
            ref = hub.resolve(repo_id, revision=entry.sha, repo_type=repo_type)  # type: ignore[arg-type]
            if ref.sha != entry.sha:
                raise LockfileError(
                    f"{lock_path} pins {repo_id} at {entry.sha} but the Hub answered commit "
                    f"{ref.sha}; re-lock with `kernel-plugins lock PROJECT_DIR`."
                )
            return ref, sorted(entry.variants)
        ref = hub.resolve(repo_id, revision=revision, version=version, repo_type=repo_type)  # type: ignore[arg-type]
        return ref, hub.list_variant_names(ref)

    ref, names = distributed.share_from_rank0(pin, what=f"the revision of {repo_id}")
    where = f"{repo_id} at {ref.sha[:12]}"
    if entry is not None:
        where += f" (locked by {lock_path})"
    elif ref.requested:
        where += f" ({ref.requested})"
    cand = Candidate("hub", where)
    cand.hub_ref = ref
    candidates.append(cand)
    cand.variants = {n: Path("build") / n for n in names}
    best = _resolve_candidate(cand, info, system)
    validate_variant_name(best)
    pinned = entry.variants[best] if entry is not None else None
    path = distributed.once_per_node(
        lambda: fetch_variant(ref, best, pinned=pinned, pinned_by=lock_path),
        what=f"the download of {repo_id} {best}",
    )
    return import_resolved(
        repo_id=repo_id,
        variant=best,
        path=path,
        source="hub",
        device=info,
        revision=ref.requested if entry is None else f"locked:{ref.sha}",
        sha=ref.sha,
    )


def _locked_entry(
    repo_id: str,
    lockfile: str | os.PathLike[str] | None,
    revision: str | None,
    version: int | None,
) -> tuple[KernelLock | None, Path | None]:
    """The lock entry for ``repo_id`` (and the lock file), or (None, None) without a lock."""
    if lockfile is None:
        return None, None
    from .lock import lock_entry, lockfile_path, read_lockfile

    path = lockfile_path(lockfile)
    if revision is not None or version is not None:
        raise LockfileError(
            f"{repo_id}: pass either lockfile= ({path}) or revision=/version=, not both; the "
            "lock file already pins the commit."
        )
    entry = lock_entry(read_lockfile(path), repo_id, where=path)
    if not entry.variants:
        raise LockfileError(
            f"{path}: the entry of {repo_id} pins no variants; re-lock with "
            "`kernel-plugins lock PROJECT_DIR`."
        )
    return entry, path


# --- fetching ---------------------------------------------------------------------------


def storage_folder(ref: HubRef) -> Path:
    """huggingface_hub's cache folder of the repository of ``ref``."""
    from . import hub

    return hub.storage_folder(ref.repo_id, ref.repo_type)


@contextlib.contextmanager
def _variant_lock(ref: HubRef, variant: str) -> Iterator[None]:
    """Hold the per-variant download lock (in huggingface_hub's ``.locks`` folder).

    A read-only cache cannot hold locks; then nothing is locked (nothing can be
    downloaded there either). The lock is released by the OS if its holder dies.
    """
    from filelock import FileLock, Timeout
    from huggingface_hub import constants

    folder = Path(constants.HF_HUB_CACHE).expanduser() / ".locks" / storage_folder(ref).name
    path = folder / f"kernel-plugins--{ref.sha}--{variant}.lock"
    lock: Any = None
    try:
        folder.mkdir(parents=True, exist_ok=True)
        lock = FileLock(str(path))
        while True:
            try:
                lock.acquire(timeout=_LOCK_NOTICE_S)
                break
            except Timeout:
                log.info("Waiting for another process downloading %s %s (%s)", ref, variant, path)
    except OSError as exc:
        log.debug("No download lock for %s %s (%s): %s", ref, variant, path, exc)
        lock = None
    try:
        yield
    finally:
        if lock is not None:
            lock.release()


def fetch_variant(
    ref: HubRef,
    variant: str,
    *,
    pinned: VariantLock | None = None,
    pinned_by: object = None,
    progress: bool = True,
) -> Path:
    """Make ``build/<variant>`` of ``ref`` available in the cache, verified; return its folder.

    Downloads under a per-variant file lock (one process downloads, concurrent ones wait
    and then find it cached; a fully cached variant costs no request), then checks the
    files with :func:`verify_variant`. After the first successful check a small record of
    the verified files is kept next to the cache (``<repo cache>/kernel-plugins/``): a file
    that later disappears is then reported as missing instead of being quietly fetched
    again, while a download that was interrupted before it ever completed is resumed.

    :param pinned: the lock's hash of the variant, when a lock file pins it.
    :param pinned_by: the lock file, for messages.
    :raises IntegrityError: the files do not match (nothing should be imported from them).
    :raises SourceError / HubError: the variant cannot be fetched.
    """
    from . import hub

    folder = storage_folder(ref) / "snapshots" / ref.sha / "build" / variant
    with _variant_lock(ref, variant):
        record = read_record(ref, variant)
        path = hub.cached_variant_path(ref, variant)
        if path is None and record is not None and folder.is_dir():
            path = folder  # it was complete once: check it as it is
        if path is None:
            path = hub.download_variant(ref, variant, progress=progress)
    check = verify_variant(ref, variant, path, pinned=pinned, pinned_by=pinned_by, record=record)
    check.raise_for_problems()
    if record is None:
        _write_record(ref, variant, check)
    return path


def _record_path(ref: HubRef, variant: str) -> Path:
    return storage_folder(ref) / "kernel-plugins" / ref.sha / f"{variant}.json"


def read_record(ref: HubRef, variant: str) -> dict[str, FileHash] | None:
    """The files recorded when the variant was last verified, or None."""
    from .varianthash import FileHash

    try:
        data = json.loads(_record_path(ref, variant).read_text(encoding="utf-8"))
        files = {
            str(rel): FileHash(item["kind"], item["hex"], item.get("size"))
            for rel, item in data["files"].items()
        }
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None
    if any(fh.kind not in ("git", "lfs") for fh in files.values()):
        return None
    return files


def _write_record(ref: HubRef, variant: str, check: VariantCheck) -> None:
    """Record a verified variant's files (atomically; best effort)."""
    path = _record_path(ref, variant)
    data = {
        "repo_id": ref.repo_id,
        "sha": ref.sha,
        "variant": variant,
        "hash": check.computed_hash,
        "files": {
            rel: {"kind": fh.kind, "hex": fh.hex, "size": fh.size}
            for rel, fh in sorted(check.actual.items())
        },
    }
    tmp: str | None = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{variant}.", suffix=".tmp")
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(data, f, indent=1)
        os.replace(tmp, path)
        tmp = None
    except OSError as exc:
        log.debug("Could not record the verified files of %s %s: %s", ref, variant, exc)
    finally:
        if tmp is not None:
            with contextlib.suppress(OSError):
                os.unlink(tmp)


# --- verification -----------------------------------------------------------------------


@dataclass
class VariantCheck:
    """The outcome of checking one cached variant (see :func:`verify_variant`).

    Attributes:
        ref, variant, path: what was checked.
        computed_hash: the ``git_lfs_concat`` hash of the files on disk.
        pinned_hash: the lock's hash, when pinned. pinned_by: the lock file.
        files: per-file differences from the reference listing.
        digest: differences from the metadata ``digest`` (empty when it has none).
        listing_source: where the per-file reference came from ("" when none was at hand).
        notes: further findings (e.g. the listing disagreeing with the lock).
        has_digest: whether ``metadata.json`` carries a digest (it was checked).
        actual: the hashes of the files on disk.
    """

    ref: Any
    variant: str
    path: Path
    computed_hash: str
    pinned_hash: str | None = None
    pinned_by: object = None
    files: list[FileMismatch] = field(default_factory=list)
    digest: list[DigestMismatch] = field(default_factory=list)
    listing_source: str = ""
    notes: list[str] = field(default_factory=list)
    has_digest: bool = False
    actual: dict[str, FileHash] = field(default_factory=dict, repr=False)

    @property
    def lock_mismatch(self) -> bool:
        """Whether a pinned hash exists and differs from the files."""
        return self.pinned_hash is not None and self.pinned_hash != self.computed_hash

    @property
    def ok(self) -> bool:
        """Whether every check passed."""
        return not (self.files or self.digest or self.lock_mismatch)

    def problems(self) -> list[str]:
        """One line per problem: file, both hashes."""
        lines = [m.describe() for m in self.files]
        if self.lock_mismatch:
            lines.append(
                f"variant hash: {self.pinned_by or 'the lock'} pins {self.pinned_hash}, the files "
                f"on disk hash to {self.computed_hash}"
            )
        lines += [f"metadata digest: {m.describe()}" for m in self.digest]
        return lines

    def summary(self) -> str:
        """A one-line outcome, for ``kernel-plugins verify``."""
        if self.ok:
            how = ["files" if self.listing_source else "", "lock" if self.pinned_hash else ""]
            how.append("digest" if self.has_digest else "")
            checked = ", ".join(h for h in how if h) or "hash computed"
            return f"OK {self.computed_hash} ({checked})"
        return "FAILED: " + "; ".join(self.problems())

    def raise_for_problems(self) -> None:
        """Raise :class:`IntegrityError` describing every problem, or return when ok."""
        if self.ok:
            return
        listed = "\n".join(f"  - {line}" for line in self.problems()[:30])
        more = len(self.problems()) - 30
        if more > 0:
            listed += f"\n  - ... and {more} more"
        notes = "".join(f"\n{n}" for n in self.notes)
        raise IntegrityError(
            f"{self.ref.repo_id}@{self.ref.sha[:12]} variant {self.variant} in {self.path} "
            f"failed its integrity check, so nothing from it was imported:\n{listed}{notes}\n"
            f"{repair_hint(self.ref, pinned=self.pinned_hash is not None)}"
        )


def repair_hint(ref: HubRef, *, pinned: bool = False) -> str:
    """How to repair a cached variant that failed its check."""
    folder = storage_folder(ref)
    hint = (
        f"To repair: delete the cached copy of {ref.repo_id} (rm -rf '{folder}'; its blobs must "
        "go too, or they are reused) and load again to download it afresh (or run "
        "`kernel-plugins download PROJECT_DIR`)."
    )
    if pinned:
        hint += (
            " If a fresh download fails the same way, the published files differ from the ones "
            "the lock pinned: find out why before re-locking."
        )
    return hint


def _read_digest(path: Path) -> object | None:
    """The raw ``digest`` of a variant's ``metadata.json``, or None (absent or unreadable).

    An unreadable metadata file is reported when the variant is imported.
    """
    try:
        data = json.loads((path / "metadata.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data.get("digest") if isinstance(data, dict) else None


def verify_variant(
    ref: HubRef,
    variant: str,
    path: Path,
    *,
    pinned: VariantLock | None = None,
    pinned_by: object = None,
    listing: dict[str, FileHash] | None = None,
    record: dict[str, FileHash] | None = None,
) -> VariantCheck:
    """Check the files of a cached variant; makes no request.

    The files are hashed and compared with

    - the commit's file listing (``listing``, else the one huggingface_hub cached with the
      download, else ``record``: the files found when the variant was first verified);
      without any, with the hashes the cached blobs are named after;
    - ``pinned``: the lock's ``git_lfs_concat`` hash of the variant;
    - the ``digest`` of ``metadata.json``, when present (missing, changed and unexpected
      files are each reported).

    :return: a :class:`VariantCheck`; call ``raise_for_problems()`` to refuse a bad variant.
    """
    from .integrity import check_digest
    from .varianthash import (
        blob_name_hashes,
        cached_listing,
        compare_files,
        disk_file_hashes,
        variant_hash,
    )

    if not Path(path).is_dir():
        raise SourceError(f"{ref} variant {variant}: {path} is not a folder")
    source = "given listing"
    expected = listing
    if expected is None:
        cached = cached_listing(ref)
        if cached is not None:
            expected, source = cached.get(variant, {}), "cached file listing"
        elif record is not None:
            expected, source = record, "record of the first verification"
    notes: list[str] = []
    if expected is not None and pinned is not None and variant_hash(expected) != pinned.hash:
        notes.append(
            f"The {source} of commit {ref.sha} does not match the lock's hash either, so it was "
            "not used to name files; the lock was written for other files, or the listing was "
            "changed too."
        )
        expected = None
    actual = disk_file_hashes(path, expected)
    if expected is not None:
        files = compare_files(expected, actual)
    else:
        source = ""
        files = compare_files(blob_name_hashes(path), actual, complete=False)
    check = VariantCheck(
        ref=ref,
        variant=variant,
        path=Path(path),
        computed_hash=variant_hash(actual),
        pinned_hash=pinned.hash if pinned is not None else None,
        pinned_by=pinned_by,
        files=files,
        listing_source=source,
        notes=notes,
        actual=actual,
    )
    digest = _read_digest(Path(path))
    if digest is not None:
        check.digest = check_digest(Path(path), digest)
        check.has_digest = True
    if check.lock_mismatch and not files and expected is None:
        check.notes.append(
            "No file listing of the commit is cached, so the changed file cannot be named."
        )
    return check
