"""Build hooks shipping a project's ``kernels.lock`` and ``kernels.lock.variants`` in its wheel's
metadata, where ``lockfile=None`` finds them: setuptools' ``egg_info.writers`` (as kernels 0.17
registers one) put them in ``.dist-info/``, the hatchling hook ``kernels-lock`` in
``.dist-info/extra_metadata/``. A lock that cannot be read fails the build. Imported by builds only.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

import pluggy

from ._format import LOCKFILE_NAME, read_lockfile

__all__ = ["write_egg_file", "hatch_register_build_hook"]


def _project_files(root: Path) -> dict[str, bytes]:
    """The lock files of the project in ``root`` to ship, by name: the bytes read (each file once,
    never through a link) and checked; the hashes file only when the lock uses it. None without a lock."""
    raw: dict[str, bytes] = {}
    if os.path.lexists(root / LOCKFILE_NAME):
        read_lockfile(root / LOCKFILE_NAME, raw=raw)
    return raw


def write_egg_file(cmd: Any, basename: str, filename: str) -> None:
    """setuptools ``egg_info.writers``: copy ``basename`` of the project into the metadata (or delete it)."""
    data = _project_files(Path.cwd()).get(basename)
    cmd.write_or_delete_file(basename, filename, None if data is None else data.decode("utf-8"), force=True)


@pluggy.HookimplMarker("hatch")
def hatch_register_build_hook() -> type:
    """hatchling's plugin hook (entry point group ``hatch``): the ``kernels-lock`` build hook."""
    from hatchling.builders.hooks.plugin.interface import BuildHookInterface

    class KernelsLockHook(BuildHookInterface):  # type: ignore[misc]
        """Adds the project's lock files to the wheel's ``extra_metadata``: copies of the bytes checked."""

        PLUGIN_NAME = "kernels-lock"
        def initialize(self, version: str, build_data: dict[str, Any]) -> None:
            """Called by hatchling before each build of a target."""
            if self.target_name == "wheel" and (files := _project_files(Path(self.root))):
                self.copies = tempfile.TemporaryDirectory(prefix="kernels-lock-")  # gone with the hook
                for name, data in files.items():
                    (Path(self.copies.name) / name).write_bytes(data)
                    build_data["extra_metadata"][str(Path(self.copies.name) / name)] = name

    return KernelsLockHook
