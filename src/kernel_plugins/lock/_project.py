"""Creating a lock: ``kernel-plugins lock PROJECT_DIR`` (:func:`lock_project`) pins each kernel of
``[tool.kernels.dependencies]`` in ``pyproject.toml`` (``"kernels-community/activation" = 1``: version N, the tip of
branch vN) to a commit, with the hashes of its variants (format: :mod:`._format`), and the kernels they depend on
(``kernel-depends`` of every variant's ``metadata.json``) recursively, as kernels 0.17's ``lock_kernel_tree`` does.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from ..errors import KernelPluginsError, LockfileError
from ..metadata import KernelDepend, walk_depends
from ._format import LOCKFILE_NAME, MAX_LOCKFILE_BYTES, KernelLock, VariantLock, write_lockfile

__all__ = ["PYPROJECT_NAME", "Dependency", "read_dependencies", "lock_dependencies", "lock_project"]

#: Who signed each variant of a commit: (ref, listing) -> {variant: signer}.
SignerLookup = Callable[[Any, Mapping[str, Any]], Mapping[str, str]]

#: Name of the project file holding ``[tool.kernels.dependencies]``.
PYPROJECT_NAME = "pyproject.toml"

_EXAMPLE_TABLE = '[tool.kernels.dependencies]\n"kernels-community/activation" = 1'


#: A kernel to lock: a Hub repository with a version, or a revision (in ``kernel-depends``).
Dependency = KernelDepend


def _load_toml(path: Path) -> dict[str, Any]:
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - Python 3.10, where tomli is a dependency
        import tomli as tomllib
    from ..jsonfile import JSONFileError, read_regular_file

    try:
        return tomllib.loads(read_regular_file(path, max_bytes=MAX_LOCKFILE_BYTES).decode("utf-8"))
    except JSONFileError as exc:
        raise LockfileError(f"{exc} for a project file") from None
    except OSError as exc:
        raise LockfileError(f"cannot read {path}: {exc.strerror or exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise LockfileError(f"{path} is not valid TOML: {exc}. Fix the file.") from exc
    except (UnicodeDecodeError, RecursionError) as exc:
        why = f"is not UTF-8 text ({exc})" if isinstance(exc, UnicodeDecodeError) else "has values nested too deeply"
        raise LockfileError(f"{path} {why} to read as TOML. Fix the file.") from None


def _pyproject_path(project: str | os.PathLike[str]) -> Path:
    path = Path(project).expanduser()
    if path.is_dir():
        path = path / PYPROJECT_NAME
    if not path.is_file():
        raise LockfileError(f"{path.absolute()} does not exist: the project folder {path.parent.absolute()} "
                            f"holds no {PYPROJECT_NAME}; PROJECT_DIR must be a folder holding one with a "
                            f"table like:\n{_EXAMPLE_TABLE}")
    return path


def read_dependencies(project: str | os.PathLike[str]) -> list[Dependency]:
    """``[tool.kernels.dependencies]`` of a project (its folder, or its ``pyproject.toml``), in order.

    :raises LockfileError: no or invalid ``pyproject.toml`` or table, a key that is not an
        ``org/name`` repository id, a version that is not a positive integer (naming both)."""
    from ..hub import validate_repo_id

    path = _pyproject_path(project)
    where, tool = f"{path}: ", _load_toml(path).get("tool", {})
    kernels = tool.get("kernels") if isinstance(tool, dict) else None
    if not isinstance(tool, dict) or kernels is None:
        raise LockfileError(f"{where}no [tool.kernels.dependencies] table, so there is nothing to lock. Add "
                            f"one listing the kernels the project uses, e.g.\n{_EXAMPLE_TABLE}")
    if not isinstance(kernels, dict):
        raise LockfileError(f"{where}'tool.kernels' must be a table, got {type(kernels).__name__}")
    if (deps := kernels.get("dependencies")) is None:
        raise LockfileError(f"{where}[tool.kernels] has no 'dependencies' table, so there is nothing to "
                            f"lock. Add one, e.g.\n{_EXAMPLE_TABLE}")
    if not isinstance(deps, dict):
        raise LockfileError(f"{where}'tool.kernels.dependencies' must be a table of \"org/name\" = version, "
                            f"got {type(deps).__name__}")
    out: list[Dependency] = []
    for key, value in deps.items():
        try:
            repo_id = validate_repo_id(key)
        except KernelPluginsError as exc:
            raise LockfileError(f"{where}tool.kernels.dependencies key {key!r}: {exc}") from None
        out.append(Dependency(repo_id, _check_dep_version(where, key, value)))
    return out


def _check_dep_version(where: str, key: str, value: object) -> int:
    at, fix = f"{where}tool.kernels.dependencies.{json.dumps(key)}", f'write "{key}" = 1 (version N means the tip of branch vN)'
    if isinstance(value, bool) or not isinstance(value, int):
        hint = " Version specifiers and strings are not supported; a kernel version is a plain integer." \
            if isinstance(value, str) else ""
        raise LockfileError(f"{at} = {value!r} is not a version: expected a positive integer.{hint} For example, {fix}.")
    if value < 1:
        raise LockfileError(f"{at} = {value}: versions start at 1; {fix}.")
    return value


def _lock_one(dep: Dependency, signers: SignerLookup | None) -> tuple[KernelLock, list[Dependency]]:
    """Pin one kernel: resolve it, hash every variant at that commit, name their signers
    (``signatures.lock_signers``), read the ``kernel-depends`` of their ``metadata.json``.
    :raises VersionNotFoundError: no such version. SourceError: no build variants."""
    from .. import hub
    from ..errors import SourceError
    from ..integrity import read_small_file, variant_hash
    from ..metadata import MAX_METADATA_BYTES, parse_metadata_bytes

    ref = hub.resolve(dep.repo_id, version=dep.version, revision=dep.revision)
    if not (listing := hub.hub_listing(ref)):
        raise SourceError(f"{ref}: no build variants under build/, nothing to lock")
    signed = signers(ref, listing) if signers is not None else {}
    variants = {name: VariantLock(variant_hash(files), signer=signed.get(name))
                for name, files in sorted(listing.items())}
    # one checked GET per file, no snapshot_download: its listing of the whole commit, kept where
    # huggingface_hub keeps it, would make kernels 0.17.2 call a snapshot with one variant incomplete
    metas = {v: hub.download_file(ref, f"build/{v}/metadata.json") for v, files in sorted(listing.items())
             if "metadata.json" in files}
    depends = [d for v, meta in metas.items() for d in parse_metadata_bytes(read_small_file(
        meta, max_bytes=MAX_METADATA_BYTES, roots=(meta.parent, hub.blobs_folder(ref))),
        where=f"{ref} {v}/metadata.json").kernel_depends]
    return KernelLock(dep.repo_id, ref.sha, variants, dep.version, dep.revision), depends


def lock_dependencies(deps: Iterable[Dependency], *, signers: SignerLookup | None = None,
                      lock_one: Callable[[Dependency], tuple[KernelLock, list[Dependency]]] | None = None) -> list[KernelLock]:
    """Lock ``deps`` and, recursively, the kernels they depend on, each once: ``deps`` first, then
    the others, dependents before their dependencies.
    ``lock_one`` pins one and names its dependencies (default: the Hub's answer).
    :raises LockfileError: a dependency cycle or a chain too deep (named)."""
    one = lock_one or (lambda d: _lock_one(d, signers))
    done: dict[Dependency, KernelLock] = {}
    out: list[KernelLock] = []

    def visit(dep: Dependency, path: tuple[object, ...]) -> KernelLock:
        lock, below = one(dep)
        out.append(lock)
        for d in below:
            walk_depends(d, visit, done, path, error=LockfileError)
        return lock

    roots = list(deps)
    for dep in roots:
        walk_depends(dep, visit, done, error=LockfileError)
    return sorted(out, key=lambda x: Dependency(x.repo_id, x.version, x.revision) not in roots)


def lock_project(project: str | os.PathLike[str], *,
                 signers: SignerLookup | None = None) -> tuple[Path, list[KernelLock]]:
    """Lock a project's kernels and theirs (:func:`lock_dependencies`) into its ``kernels.lock``,
    written once every one is resolved. :return: the lock file written and its entries."""
    locks = lock_dependencies(read_dependencies(project), signers=signers)
    return write_lockfile(_pyproject_path(project).parent / LOCKFILE_NAME, locks), locks
