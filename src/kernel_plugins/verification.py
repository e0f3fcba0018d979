"""Read a fetched variant once and verify it: the step between fetching and importing.

:func:`verify` reads ``metadata.json`` first (capped, validated). Then every file is read
once and hashed in the same pass (:func:`kernel_plugins.integrity.read_variant`)
and checked:

- Hub variants against the commit's file listing (cached by huggingface_hub, else the
  record of the first verification, else the blob names of the cached files), the lock
  file's hash when a lock pins the variant, and the metadata ``digest``;
- local folders, ``LOCAL_KERNELS`` overrides, plugin-shipped and reference kernels against
  the metadata ``digest`` when it has one; their links must stay inside the variant.

The result, a :class:`VerifiedVariant`, holds the bytes that were checked; the importer
executes those and nothing else.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from ._record import record
from .errors import MetadataError
from .fetching import Fetched, Offer, fetch
from .integrity import VariantCheck, VariantSnapshot, read_variant, verify_digest, verify_snapshot
from .integrity.archive import read_archive
from .integrity.digest import digest_algorithm
from .integrity.varianthash import FileHash
from .metadata import KernelMetadata, parse_metadata_bytes

__all__ = ["VerifiedVariant", "verify", "check_cached", "fetch_checked", "peek_metadata",
           "archs_reader"]


@record
class VerifiedVariant:
    """A variant whose files were read once and passed every check that applies.

    Attributes:
        fetched: where it came from. metadata: its validated ``metadata.json``.
        snapshot: the bytes that were checked (the importer runs these).
        check: the Hub check (listing, lock, digest), None for local sources.
        signer: who signed ``metadata.json`` (``identity (issuer)``), None when unsigned or
            not checked (:mod:`kernel_plugins.signatures`).
    """

    fetched: Fetched
    metadata: KernelMetadata
    snapshot: VariantSnapshot
    check: VariantCheck | None = None
    signer: str | None = None


def _snapshot(fetched: Fetched, raw: bytes | None, metadata: KernelMetadata | None,
              use_receipts: bool = True) -> VariantSnapshot:
    """Every file read once (``metadata.json``: these bytes), hashed as the checks need (large
    files known by a receipt: not again, unless not ``use_receipts``); native extensions of the
    Hub cache are imported from the cached files when only this user can change them."""
    from . import hub

    alg = digest_algorithm(metadata.digest) if metadata is not None else None
    algorithms = ["sha256", *(["git"] if fetched.offer.ref is not None else []), *([alg] if alg else [])]
    caches = (hub.cache_dir(),) if fetched.offer.ref is not None else ()
    return read_variant(fetched.path, link_roots=fetched.link_roots, algorithms=algorithms, caches=caches,
                        use_receipts=use_receipts,
                        preread={**({"metadata.json": raw} if raw is not None else {}),
                                 **read_archive(fetched.path, metadata, fetched.link_roots)})


def peek_metadata(off: Offer, variant: str) -> bytes:
    """The raw ``metadata.json`` of a variant of ``off`` before it is chosen, read as
    :func:`verify` reads it (of a Hub variant only that file is fetched).
    :raises MetadataError: missing or too large. SourceError / HubError: no download."""
    from .signatures import read_metadata

    if off.ref is None:
        return read_metadata(fetch(off, variant))
    from . import distributed, hub

    ref, rel = off.ref, f"build/{variant}/metadata.json"
    path = distributed.once_per_node(lambda: hub.download_file(ref, rel), what=f"the download of {ref.repo_id} {rel}",
                                     folder=hub.cache_dir())
    return read_metadata(Fetched(off, variant, path.parent, (hub.blobs_folder(off.ref),)))


def archs_reader(off: Offer, backend: str, seen: dict[str, bytes]) -> Callable[[str], tuple[str, ...]]:
    """``archs_of`` for :func:`kernel_plugins.resolving.check_archs`: a variant's
    ``backend.archs`` if built for ``backend``, from :func:`peek_metadata`; the bytes go into
    ``seen`` for :func:`verify`, so that the ``metadata.json`` that decided is the one verified."""

    def archs_of(variant: str) -> tuple[str, ...]:
        raw = seen[variant] = peek_metadata(off, variant)
        try:
            field = parse_metadata_bytes(raw, where=f"{off.where} build/{variant}/metadata.json").backend
        except MetadataError:
            return ()  # chosen, so that verify reports it, after the signature check
        return field.archs if field.type == backend else ()

    return archs_of


def verify(fetched: Fetched, *, metadata_bytes: bytes | None = None) -> VerifiedVariant:
    """Read a fetched variant once and check it (see the module docs).

    :param metadata_bytes: its ``metadata.json`` as read to choose it (:func:`peek_metadata`):
        these bytes are checked as the file's content, not read again.
    :raises MetadataError: ``metadata.json`` is missing or invalid.
    :raises IntegrityError: a file does not match, or a link or entry is refused; nothing
        from the variant may be imported (:class:`SignatureError`: its signature is refused).
    """
    from .signatures import on_load, read_metadata

    raw = read_metadata(fetched) if metadata_bytes is None else metadata_bytes
    signer = on_load(fetched, raw)  # the signature is checked over these bytes before parsing
    metadata = parse_metadata_bytes(raw, where=str(fetched.path / "metadata.json"))
    snapshot = _snapshot(fetched, raw, metadata)
    if fetched.offer.ref is None:
        if metadata.digest is not None:
            verify_digest(snapshot, metadata.digest, where=f"{fetched.offer.where} {fetched.variant}")
        return VerifiedVariant(fetched, metadata, snapshot, signer=signer)
    check = check_hub_snapshot(fetched, snapshot, metadata)
    check.raise_for_problems()
    _remember(fetched, check)
    return VerifiedVariant(fetched, metadata, snapshot, check, signer)


def _remember(fetched: Fetched, check: VariantCheck) -> None:
    """Record a Hub variant's files after its first successful check."""
    from . import hub

    ref = fetched.offer.ref
    assert ref is not None
    if not hub.record_path(ref, fetched.variant).is_file():
        hub.write_record(ref, fetched.variant, check.computed_hash, check.actual)


def check_hub_snapshot(fetched: Fetched, snapshot: VariantSnapshot, metadata: KernelMetadata | None, *,
                       listing: Mapping[str, FileHash] | None = None) -> VariantCheck:
    """Check a snapshot of a cached Hub variant; makes no request.

    The per-file reference is ``listing`` when given, else the commit's listing
    huggingface_hub cached, else the record of the first verification.
    """
    from . import hub

    off, variant = fetched.offer, fetched.variant
    ref = off.ref
    assert ref is not None
    expected, source = listing, "given listing"
    if expected is None:
        cached = hub.cached_listing(ref)
        if cached is not None:
            expected, source = cached.get(variant, {}), f"cached file listing of commit {ref.sha}"
        else:
            record = hub.read_record(ref, variant)
            if record is not None:
                expected, source = record, "record of the first verification"
    pinned = off.lock.variants.get(variant) if off.lock is not None else None
    check = verify_snapshot(snapshot, label=f"{ref.repo_id}@{ref.sha[:12]}", variant=variant, expected=expected,
                            expected_source=source, pinned_hash=pinned.hash if pinned is not None else None,
                            pinned_by=off.lockfile, digest=metadata.digest if metadata is not None else None,
                            repair=hub.repair_hint(ref, pinned=pinned is not None))
    if off.lock is not None and pinned is None:
        check.notes.append(f"{off.lockfile} pins the commit only: no hash or signer of {variant} was checked")
    return check


def check_cached(fetched: Fetched, *, listing: Mapping[str, FileHash] | None = None) -> VariantCheck:
    """Check a cached Hub variant without importing it (``kernel-plugins verify``).

    Like :func:`verify`, but an invalid ``metadata.json`` is reported as a problem of the
    check rather than raised.

    :raises IntegrityError: a link or entry of the folder is refused.
    """
    metadata: KernelMetadata | None = None
    raw, problem = None, None
    from .signatures import check_locked, on_load, read_metadata, signature_required

    try:
        raw = read_metadata(fetched)
        metadata = parse_metadata_bytes(raw, where=str(fetched.path / "metadata.json"))
    except MetadataError as e:
        problem = str(e)
    check = check_hub_snapshot(fetched, _snapshot(fetched, raw, metadata, False), metadata, listing=listing)
    for dep in metadata.kernel_depends if metadata and fetched.offer.lockfile else ():  # as a locked load would
        fetched.offer.lockfile.require(dep)  # type: ignore[union-attr]
    if problem is not None:
        check.notes.append(f"metadata.json could not be used, so its digest was not checked: {problem}")

    pinned = fetched.offer.lock.variants.get(fetched.variant) if fetched.offer.lock is not None else None
    res = None
    if pinned is not None and pinned.signer is not None:  # signed at lock time: still, by the same
        res = check_locked(fetched, raw or b"", pinned.signer)
    if signature_required():  # download and verify under KERNEL_PLUGINS_REQUIRE_SIGNATURE=1
        on_load(fetched, raw or b"", res)
    return check


def fetch_checked(off: Offer, variant: str, *, progress: bool = True) -> Fetched:
    """Fetch one variant of a Hub offer and check it, without importing it.

    Used by ``kernel-plugins download``: the same fetch and checks as loading (listing, the
    lock's hash when the offer's lock pins the variant, the metadata digest), and the
    record of the first successful check.

    :raises IntegrityError: the files do not match; SourceError / HubError: no download.
    """
    fetched = fetch(off, variant, progress=progress)
    check = check_cached(fetched)
    check.raise_for_problems()
    _remember(fetched, check)
    return fetched
