"""Build hooks shipping a project's ``kernels.lock`` and ``kernels.lock.variants`` in its wheel's
metadata, where ``lockfile=None`` finds them: setuptools' ``egg_info.writers`` (as kernels 0.17
registers one) put them in ``.dist-info/``, the hatchling hook ``kernels-lock`` in
``.dist-info/extra_metadata/``. A lock that cannot be read fails the build. Imported by builds only.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pluggy

from ._format import LOCKFILE_NAME, hashes_path, read_lockfile

__all__ = ["write_egg_file", "hatch_register_build_hook"]


def _project_files(root: Path) -> list[Path]:
    """The lock files of the project in ``root`` to ship, read first (none without a lock)."""
    lock = root / LOCKFILE_NAME
    return [p for p in (lock, hashes_path(lock)) if p.is_file()] if lock.is_file() and read_lockfile(lock) else []


def write_egg_file(cmd: Any, basename: str, filename: str) -> None:
    """setuptools ``egg_info.writers``: copy ``basename`` of the project into the metadata (or delete it)."""
    data = next((p.read_text(encoding="utf-8") for p in _project_files(Path.cwd()) if p.name == basename), None)
    cmd.write_or_delete_file(basename, filename, data, force=True)


@pluggy.HookimplMarker("hatch")
def hatch_register_build_hook() -> type:
    """hatchling's plugin hook (entry point group ``hatch``): the ``kernels-lock`` build hook."""
    from hatchling.builders.hooks.plugin.interface import BuildHookInterface

    class KernelsLockHook(BuildHookInterface):  # type: ignore[misc]
        """Adds the project's lock files to the wheel's ``extra_metadata``."""

        PLUGIN_NAME = "kernels-lock"
        def initialize(self, version: str, build_data: dict[str, Any]) -> None:
            """Called by hatchling before each build of a target."""
            if self.target_name == "wheel":
                build_data["extra_metadata"].update({str(p): p.name for p in _project_files(Path(self.root))})

    return KernelsLockHook
