"""Lock files: kernels and the kernels they depend on pinned to commits and variant hashes.
``_format``: ``kernels.lock`` and the hashes beside it (:meth:`Lockfile.entry`: what a lock
pins for a repository); ``_project``: locking a ``pyproject.toml``'s kernels; ``_discovery``:
the lock a load uses when none is named; ``_packaging``: build hooks shipping a lock in a wheel.
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

__all__ = ["LOCKFILE_NAME", "HASHES_SUFFIX", "MAX_LOCKFILE_BYTES", "PYPROJECT_NAME", "Dependency", "VariantLock",
           "KernelLock", "Lockfile", "read_dependencies", "parse_lock", "read_lockfile", "write_lockfile",
           "lockfile_path", "hashes_path", "find_installed_lockfile", "find_lockfile", "caller_file",
           "lock_dependencies", "lock_project"]
