"""``kernels.lock`` and the variant hashes beside it: entries, strict reading, atomic writing.

``kernels.lock`` is in kernels 0.17's format (which refuses any other key): ``[{"dependency": {"repo-id":
"org/name", "version": 1 | "revision": "main"}, "lock": {"commit": "<40 or 64 hex digits>"}}]``. The hash and signer
of every variant of each commit are in ``kernels.lock.variants`` (exactly the commits pinned; without it a lock pins
commits only): ``[{"repo_id", "sha", "variants": {"torch-cpu": {"hash": "sha256-<hex>", "hash_type":
"git_lfs_concat", "signer": "<identity> (<issuer>)"}}}]``, the format of earlier lock files (still read as
``kernels.lock``). A bad key is an error naming the entry and key.
"""

from __future__ import annotations

import errno
import json
import os
import re
import stat
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from .._record import field, record, replace
from ..errors import KernelPluginsError, LockfileError
from ..integrity.varianthash import HASH_TYPE

__all__ = ["LOCKFILE_NAME", "HASHES_SUFFIX", "MAX_LOCKFILE_BYTES", "VariantLock", "KernelLock",
           "Lockfile", "parse_lock", "read_lockfile", "write_lockfile", "lockfile_path", "hashes_path"]

#: Name of the lock file in a project folder; the hashes of a lock ``X`` are in ``X`` + HASHES_SUFFIX.
LOCKFILE_NAME, HASHES_SUFFIX = "kernels.lock", ".variants"
#: Lock files (and pyproject.toml files read for locking) larger than this are refused.
MAX_LOCKFILE_BYTES = 16 << 20

_SHA_RE = re.compile(r"[0-9a-f]{40}(?:[0-9a-f]{24})?")  # SHA-1 or SHA-256 git commits
_HASH_RE = re.compile(r"sha256-[0-9a-f]{64}")
_VARIANT_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+-]*")
#: The keys kernels' format allows, per object (kernels refuses any other).
_KERNELS_KEYS = {"": ("dependency", "lock"), "dependency.": ("repo-id", "version", "revision"),
                 "lock.": ("commit",)}


@record
class VariantLock:
    """A variant's pinned ``hash`` (``sha256-<hex>``) and ``signer`` at lock time (``identity (issuer)``)."""

    hash: str
    hash_type: str = HASH_TYPE
    signer: str | None = None

    def to_json(self) -> dict[str, str]:
        """The JSON object of the variant in the hashes file."""
        return {"hash": self.hash, "hash_type": self.hash_type, **({"signer": self.signer} if self.signer else {})}


@record
class KernelLock:
    """A repository pinned to a commit for a ``version`` or ``revision`` (neither in the earlier
    format), with the hashes of the commit's variants (empty: the lock pins the commit only)."""

    repo_id: str
    sha: str
    variants: Mapping[str, VariantLock] = field(default_factory=dict)
    version: int | None = None
    revision: str | None = None

    @property
    def spec(self) -> str:
        """``version 1``, ``revision 'main'``, or "" for an entry of the earlier format."""
        return f"version {self.version}" if self.version is not None else \
            "" if self.revision is None else f"revision {self.revision!r}"

    @property
    def label(self) -> str:
        """``org/name (version 1)``, or the repository id alone without a spec."""
        return f"{self.repo_id} ({self.spec})" if self.spec else self.repo_id

    def to_json(self) -> dict[str, Any]:
        """The entry of the hashes file (variants sorted by name)."""
        variants = {name: self.variants[name].to_json() for name in sorted(self.variants)}
        return {"repo_id": self.repo_id, "sha": self.sha, "variants": variants}

    def kernels_json(self) -> dict[str, Any]:
        """The entry of ``kernels.lock`` (kernels' format). :raises LockfileError: no spec."""
        if not self.spec:
            raise LockfileError(f"{self.repo_id}: locked for no version or revision, which {LOCKFILE_NAME} must record")
        spec = {"version": self.version} if self.version is not None else {"revision": self.revision}
        return {"dependency": {"repo-id": self.repo_id, **spec}, "lock": {"commit": self.sha}}


@record(eq=False)
class Lockfile:
    """A lock file as read (one object per read): entries with their hashes, and the file those
    came from (None: commits only). Path-like: ``os.fspath`` and ``str`` give ``path``."""

    path: Path
    entries: tuple[KernelLock, ...]
    hashes: Path | None = None

    def __fspath__(self) -> str:
        return str(self.path)

    __str__ = __fspath__

    def __iter__(self) -> Iterator[KernelLock]:
        return iter(self.entries)

    def entry(self, repo_id: str, *, version: int | None = None, revision: str | None = None) -> KernelLock:
        """The entry locking ``repo_id`` for ``version`` or ``revision`` (a lock may pin one
        repository at several versions; none given: the first, as kernels takes it): ``sha``,
        and hashes when the lock has them. :raises LockfileError: none (lists those there are)."""
        for e in self.entries:
            if e.repo_id == repo_id and (not e.spec or (version, revision) in ((None, None), (e.version, e.revision))):
                return e
        asked = KernelLock(repo_id, "", {}, version, revision).label
        listed = ", ".join(e.label for e in self.entries) or "none"
        raise LockfileError(f"{self.path} does not pin {asked} (it pins: {listed}). Add {repo_id!r} to "
                            "[tool.kernels.dependencies] and run `kernel-plugins lock PROJECT_DIR`.")

    def require(self, dep: Any) -> None:
        """A dependency (``kernel-depends`` entry) comes from its entry here: locked code or an error
        (the one place a dependency's entry is looked up). :raises LockfileError: no entry for ``dep``."""
        try:
            self.entry(dep.repo_id, version=dep.version, revision=dep.revision)
        except LockfileError:
            raise LockfileError(f"{self} does not pin {dep}, a dependency (kernel-depends): a locked load takes "
                                "every kernel from its lock. Run `kernel-plugins lock` to pin it") from None


def _label(index: int, entry: object) -> str:
    dep = entry.get("dependency") if isinstance(entry, dict) else None
    repo = dep.get("repo-id") if isinstance(dep, dict) else entry.get("repo_id") if isinstance(entry, dict) else None
    return f"entry {index}" + (f" ({repo})" if isinstance(repo, str) else "")


def _need(at: str, obj: dict[str, Any], keys: Iterable[str], prefix: str = "") -> None:
    if missing := [k for k in keys if k not in obj]:
        raise LockfileError(f"{at}: key '{prefix}{missing[0]}' is missing")


def _repo_id(label: str, key: str, value: object) -> str:
    from ..hub import validate_repo_id

    if not isinstance(value, str):
        raise LockfileError(f"{label}: key '{key}' must be a string, got {value!r}")
    try:
        return validate_repo_id(value)
    except KernelPluginsError as exc:
        raise LockfileError(f"{label}: key '{key}': {exc}") from None


def _sha(label: str, key: str, value: object) -> str:
    if not isinstance(value, str) or not _SHA_RE.fullmatch(value):
        raise LockfileError(f"{label}: key '{key}' must be a commit sha (40 or 64 lowercase hex digits), got {value!r}")
    return value


def _kernels_entry(label: str, entry: dict[str, Any]) -> KernelLock:
    """An entry of kernels' format, as strict as kernels reads it."""
    parts = {"": entry, **{k + ".": v for k, v in entry.items() if isinstance(v, dict)}}
    for prefix, obj in parts.items():
        if unknown := [k for k in obj if k not in _KERNELS_KEYS.get(prefix, obj)]:
            raise LockfileError(f"{label}: unknown key '{prefix}{unknown[0]}' (kernels' format allows only "
                                f"{', '.join(prefix + k for k in _KERNELS_KEYS[prefix])} there)")
    _need(label, entry, ("dependency", "lock"))
    for name, key in (("dependency", "repo-id"), ("lock", "commit")):
        if not isinstance(entry[name], dict):
            raise LockfileError(f"{label}: key '{name}' must be an object, got {type(entry[name]).__name__}")
        _need(label, entry[name], (key,), name + ".")
    dep, lock = entry["dependency"], entry["lock"]
    version, revision = dep.get("version"), dep.get("revision")
    if ("version" in dep) == ("revision" in dep):
        raise LockfileError(f"{label}: 'dependency' needs exactly one of 'version' and 'revision'")
    key, ok, want = ("revision", isinstance(revision, str), "a string") if "revision" in dep else \
        ("version", type(version) is int and 0 <= version < 1 << 64, "a kernel version (an integer >= 0)")
    if not ok:
        raise LockfileError(f"{label}: key 'dependency.{key}' must be {want}, got {dep[key]!r}")
    commit = lock["commit"].lower() if isinstance(lock["commit"], str) else lock["commit"]
    return KernelLock(_repo_id(label, "dependency.repo-id", dep["repo-id"]),
                      _sha(label, "lock.commit", commit), {}, version, revision)


def _hashes_entry(label: str, entry: dict[str, Any]) -> KernelLock:
    """An entry of the hashes file (kernel-plugins' earlier lock format); other keys are ignored."""
    _need(label, entry, ("repo_id", "sha", "variants"))
    return KernelLock(_repo_id(label, "repo_id", entry["repo_id"]), _sha(label, "sha", entry["sha"]),
                      _parse_variants(label, entry["variants"]))


def parse_lock(data: object, *, where: str = LOCKFILE_NAME, hashes: bool = False) -> list[KernelLock]:
    """Validate decoded lock JSON: kernels' format, or (as the first entry shows; the only
    one with ``hashes``) the hashes file's. ``where`` names the file in messages.
    :raises LockfileError: naming the entry and key that is wrong and what was expected."""
    if not isinstance(data, list):
        raise LockfileError(f"{where}: expected a JSON list of entries, got {type(data).__name__}. Regenerate "
                            "it with `kernel-plugins lock PROJECT_DIR`.")
    ours = hashes or not (data and isinstance(data[0], dict) and {"dependency", "lock"} & set(data[0]))
    out: list[KernelLock] = []
    seen: set[tuple[object, ...]] = set()
    for index, entry in enumerate(data):
        label = f"{where}: {_label(index, entry)}"
        if not isinstance(entry, dict):
            raise LockfileError(f"{label}: expected a JSON object, got {type(entry).__name__}")
        lock = _hashes_entry(label, entry) if ours else _kernels_entry(label, entry)
        key = (lock.repo_id, lock.sha) if ours else (lock.repo_id, lock.version, lock.revision)
        if key in seen:
            raise LockfileError(f"{label}: {lock.repo_id} {lock.spec or 'at ' + lock.sha} is listed twice; keep one entry")
        seen.add(key)
        out.append(lock)
    return out


def _parse_variants(label: str, variants: object) -> dict[str, VariantLock]:
    if not isinstance(variants, dict):
        raise LockfileError(f"{label}: key 'variants' must be an object of variant name -> "
                            f"{{\"hash\", \"hash_type\"}}, got {type(variants).__name__}")
    out: dict[str, VariantLock] = {}
    for name, item in variants.items():
        at = f"{label}: variants.{name}"
        if not _VARIANT_RE.fullmatch(name) or ".." in name:
            raise LockfileError(f"{label}: variant name {name!r} is not a plain folder name")
        if not isinstance(item, dict):
            raise LockfileError(f"{at}: expected an object with 'hash' and 'hash_type'")
        _need(at, item, ("hash", "hash_type"))
        if item["hash_type"] != HASH_TYPE:
            raise LockfileError(f"{at}: key 'hash_type' is {item['hash_type']!r}; only {HASH_TYPE!r} can be "
                                "checked. Regenerate the lock with `kernel-plugins lock PROJECT_DIR`.")
        value, signer = item["hash"], item.get("signer")
        if not isinstance(value, str) or not _HASH_RE.fullmatch(value):
            raise LockfileError(f"{at}: key 'hash' must be 'sha256-' + 64 hex digits, got {value!r}")
        if signer is not None and (not isinstance(signer, str) or not signer.strip()):
            raise LockfileError(f"{at}: key 'signer' must be a non-empty string, got {signer!r}")
        out[name] = VariantLock(value, HASH_TYPE, signer)
    return out


def lockfile_path(project: str | os.PathLike[str]) -> Path:
    """``PROJECT_DIR/kernels.lock`` for a folder, the path itself for a file."""
    path = Path(project).expanduser()
    return path / LOCKFILE_NAME if path.is_dir() else path


def hashes_path(lockfile: Path) -> Path:
    """The file of the variant hashes of ``lockfile`` (``kernels.lock.variants``)."""
    return lockfile.with_name(lockfile.name + HASHES_SUFFIX)


def _mine(uid: int) -> bool:
    return not hasattr(os, "getuid") or uid in (os.getuid(), 0)


def _refused(path: Path, why: str, fix: str = "Fix its owner or mode (chmod go-w)") -> LockfileError:
    return LockfileError(f"{path}: refusing this {path.name}: {why}, so someone else could choose what it "
                         f"pins. {fix}, or pass lockfile= with a file you trust.")


def _read(path: Path, private: bool, raw: dict[str, bytes] | None = None) -> object | None:
    """Open ``path`` once, not through a link, check the descriptor (a regular file; with
    ``private`` yours or root's, not writable by group or others) and decode it (its bytes
    into ``raw``, by name). None: absent."""
    from ..jsonfile import JSONFileError, parse_json, read_regular_file, written_by_others

    def check(st: os.stat_result) -> None:
        if why := written_by_others(st):  # the one rule for files that decide what is trusted
            raise _refused(path, why)

    try:
        data = read_regular_file(path, max_bytes=MAX_LOCKFILE_BYTES, follow=False, check=check if private else None)
        raw is not None and raw.update({path.name: data})
        return parse_json(data, where=str(path), max_bytes=MAX_LOCKFILE_BYTES)
    except FileNotFoundError:
        return None
    except JSONFileError as exc:
        raise LockfileError(f"cannot read {exc}. Regenerate it with `kernel-plugins lock PROJECT_DIR`.") from None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise _refused(path, "it is a symbolic link", "Put the file itself there") from None
        raise LockfileError(f"cannot read {path}: {exc.strerror or exc}") from None


def read_lockfile(path: str | os.PathLike[str], *, private: bool = False, raw: dict[str, bytes] | None = None) -> Lockfile:
    """Read a lock file (a file, or a folder holding ``kernels.lock``) and the hashes beside it.

    :param private: the rules of a lock nobody named (:mod:`._discovery`): ``path`` not a
        link, both files yours or root's and writable by no one else, and the hashes missing
        only from a folder no one else may write.
    :param raw: filled with the bytes read and used, by file name; then a link at ``path`` is refused.
    :raises LockfileError: missing, invalid or refused file; hashes of other commits."""
    file = lockfile_path(path) if private or raw is not None else Path(os.path.realpath(lockfile_path(path)))
    data = _read(file, private, raw)
    if data is None:
        raise LockfileError(f"{file} does not exist; create it with `kernel-plugins lock PROJECT_DIR`")
    entries = parse_lock(data, where=str(file))
    if not entries or not entries[0].spec:  # the earlier format: the hashes are in the file
        return Lockfile(file, tuple(entries), file)
    side = hashes_path(file)
    data = _read(side, private, raw)
    if data is None:
        st = file.parent.stat()
        if private and (not _mine(st.st_uid) or st.st_mode & 0o022 and not st.st_mode & stat.S_ISVTX):
            raise _refused(file, f"it has no {side.name} beside it, and others may write its folder (they could "
                                 "have deleted it)", "Make the folder yours and chmod go-w it")
        return Lockfile(file, tuple(entries))
    hashes = {(h.repo_id, h.sha): h.variants for h in parse_lock(data, where=str(side), hashes=True)}
    pinned = {(e.repo_id, e.sha) for e in entries}
    missing, extra = sorted(pinned - set(hashes)), sorted(set(hashes) - pinned)
    if missing or extra:
        what = f"has no hashes for {missing[0][0]} at {missing[0][1]}" if missing else \
            f"has hashes for {extra[0][0]} at {extra[0][1]}, which {file.name} does not pin"
        raise LockfileError(f"{side} does not match {file.name}: it {what} (was {file.name} locked again by "
                            f"another tool?). Run `kernel-plugins lock PROJECT_DIR` again, or delete {side.name} "
                            "to load on the commit pins alone.")
    return Lockfile(file, tuple(replace(e, variants=hashes[e.repo_id, e.sha]) for e in entries), side)


def _dump(entries: Iterable[dict[str, Any]]) -> str:
    return json.dumps(list(entries), indent=2) + "\n"


def write_lockfile(path: str | os.PathLike[str], locks: Sequence[KernelLock]) -> Path:
    """Write ``locks`` to ``path`` (a file, or a folder: ``<folder>/kernels.lock``) in kernels'
    format and their hashes beside it, each atomically (never seen half written), hashes first.
    :return: the lock file written.
    :raises LockfileError: an entry without a version or revision; the folder is not writable."""
    from ..jsonfile import write_atomic

    file = lockfile_path(path)
    texts = {hashes_path(file): _dump(lock.to_json() for lock in {(x.repo_id, x.sha): x for x in locks}.values()),
             file: _dump(lock.kernels_json() for lock in locks)}
    for target, text in texts.items():  # never write what we could not read back
        parse_lock(json.loads(text), where=str(target), hashes=target != file)
    for target, text in texts.items():
        try:
            mode = target.stat().st_mode & 0o777
        except OSError:
            mode = 0o644
        try:
            write_atomic(target, text, mode=mode, fsync=True)
        except OSError as exc:
            raise LockfileError(f"cannot write {target}: {exc}") from exc
    return file
