"""Lock files: a project's kernels, and the kernels they depend on, pinned to commits and
variant hashes. ``_format``: ``kernels.lock`` (kernels' format) and the hashes beside it
(:meth:`Lockfile.entry` finds what a lock pins for a repository, version or revision);
``_project``: locking ``[tool.kernels.dependencies]`` of a ``pyproject.toml``;
``_discovery``: the lock a locked load uses when none is named; ``_packaging``: build hooks
(setuptools, hatchling) shipping a project's lock in its wheel.
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
