"""The ``kernels.lock`` file: its entries, reading (strict) and writing (atomic).

``kernels.lock`` is a JSON list in the format other tools write and read too::

    [
      {
        "repo_id": "kernels-community/activation",
        "sha": "<40-hex commit sha>",
        "variants": {
          "torch-cpu": {"hash": "sha256-<hex>", "hash_type": "git_lfs_concat"}
        }
      }
    ]

The variant hash is described in :mod:`kernel_plugins.integrity.varianthash`. Reading is
strict (a missing or mistyped key is an error naming the entry and key; unknown keys are
ignored so newer writers stay readable; only a regular file is opened); writing is atomic
(a temporary file renamed over the old one, so a reader never sees half a file).
"""

from __future__ import annotations

import json
import os
import re
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import KernelPluginsError, LockfileError
from ..integrity.varianthash import HASH_TYPE

__all__ = [
    "LOCKFILE_NAME",
    "MAX_LOCKFILE_BYTES",
    "VariantLock",
    "KernelLock",
    "parse_lock",
    "read_lockfile",
    "dump_lock",
    "write_lockfile",
    "lockfile_path",
    "lock_entry",
]

#: Name of the lock file in a project folder.
LOCKFILE_NAME = "kernels.lock"

#: Lock files (and pyproject.toml files read for locking) larger than this are refused.
MAX_LOCKFILE_BYTES = 16 << 20

_SHA_RE = re.compile(r"[0-9a-f]{40}")
_HASH_RE = re.compile(r"sha256-[0-9a-f]{64}")
_VARIANT_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+-]*")


@dataclass(frozen=True)
class VariantLock:
    """The pinned hash of one build variant (``hash`` is ``sha256-<hex>``); ``signer``: who
    signed it at lock time (``identity (issuer)``, see docs/signatures.md), None: unsigned."""

    hash: str
    hash_type: str = HASH_TYPE
    signer: str | None = None

    def to_json(self) -> dict[str, str]:
        """The JSON object written to ``kernels.lock``."""
        signer = {"signer": self.signer} if self.signer is not None else {}
        return {"hash": self.hash, "hash_type": self.hash_type, **signer}


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



def _entry_label(index: int, entry: object) -> str:
    repo = entry.get("repo_id") if isinstance(entry, dict) else None
    return f"entry {index}" + (f" ({repo})" if isinstance(repo, str) else "")


def parse_lock(data: object, *, where: str = LOCKFILE_NAME) -> list[KernelLock]:
    """Validate decoded ``kernels.lock`` JSON and return its entries.

    :param where: how to name the file in messages.
    :raises LockfileError: naming the entry and key that is wrong and what was expected.
    """
    from ..hub import validate_repo_id

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
        signer = item.get("signer")
        if signer is not None and (not isinstance(signer, str) or not signer.strip()):
            raise LockfileError(f"{at}: key 'signer' must be a non-empty string, got {signer!r}")
        out[name] = VariantLock(value, hash_type, signer)
    return out


def lockfile_path(project: str | os.PathLike[str]) -> Path:
    """``PROJECT_DIR/kernels.lock`` for a folder, the path itself for a file."""
    path = Path(project).expanduser()
    return path / LOCKFILE_NAME if path.is_dir() else path


def read_lockfile(path: str | os.PathLike[str]) -> list[KernelLock]:
    """Read and validate a ``kernels.lock`` (a file, or a folder holding one).

    :raises LockfileError: missing file, invalid JSON, or invalid content.
    """
    from ..jsonfile import JSONFileError, read_json

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
