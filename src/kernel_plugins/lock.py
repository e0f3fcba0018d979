"""Lock files: a project's kernel dependencies pinned to commits and variant hashes.

A project lists the kernels it uses in ``pyproject.toml``::

    [tool.kernels.dependencies]
    "kernels-community/activation" = 1      # version N: the tip of branch vN

and ``kernel-plugins lock PROJECT_DIR`` pins each to a commit in ``kernels.lock``, a JSON
list in the format other tools write and read too::

    [
      {
        "repo_id": "kernels-community/activation",
        "sha": "<40-hex commit sha>",
        "variants": {
          "torch-cpu": {"hash": "sha256-<hex>", "hash_type": "git_lfs_concat"}
        }
      }
    ]

The variant hash is described in :mod:`kernel_plugins.integrity.varianthash`. Reading is strict (a
missing or mistyped key is an error naming the entry and key; unknown keys are ignored so
newer writers stay readable); writing is atomic (a temporary file renamed over the old one,
so a reader never sees half a file).
"""

from __future__ import annotations

import json
import os
import re
import sys
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .errors import KernelPluginsError, LockfileError
from .integrity.varianthash import HASH_TYPE

__all__ = [
    "LOCKFILE_NAME",
    "PYPROJECT_NAME",
    "Dependency",
    "VariantLock",
    "KernelLock",
    "read_dependencies",
    "parse_lock",
    "read_lockfile",
    "dump_lock",
    "write_lockfile",
    "lockfile_path",
    "lock_entry",
    "find_installed_lockfile",
    "lock_dependency",
    "lock_project",
]

#: Name of the lock file in a project folder.
LOCKFILE_NAME = "kernels.lock"
#: Name of the project file holding ``[tool.kernels.dependencies]``.
PYPROJECT_NAME = "pyproject.toml"

#: Lock files (and pyproject.toml files read for locking) larger than this are refused.
MAX_LOCKFILE_BYTES = 16 << 20

_SHA_RE = re.compile(r"[0-9a-f]{40}")
_HASH_RE = re.compile(r"sha256-[0-9a-f]{64}")
_VARIANT_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+-]*")
_EXAMPLE_TABLE = '[tool.kernels.dependencies]\n"kernels-community/activation" = 1'


@dataclass(frozen=True)
class Dependency:
    """One ``[tool.kernels.dependencies]`` entry: a Hub repository and a kernel version."""

    repo_id: str
    version: int


@dataclass(frozen=True)
class VariantLock:
    """The pinned hash of one build variant (``hash`` is ``sha256-<hex>``)."""

    hash: str
    hash_type: str = HASH_TYPE

    def to_json(self) -> dict[str, str]:
        """The JSON object written to ``kernels.lock``."""
        return {"hash": self.hash, "hash_type": self.hash_type}


@dataclass(frozen=True)
class KernelLock:
    """One ``kernels.lock`` entry: a repository pinned to a commit, with variant hashes."""

    repo_id: str
    sha: str
    variants: Mapping[str, VariantLock] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """The JSON object written to ``kernels.lock`` (variants sorted by name)."""
        return {
            "repo_id": self.repo_id,
            "sha": self.sha,
            "variants": {name: self.variants[name].to_json() for name in sorted(self.variants)},
        }


# --- pyproject.toml ---------------------------------------------------------------------


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
    try:
        with open(path, "rb") as f:
            if os.fstat(f.fileno()).st_size > MAX_LOCKFILE_BYTES:
                raise LockfileError(
                    f"{path}: larger than the {MAX_LOCKFILE_BYTES} bytes allowed for a project file"
                )
            return tomllib.load(f)
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
    from .hub import validate_repo_id

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


# --- kernels.lock -----------------------------------------------------------------------


def _entry_label(index: int, entry: object) -> str:
    repo = entry.get("repo_id") if isinstance(entry, dict) else None
    return f"entry {index}" + (f" ({repo})" if isinstance(repo, str) else "")


def parse_lock(data: object, *, where: str = LOCKFILE_NAME) -> list[KernelLock]:
    """Validate decoded ``kernels.lock`` JSON and return its entries.

    :param where: how to name the file in messages.
    :raises LockfileError: naming the entry and key that is wrong and what was expected.
    """
    from .hub import validate_repo_id

    if not isinstance(data, list):
        raise LockfileError(
            f"{where}: expected a JSON list of entries, got {type(data).__name__}. Regenerate "
            "it with `kernel-plugins lock PROJECT_DIR`."
        )
    out: list[KernelLock] = []
    seen: set[str] = set()
    for index, entry in enumerate(data):
        label = f"{where}: {_entry_label(index, entry)}"
        if not isinstance(entry, dict):
            raise LockfileError(f"{label}: expected a JSON object, got {type(entry).__name__}")
        for key in ("repo_id", "sha", "variants"):
            if key not in entry:
                raise LockfileError(f"{label}: key '{key}' is missing")
        repo_id = entry["repo_id"]
        if not isinstance(repo_id, str):
            raise LockfileError(f"{label}: key 'repo_id' must be a string, got {repo_id!r}")
        try:
            validate_repo_id(repo_id)
        except KernelPluginsError as exc:
            raise LockfileError(f"{label}: key 'repo_id': {exc}") from None
        if repo_id in seen:
            raise LockfileError(f"{label}: repository {repo_id} is listed twice; keep one entry")
        seen.add(repo_id)
        sha = entry["sha"]
        if not isinstance(sha, str) or not _SHA_RE.fullmatch(sha):
            raise LockfileError(
                f"{label}: key 'sha' must be a 40-character lowercase hex commit sha, got {sha!r}"
            )
        out.append(KernelLock(repo_id, sha, _parse_variants(label, entry["variants"])))
    return out


def _parse_variants(label: str, variants: object) -> dict[str, VariantLock]:
    if not isinstance(variants, dict):
        raise LockfileError(
            f"{label}: key 'variants' must be an object of variant name -> "
            f"{{\"hash\", \"hash_type\"}}, got {type(variants).__name__}"
        )
    out: dict[str, VariantLock] = {}
    for name, item in variants.items():
        at = f"{label}: variants.{name}"
        if not _VARIANT_RE.fullmatch(name) or ".." in name:
            raise LockfileError(f"{label}: variant name {name!r} is not a plain folder name")
        if not isinstance(item, dict):
            raise LockfileError(f"{at}: expected an object with 'hash' and 'hash_type'")
        for key in ("hash", "hash_type"):
            if key not in item:
                raise LockfileError(f"{at}: key '{key}' is missing")
        hash_type = item["hash_type"]
        if hash_type != HASH_TYPE:
            raise LockfileError(
                f"{at}: key 'hash_type' is {hash_type!r}; only {HASH_TYPE!r} can be checked. "
                "Regenerate the lock with `kernel-plugins lock PROJECT_DIR`."
            )
        value = item["hash"]
        if not isinstance(value, str) or not _HASH_RE.fullmatch(value):
            raise LockfileError(
                f"{at}: key 'hash' must be 'sha256-' + 64 hex digits, got {value!r}"
            )
        out[name] = VariantLock(value, hash_type)
    return out


def lockfile_path(project: str | os.PathLike[str]) -> Path:
    """``PROJECT_DIR/kernels.lock`` for a folder, the path itself for a file."""
    path = Path(project).expanduser()
    return path / LOCKFILE_NAME if path.is_dir() else path


def read_lockfile(path: str | os.PathLike[str]) -> list[KernelLock]:
    """Read and validate a ``kernels.lock`` (a file, or a folder holding one).

    :raises LockfileError: missing file, invalid JSON, or invalid content.
    """
    from .jsonfile import JSONFileError, read_json

    file = lockfile_path(path)
    try:
        data = read_json(file, max_bytes=MAX_LOCKFILE_BYTES)
    except FileNotFoundError:
        raise LockfileError(
            f"{file} does not exist; create it with `kernel-plugins lock PROJECT_DIR`"
        ) from None
    except OSError as exc:
        raise LockfileError(f"cannot read {file}: {exc.strerror or exc}") from None
    except JSONFileError as exc:
        raise LockfileError(
            f"cannot read {exc}. Regenerate it with `kernel-plugins lock PROJECT_DIR`."
        ) from None
    return parse_lock(data, where=str(file))


def dump_lock(locks: Iterable[KernelLock]) -> str:
    """The text of a ``kernels.lock`` holding ``locks`` (indented JSON, final newline)."""
    return json.dumps([lock.to_json() for lock in locks], indent=2) + "\n"


def write_lockfile(path: str | os.PathLike[str], locks: Sequence[KernelLock]) -> Path:
    """Write ``locks`` to ``path`` (a file, or a folder: ``<folder>/kernels.lock``) atomically.

    The text goes to a temporary file in the same folder, is flushed to disk, then renamed
    over ``path``: readers see the old or the new file, never a partial one.

    :return: the file written.
    :raises LockfileError: the folder is not writable.
    """
    file = lockfile_path(path)
    text = dump_lock(locks)
    parse_lock(json.loads(text), where=str(file))  # never write what we could not read back
    try:
        mode = file.stat().st_mode & 0o777
    except OSError:
        mode = 0o644
    tmp: str | None = None
    try:
        fd, tmp = tempfile.mkstemp(dir=file.parent, prefix=f".{file.name}.", suffix=".tmp")
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, file)
        tmp = None
    except OSError as exc:
        raise LockfileError(f"cannot write {file}: {exc}") from exc
    finally:
        if tmp is not None:
            try:
                os.unlink(tmp)
            except OSError:
                pass
    return file


def lock_entry(locks: Sequence[KernelLock], repo_id: str, *, where: object) -> KernelLock:
    """The entry of ``repo_id`` in ``locks``.

    :raises LockfileError: no entry for it; lists the repositories the lock pins.
    """
    for lock in locks:
        if lock.repo_id == repo_id:
            return lock
    listed = ", ".join(lock.repo_id for lock in locks) or "none"
    raise LockfileError(
        f"{where} does not pin {repo_id} (it pins: {listed}). Add {repo_id!r} to "
        "[tool.kernels.dependencies] and run `kernel-plugins lock PROJECT_DIR`."
    )


def find_installed_lockfile(dist_name: str) -> Path | None:
    """The ``kernels.lock`` an installed distribution ships, found through its metadata.

    The distribution's recorded files (``RECORD``) are searched for a file named
    ``kernels.lock``; when several are recorded the one nearest the top is used.

    :return: the file's path, or None when the distribution ships none (editable installs
        usually record no data files).
    :raises LockfileError: no distribution of that name is installed.
    """
    from importlib import metadata

    try:
        dist = metadata.distribution(dist_name)
    except metadata.PackageNotFoundError:
        raise LockfileError(
            f"no installed distribution named {dist_name!r}, so its {LOCKFILE_NAME} cannot be "
            "found; install the project or pass lockfile= with the file's path"
        ) from None
    found = sorted(
        (f for f in (dist.files or []) if f.name == LOCKFILE_NAME),
        key=lambda f: (len(f.parts), str(f)),
    )
    for item in found:
        path = Path(str(dist.locate_file(item)))
        if path.is_file():
            return path
    return None


# --- locking ----------------------------------------------------------------------------


def lock_dependency(dep: Dependency) -> KernelLock:
    """Pin one dependency: resolve branch ``v<version>`` and hash every variant at that commit.

    Two requests: the repository's refs and one recursive listing of ``build/``.

    :raises VersionNotFoundError: no such version (lists those that exist).
    :raises SourceError: the commit has no build variants.
    """
    from . import hub
    from .errors import SourceError
    from .hub import hub_listing
    from .integrity import variant_hash

    ref = hub.resolve(dep.repo_id, version=dep.version)
    listing = hub_listing(ref)
    if not listing:
        raise SourceError(f"{ref}: no build variants under build/, nothing to lock")
    variants = {name: VariantLock(variant_hash(files)) for name, files in sorted(listing.items())}
    return KernelLock(dep.repo_id, ref.sha, variants)


def lock_project(project: str | os.PathLike[str]) -> tuple[Path, list[KernelLock]]:
    """Lock every ``[tool.kernels.dependencies]`` entry of a project into its ``kernels.lock``.

    The lock file is written only after every dependency was resolved, atomically.

    :return: the lock file written and its entries.
    """
    deps = read_dependencies(project)
    locks = [lock_dependency(dep) for dep in deps]
    folder = _pyproject_path(project).parent
    return write_lockfile(folder / LOCKFILE_NAME, locks), locks
