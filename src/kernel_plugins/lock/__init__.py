"""Lock files: a project's kernels, and the kernels they depend on, pinned to commits and
variant hashes.

The parts, one job each:

- ``_format``: ``kernels.lock`` (kernels' format) and the variant hashes beside it:
  entries, strict reading, atomic writing; :meth:`Lockfile.entry` finds the commit (and
  hashes) a lock pins for a repository and version or revision;
- ``_project``: creating a lock from ``[tool.kernels.dependencies]`` in ``pyproject.toml``
  (``kernel-plugins lock PROJECT_DIR``);
- ``_discovery``: which lock file a locked load uses when none is named;
- ``_packaging``: build hooks (setuptools, hatchling) that ship a project's lock in its wheel.
"""

from __future__ import annotations

from ._discovery import caller_file, find_installed_lockfile, find_lockfile
from ._format import (
    HASHES_SUFFIX,
    LOCKFILE_NAME,
    MAX_LOCKFILE_BYTES,
    KernelLock,
    Lockfile,
    VariantLock,
    hashes_path,
    lockfile_path,
    parse_lock,
    read_lockfile,
    write_lockfile,
)
from ._project import PYPROJECT_NAME, Dependency, lock_dependencies, lock_project, read_dependencies

__all__ = [
    "LOCKFILE_NAME", "HASHES_SUFFIX", "MAX_LOCKFILE_BYTES", "PYPROJECT_NAME", "Dependency", "VariantLock",
    "KernelLock", "Lockfile", "read_dependencies", "parse_lock", "read_lockfile", "write_lockfile",
    "lockfile_path", "hashes_path", "find_installed_lockfile", "find_lockfile", "caller_file",
    "lock_dependencies", "lock_project",
]
