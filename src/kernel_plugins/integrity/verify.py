"""Check a variant snapshot against everything that pins its content.

:func:`verify_snapshot` compares the files that were read (see ``snapshot``) with

- a per-file listing (the commit's file listing on the Hub, or the record of the first
  verification), naming each missing, changed or unexpected file;
- the ``git_lfs_concat`` hash a lock file pins for the variant;
- the ``digest`` of its ``metadata.json``, when it has one.

It makes no request and reads nothing: the snapshot already holds every hash. The result,
a :class:`VariantCheck`, says what passed and raises one error listing every problem.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

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


@dataclass
class VariantCheck:
    """The outcome of checking one variant (see :func:`verify_snapshot`).

    Attributes:
        label: how the variant is named in messages (``org/name@sha variant``).
        variant, path: what was checked.
        computed_hash: the ``git_lfs_concat`` hash of the files read.
        pinned_hash: the lock's hash, when pinned. pinned_by: the lock file.
        files: per-file differences from the reference listing.
        digest: differences from the metadata ``digest`` (empty when it has none).
        listing_source: where the per-file reference came from ("" when none was at hand).
        notes: further findings (e.g. the listing disagreeing with the lock).
        has_digest: whether ``metadata.json`` carries a digest (it was checked).
        actual: the hashes of the files read.
        bytecode: Python bytecode found in the folder (never executed, never hashed).
        repair: how to repair the variant when a check failed.
    """

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
            extra = (
                f"; {len(self.bytecode)} bytecode file(s) present, never executed"
                if self.bytecode else ""
            )
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
        raise IntegrityError(
            f"{self.label} variant {self.variant} in {self.path} failed its integrity check, "
            f"so nothing from it was imported:\n{listed}{notes}\n{self.repair}".rstrip()
        )


def verify_snapshot(
    snapshot: VariantSnapshot,
    *,
    label: str,
    variant: str,
    expected: Mapping[str, FileHash] | None = None,
    expected_source: str = "",
    pinned_hash: str | None = None,
    pinned_by: object = None,
    digest: object | None = None,
    repair: str = "",
) -> VariantCheck:
    """Check a snapshot against a listing, a pinned hash and a metadata digest.

    :param snapshot: the variant as read, hashed with ``git`` and ``sha256`` (and the
        digest's algorithm when ``digest`` is given).
    :param expected: every file the variant should hold, with its published hash; None
        when no listing is at hand (then only files whose cached blob name claims a hash
        are compared with it).
    :param expected_source: where ``expected`` came from, for messages.
    :param pinned_hash: the lock's ``git_lfs_concat`` hash of the variant, if pinned.
    :param digest: the metadata ``digest`` (already parsed), if any.
    :param repair: how to repair a failing variant (the last line of the error).
    """
    notes: list[str] = []
    if expected is not None and pinned_hash is not None and variant_hash(expected) != pinned_hash:
        notes.append(
            f"The {expected_source} does not match the lock's hash either, so it was not used "
            "to name files; the lock was written for other files, or the listing was changed "
            "too."
        )
        expected = None
    actual = snapshot_file_hashes(snapshot, expected)
    if expected is not None:
        files = compare_files(expected, actual)
    else:
        files = compare_files(blob_name_hashes(snapshot), actual, complete=False)
    check = VariantCheck(
        label=label,
        variant=variant,
        path=Path(snapshot.root),
        computed_hash=variant_hash(actual),
        pinned_hash=pinned_hash,
        pinned_by=pinned_by,
        files=files,
        digest=check_digest(snapshot, digest) if digest is not None else [],
        listing_source=expected_source if expected is not None else "",
        notes=notes,
        actual=actual,
        bytecode=snapshot.bytecode,
        has_digest=digest is not None,
        repair=repair,
    )
    if check.lock_mismatch and not files and expected is None:
        check.notes.append(
            "No file listing of the commit is cached, so the changed file cannot be named."
        )
    return check

