"""Which ``kernels.lock`` a locked load uses when none is named (``LockedLayerRepository`` without ``lockfile=``, the
compat ``load_kernel`` / ``get_locked_kernel`` with ``None``):

the one the calling code's installed distribution ships (its ``RECORD``), else the nearest in the folder of the
calling code's file, then the working directory, each walking up to its project root only (:data:`PROJECT_MARKERS`,
yours or root's), never in the temporary folder. It is read with ``read_lockfile(private=True)``'s rules, logged
(INFO) and named in the provenance of what it pins (see docs/loading.md).
"""

from __future__ import annotations

import logging
import os
import sys
import tempfile
from pathlib import Path

from ..errors import LockfileError
from ._format import LOCKFILE_NAME, Lockfile, _mine, read_lockfile

__all__ = ["caller_file", "find_lockfile", "find_installed_lockfile"]

log = logging.getLogger("kernel_plugins")

#: Files or folders that mark a project root; the search never goes above it.
PROJECT_MARKERS = ("pyproject.toml", "setup.py", "setup.cfg", ".git")

_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def caller_file() -> str | None:
    """The file of the first frame outside kernel-plugins and generated code (the user's
    code, also when a wrapper such as :mod:`kernel_plugins.compat.kernels` is between)."""
    frame = sys._getframe(1)
    while frame is not None:
        name = frame.f_code.co_filename
        inside = os.path.abspath(name).startswith(_PACKAGE_DIR + os.sep)
        if not inside and not name.startswith("<"):
            return name
        frame = frame.f_back  # type: ignore[assignment]
    return None


def _temp_roots() -> list[Path]:
    """The temporary folders no lock file is looked for in."""
    roots = {tempfile.gettempdir(), "/tmp", "/var/tmp", "/dev/shm"}  # noqa: S108 - refused, not used
    return [Path(os.path.realpath(r)) for r in sorted(roots)]


def _owned(path: Path) -> bool:
    """Whether ``path`` exists (a link is not followed) and belongs to you or root."""
    try:
        return _mine(os.lstat(path).st_uid)
    except OSError:
        return False


def _search_folders(start: Path) -> list[Path]:
    """``start`` and its parents up to its project root (only ``start`` without one),
    leaving out every folder in the temporary folder."""
    chain = [start, *start.parents]
    folders = [start]
    for i, folder in enumerate(chain):
        if _owned(folder) and any(_owned(folder / marker) for marker in PROJECT_MARKERS):
            folders = chain[: i + 1]
            break
    temps = _temp_roots()
    return [f for f in folders if not any(f == t or t in f.parents for t in temps)]


def _distribution_lockfile(origin: Path) -> Path | None:
    """The lock file of the installed distribution that holds the file ``origin``."""
    from importlib import metadata

    for entry in sorted({os.path.realpath(p) for p in sys.path if p}, key=len, reverse=True):
        base = Path(entry)
        if base not in origin.parents:
            continue
        top = origin.relative_to(base).parts[0].removesuffix(".py")
        for dist_name in metadata.packages_distributions().get(top, []):
            dist = metadata.distribution(dist_name)
            if Path(os.path.realpath(str(dist.locate_file("")))) == base:
                return find_installed_lockfile(dist_name)
        return None
    return None


def find_lockfile(origin: str | None, *, what: str) -> Lockfile:
    """The ``kernels.lock`` for code in the file ``origin``, read (see the module docs); ``what`` names the
    requester in messages. :raises LockfileError: none found (names where it looked), or the one found is refused."""
    start = Path(os.path.realpath(origin)) if origin else None
    found = _distribution_lockfile(start) if start is not None else None
    how = "shipped by the caller's distribution"
    looked: list[Path] = []
    if found is None:
        starts = [start.parent] if start is not None else []
        starts.append(Path(os.path.realpath(Path.cwd())))
        for folder in (f for s in starts for f in _search_folders(s)):
            looked.append(folder)
            if os.path.lexists(folder / LOCKFILE_NAME):
                found, how = folder / LOCKFILE_NAME, "nearest above the caller or the working directory"
                break
    if found is None:
        where = f"in {', '.join(str(f) for f in dict.fromkeys(looked))} (searched up to the project root, never " \
            "in the temporary folder)" if looked else "(the calling code and the working directory are in the " \
            "temporary folder, which is never searched)"
        raise LockfileError(f"{what}: no {LOCKFILE_NAME} found {where}; pass lockfile=Path('.../{LOCKFILE_NAME}') "
                            "or lock the project")
    lock = read_lockfile(found, private=True)
    log.info("%s: using lock file %s (%s%s)", what, found, how, "" if lock.hashes else "; commits only")
    return lock


def find_installed_lockfile(dist_name: str) -> Path | None:
    """The ``kernels.lock`` an installed distribution records (``RECORD``), None without one: the one in its
    ``.dist-info`` first (where :mod:`._packaging` puts it), else the topmost.
    :raises LockfileError: no distribution of that name is installed."""
    from importlib import metadata

    try:
        dist = metadata.distribution(dist_name)
    except metadata.PackageNotFoundError:
        raise LockfileError(f"no installed distribution named {dist_name!r}, so its {LOCKFILE_NAME} cannot "
                            "be found; install the project or pass lockfile= with the file's path") from None
    files = sorted((f for f in dist.files or [] if f.name == LOCKFILE_NAME),
                   key=lambda f: (not f.parts[0].endswith(".dist-info"), len(f.parts), str(f)))
    return next((p for p in (Path(str(dist.locate_file(f))) for f in files) if os.path.lexists(p)), None)
