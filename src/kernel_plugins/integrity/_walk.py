"""The one walker of a build-variant folder: every entry is seen, links included.

A link is accepted only when it leads to a regular file inside the variant folder or a
folder the caller allows (huggingface_hub's ``blobs/``); any other link, and anything but a
regular file, is an :class:`~kernel_plugins.errors.IntegrityError`. Python bytecode is
listed apart: it never counts for a hash and is never executed.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Sequence
from pathlib import Path, PurePosixPath

from .._record import record
from ..errors import IntegrityError

__all__ = ["WalkEntry", "VariantTree", "walk_variant", "is_bytecode", "inside", "MAX_FILES", "MAX_DEPTH"]

#: A variant with more files than this is refused (real ones hold a handful).
MAX_FILES = 20_000
#: Folders nested deeper than this are refused.
MAX_DEPTH = 32


@record
class WalkEntry:
    """One file of a variant: ``rel`` (POSIX, relative to the variant folder), ``path`` (not
    resolved) and, for a link, ``link_target``: the name of the file it points to (a blob's hash)."""

    rel: str
    path: Path
    link_target: str | None = None


@record
class VariantTree:
    """What :func:`walk_variant` found: the files that count and the bytecode beside them."""

    root: Path
    files: tuple[WalkEntry, ...]
    bytecode: tuple[str, ...]


def is_bytecode(rel: str) -> bool:
    """Whether a variant-relative POSIX path is Python bytecode (``*.pyc``, ``__pycache__``)."""
    parts = PurePosixPath(rel).parts
    return "__pycache__" in parts or (bool(parts) and parts[-1].endswith(".pyc"))


def inside(path: Path, roots: Sequence[Path]) -> bool:
    """Whether the resolved ``path`` lies inside (or is) one of the resolved ``roots``."""
    return any(path == r or r in path.parents for r in roots)


def _link(entry: os.DirEntry[str], rel: str, roots: Sequence[Path]) -> str:
    """Check one link; return the name of its target."""
    where = Path(entry.path)
    try:
        target = Path(os.path.realpath(where, strict=True))
        mode = os.stat(target).st_mode
    except (OSError, RuntimeError) as e:
        raise IntegrityError(f"{where}: the link cannot be followed ({e}); replace it with the file itself") from None
    if not inside(target, roots):
        raise IntegrityError(f"{where}: a link that points outside the variant folder (to {target}); refusing "
                             "to read code from there. Replace the link with the file itself.")
    if stat.S_ISDIR(mode):
        raise IntegrityError(f"{where}: a link to a folder ({target}); variant folders may not contain folder "
                             "links. Replace the link with the folder itself.")
    if not stat.S_ISREG(mode):
        raise IntegrityError(f"{where}: the link leads to {target}, which is not a regular file")
    return os.readlink(where).replace("\\", "/").rsplit("/", 1)[-1] or rel


def walk_variant(root: Path, *, link_roots: Sequence[Path] = (),
                 problems: list[IntegrityError] | None = None) -> VariantTree:
    """Every file of the variant folder ``root`` (sorted by path) and its bytecode, each link
    checked; links may also lead into ``link_roots``. With ``problems``, a refused entry is
    appended there and skipped instead of raised (``kernel-plugins check`` reports them all).
    :raises IntegrityError: ``root`` is not a folder; a refused link or entry; nested deeper
        than :data:`MAX_DEPTH` or more than :data:`MAX_FILES` files."""
    base = Path(root)
    try:
        resolved = base.resolve(strict=True)
    except (OSError, RuntimeError) as e:
        raise IntegrityError(f"{base} cannot be read: {e}") from None
    if not resolved.is_dir():
        raise IntegrityError(f"{base} is not a folder")
    roots = [resolved, *(Path(r).resolve() for r in link_roots)]
    files: list[WalkEntry] = []
    bytecode: list[str] = []
    stack: list[tuple[Path, str, int]] = [(resolved, "", 0)]
    while stack:
        folder, prefix, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise IntegrityError(f"{folder}: folders are nested more than {MAX_DEPTH} deep")
        try:
            entries = sorted(os.scandir(folder), key=lambda e: e.name)
        except OSError as e:
            raise IntegrityError(f"cannot list {folder}: {e}") from None
        for entry in entries:
            rel = prefix + entry.name
            try:
                link = entry.is_symlink()
                if entry.is_dir(follow_symlinks=False):
                    stack.append((Path(entry.path), rel + "/", depth + 1))
                elif not (link or entry.is_file(follow_symlinks=False)):
                    raise IntegrityError(f"{entry.path}: not a regular file, folder or link; a variant folder "
                                         "holds only files")
                else:
                    target = _link(entry, rel, roots) if link else None
                    if is_bytecode(rel):
                        bytecode.append(rel)
                    else:
                        files.append(WalkEntry(rel, Path(entry.path), target))
            except IntegrityError as e:
                if problems is None:
                    raise
                problems.append(e)
            if len(files) > MAX_FILES:
                raise IntegrityError(f"{base}: more than {MAX_FILES} files; not a kernel variant")
    files.sort(key=lambda f: f.rel.encode("utf-8"))
    return VariantTree(base, tuple(files), tuple(sorted(bytecode)))
