"""Lock files: a project's kernel dependencies pinned to commits and variant hashes.

The parts, one job each:

- ``_format``: the ``kernels.lock`` file: entries, strict reading, atomic writing;
- ``_project``: creating a lock from ``[tool.kernels.dependencies]`` in ``pyproject.toml``
  (``kernel-plugins lock PROJECT_DIR``);
- ``_discovery``: which lock file a locked load uses when none is named.
"""

from __future__ import annotations

from ._discovery import caller_file, check_lockfile_safe, find_installed_lockfile, find_lockfile
from ._format import (
    LOCKFILE_NAME,
    MAX_LOCKFILE_BYTES,
    KernelLock,
    VariantLock,
    dump_lock,
    lock_entry,
    lockfile_path,
    parse_lock,
    read_lockfile,
    write_lockfile,
)
from ._project import PYPROJECT_NAME, Dependency, lock_dependency, lock_project, read_dependencies

__all__ = [
    "LOCKFILE_NAME", "MAX_LOCKFILE_BYTES", "PYPROJECT_NAME", "Dependency", "VariantLock",
    "KernelLock", "read_dependencies", "parse_lock", "read_lockfile", "dump_lock",
    "write_lockfile", "lockfile_path", "lock_entry", "find_installed_lockfile", "find_lockfile",
    "check_lockfile_safe", "caller_file", "lock_dependency", "lock_project",
]
