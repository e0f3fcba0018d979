"""Creating a lock: read a project's kernel dependencies and pin each to a commit.

A project lists the kernels it uses in ``pyproject.toml``::

    [tool.kernels.dependencies]
    "kernels-community/activation" = 1      # version N: the tip of branch vN

and ``kernel-plugins lock PROJECT_DIR`` (:func:`lock_project`) pins each to a commit and
the hashes of its variants in ``kernels.lock`` (format: :mod:`._format`).
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import KernelPluginsError, LockfileError
from ._format import LOCKFILE_NAME, MAX_LOCKFILE_BYTES, KernelLock, VariantLock, write_lockfile

__all__ = ["PYPROJECT_NAME", "Dependency", "read_dependencies", "lock_dependency", "lock_project"]

#: Who signed each variant of a commit: (ref, listing) -> {variant: signer}.
SignerLookup = Callable[[Any, Mapping[str, Any]], Mapping[str, str]]

#: Name of the project file holding ``[tool.kernels.dependencies]``.
PYPROJECT_NAME = "pyproject.toml"

_EXAMPLE_TABLE = '[tool.kernels.dependencies]\n"kernels-community/activation" = 1'


@dataclass(frozen=True)
class Dependency:
    """One ``[tool.kernels.dependencies]`` entry: a Hub repository and a kernel version."""

    repo_id: str
    version: int



def _load_toml(path: Path) -> dict[str, Any]:
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - Python 3.10
        try:
            import tomli as tomllib
        except ImportError as exc:
            raise LockfileError(
                f"reading {path} on Python 3.10 needs the 'tomli' package: pip install tomli"
            ) from exc
    from ..jsonfile import JSONFileError, read_regular_file

    try:
        return tomllib.loads(read_regular_file(path, max_bytes=MAX_LOCKFILE_BYTES).decode("utf-8"))
    except JSONFileError as exc:
        raise LockfileError(f"{exc} for a project file") from None
    except OSError as exc:
        raise LockfileError(f"cannot read {path}: {exc.strerror or exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise LockfileError(f"{path} is not valid TOML: {exc}. Fix the file.") from exc
    except UnicodeDecodeError as exc:
        raise LockfileError(f"{path} is not UTF-8 text ({exc}); TOML files must be UTF-8.") from None
    except RecursionError:
        raise LockfileError(f"{path}: values are nested too deeply to read. Fix the file.") from None


def _pyproject_path(project: str | os.PathLike[str]) -> Path:
    path = Path(project).expanduser()
    if path.is_dir():
        path = path / PYPROJECT_NAME
    if not path.is_file():
        raise LockfileError(
            f"{path} does not exist; PROJECT_DIR must be a folder holding {PYPROJECT_NAME} "
            f"with a table like:\n{_EXAMPLE_TABLE}"
        )
    return path


def read_dependencies(project: str | os.PathLike[str]) -> list[Dependency]:
    """Read ``[tool.kernels.dependencies]`` of a project.

    :param project: the project folder, or its ``pyproject.toml``.
    :return: the dependencies in file order.
    :raises LockfileError: no ``pyproject.toml``, invalid TOML, the table is missing or not a
        table, a key is not an ``org/name`` repository id, or a version is not a positive
        integer; each message names the file and the key.
    """
    from ..hub import validate_repo_id

    path = _pyproject_path(project)
    data = _load_toml(path)
    where = f"{path}: "
    tool = data.get("tool", {})
    kernels = tool.get("kernels") if isinstance(tool, dict) else None
    if not isinstance(tool, dict) or kernels is None:
        raise LockfileError(
            f"{where}no [tool.kernels.dependencies] table, so there is nothing to lock. Add "
            f"one listing the kernels the project uses, e.g.\n{_EXAMPLE_TABLE}"
        )
    if not isinstance(kernels, dict):
        raise LockfileError(f"{where}'tool.kernels' must be a table, got {type(kernels).__name__}")
    deps = kernels.get("dependencies")
    if deps is None:
        raise LockfileError(
            f"{where}[tool.kernels] has no 'dependencies' table, so there is nothing to lock. "
            f"Add one, e.g.\n{_EXAMPLE_TABLE}"
        )
    if not isinstance(deps, dict):
        raise LockfileError(
            f"{where}'tool.kernels.dependencies' must be a table of \"org/name\" = version, got "
            f"{type(deps).__name__}"
        )
    out: list[Dependency] = []
    for key, value in deps.items():
        try:
            repo_id = validate_repo_id(key)
        except KernelPluginsError as exc:
            raise LockfileError(f"{where}tool.kernels.dependencies key {key!r}: {exc}") from None
        out.append(Dependency(repo_id, _check_dep_version(where, key, value)))
    return out


def _check_dep_version(where: str, key: str, value: object) -> int:
    fix = f'write "{key}" = 1 (version N means the tip of branch vN)'
    if isinstance(value, bool) or not isinstance(value, int):
        hint = ""
        if isinstance(value, str):
            hint = (
                " Version specifiers and strings are not supported; a kernel version is a "
                "plain integer."
            )
        raise LockfileError(
            f"{where}tool.kernels.dependencies.{json.dumps(key)} = {value!r} is not a version: "
            f"expected a positive integer.{hint} For example, {fix}."
        )
    if value < 1:
        raise LockfileError(
            f"{where}tool.kernels.dependencies.{json.dumps(key)} = {value}: versions start at "
            f"1; {fix}."
        )
    return value


def lock_dependency(dep: Dependency, *, signers: SignerLookup | None = None) -> KernelLock:
    """Pin one dependency: resolve branch ``v<version>`` and hash every variant at that commit.

    Two requests: the repository's refs and one recursive listing of ``build/``. ``signers``
    (``kernel_plugins.signatures.lock_signers``) names who signed each signed variant, for
    the lock to record (it downloads their ``metadata.json`` and bundle).

    :raises VersionNotFoundError: no such version (lists those that exist).
    :raises SourceError: the commit has no build variants.
    """
    from .. import hub
    from ..errors import SourceError
    from ..hub import hub_listing
    from ..integrity import variant_hash

    ref = hub.resolve(dep.repo_id, version=dep.version)
    listing = hub_listing(ref)
    if not listing:
        raise SourceError(f"{ref}: no build variants under build/, nothing to lock")
    signed = signers(ref, listing) if signers is not None else {}
    variants = {name: VariantLock(variant_hash(files), signer=signed.get(name))
                for name, files in sorted(listing.items())}
    return KernelLock(dep.repo_id, ref.sha, variants)


def lock_project(
    project: str | os.PathLike[str], *, signers: SignerLookup | None = None
) -> tuple[Path, list[KernelLock]]:
    """Lock every ``[tool.kernels.dependencies]`` entry of a project into its ``kernels.lock``.

    The lock file is written only after every dependency was resolved, atomically.

    :return: the lock file written and its entries.
    """
    deps = read_dependencies(project)
    locks = [lock_dependency(dep, signers=signers) for dep in deps]
    folder = _pyproject_path(project).parent
    return write_lockfile(folder / LOCKFILE_NAME, locks), locks
