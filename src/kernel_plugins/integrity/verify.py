"""Check a variant snapshot (no request, nothing read: it holds every hash) against a per-file listing (the commit's on
the Hub, or the record of the first verification), the ``git_lfs_concat`` hash a lock pins and the ``digest`` of its
``metadata.json``; the :class:`VariantCheck` says what passed and raises one error listing every problem.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from .._record import field, record
from ..errors import IntegrityError
from .digest import DigestMismatch, check_digest
from .snapshot import VariantSnapshot
from .varianthash import (
    FileHash,
    FileMismatch,
    blob_name_hashes,
    compare_files,
    snapshot_file_hashes,
    variant_hash,
)

__all__ = ["VariantCheck", "verify_snapshot"]


@record(frozen=False)
class VariantCheck:
    """The outcome of checking one variant (:func:`verify_snapshot`): its ``label`` in messages,
    the ``computed_hash`` of the files read and the ``pinned_hash`` (by ``pinned_by``), per-file
    differences (``files``) from the listing of ``listing_source`` ("": none at hand) and from
    the metadata ``digest`` (when ``has_digest``), ``notes``, the ``actual`` hashes, the
    ``bytecode`` found (never executed) and how to ``repair`` a failure."""

    label: str
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
    bytecode: tuple[str, ...] = ()
    repair: str = ""

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
            lines.append(f"variant hash: {self.pinned_by or 'the lock'} pins {self.pinned_hash}, the files "
                         f"on disk hash to {self.computed_hash}")
        lines += [f"metadata digest: {m.describe()}" for m in self.digest]
        return lines

    def summary(self) -> str:
        """A one-line outcome, for ``kernel-plugins verify``."""
        if self.ok:
            how = {"files": self.listing_source, "lock": self.pinned_hash, "digest": self.has_digest}
            checked = ", ".join(h for h, done in how.items() if done) or "hash computed"
            extra = f"; {len(self.bytecode)} bytecode file(s) present, never executed" if self.bytecode else ""
            return f"OK {self.computed_hash} ({checked}){extra}"
        return "FAILED: " + "; ".join(self.problems())

    def raise_for_problems(self) -> None:
        """Raise :class:`IntegrityError` describing every problem, or return when ok."""
        if self.ok:
            return
        problems = self.problems()
        listed = "\n".join(f"  - {line}" for line in problems[:30])
        if len(problems) > 30:
            listed += f"\n  - ... and {len(problems) - 30} more"
        notes = "".join(f"\n{n}" for n in self.notes)
        raise IntegrityError(f"{self.label} variant {self.variant} in {self.path} failed its integrity check, "
                             f"so nothing from it was imported:\n{listed}{notes}\n{self.repair}".rstrip())


def verify_snapshot(snapshot: VariantSnapshot, *, label: str, variant: str,
                    expected: Mapping[str, FileHash] | None = None, expected_source: str = "",
                    pinned_hash: str | None = None, pinned_by: object = None, digest: object | None = None,
                    repair: str = "") -> VariantCheck:
    """Check a snapshot (hashed with ``git``, ``sha256`` and the ``digest``'s algorithm) against
    ``expected`` (every file with its published hash, from ``expected_source``; None: only files
    whose cached blob name claims a hash are compared), the lock's ``pinned_hash`` and the
    parsed metadata ``digest``; ``repair`` is the error's last line."""
    notes: list[str] = []
    if expected is not None and pinned_hash is not None and variant_hash(expected) != pinned_hash:
        notes.append(f"The {expected_source} does not match the lock's hash either, so it was not used "
                     "to name files; the lock was written for other files, or the listing was changed too.")
        expected = None
    actual = snapshot_file_hashes(snapshot, expected)
    reference = expected if expected is not None else blob_name_hashes(snapshot)
    files = compare_files(reference, actual, complete=expected is not None)
    check = VariantCheck(
        label=label, variant=variant, path=Path(snapshot.root), computed_hash=variant_hash(actual), files=files,
        pinned_hash=pinned_hash, pinned_by=pinned_by, digest=[] if digest is None else check_digest(snapshot, digest),
        listing_source="" if expected is None else expected_source, notes=notes, actual=actual, repair=repair,
        bytecode=snapshot.bytecode, has_digest=digest is not None)
    if check.lock_mismatch and not files and expected is None:
        check.notes.append("No file listing of the commit is cached, so the changed file cannot be named.")
    return check

