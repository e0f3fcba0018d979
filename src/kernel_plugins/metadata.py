"""``metadata.json`` of a build variant: the validated values and a file reader.

Keys are kebab-case, as kernels reads them; unknown keys are ignored (newer builders add
keys), except in a ``kernel-depends`` entry. Validation is hand-written, so loading a kernel imports
no validation library. Every bad key is reported, each with its dotted location: a
malformed file raises :class:`~kernel_plugins.errors.MetadataError` naming the file and
the keys, and :func:`metadata_problems` lists them one by one (``kernel-plugins check``).
"""

from __future__ import annotations

import keyword
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple, TypeVar

from ._record import record
from .errors import KernelDependencyError, KernelPluginsError, KernelsVersionError, MetadataError

__all__ = ["KERNELS_VERSION", "BUILD_LAYOUTS", "KernelMetadata", "BackendField", "Digest", "KernelDepend",
           "MetadataProblem", "metadata_problems", "parse_metadata", "parse_metadata_bytes", "read_metadata",
           "check_minver", "MAX_METADATA_BYTES"]

#: The release of HF ``kernels`` whose formats (``metadata.json``, ``kernels.lock``, the Hub
#: layout) kernel-plugins implements: a kernel whose ``kernels-minver`` is newer is refused.
KERNELS_VERSION = "0.19.1"
#: ``build-layout`` values: the package as files in the variant folder, or ``<id>.zip`` there.
BUILD_LAYOUTS = ("files", "zip")

#: Metadata files larger than this are refused (a real one is a few hundred bytes).
MAX_METADATA_BYTES = 1 << 20
#: ``backend.archs`` longer than this is refused (real builds list a dozen at most).
MAX_ARCHS = 1000

_NAME_RE = re.compile(r"^[a-z][-a-z0-9]*[a-z0-9]$")
#: What kernels strips around ``kernels-minver`` (Unicode White_Space; str.strip also takes \x1c-\x1f).
_SPACE = "\t\n\v\f\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000"


@record
class BackendField:
    """``backend``: the backend type (a backend name, 1-64 characters) and optional archs."""

    type: str
    archs: tuple[str, ...] = ()


@record
class Digest:
    """``digest``: per-file hashes (base64) of the variant's files; ``sha256`` or ``sha512``."""

    algorithm: str
    files: dict[str, str]


@record
class KernelDepend:
    """One ``kernel-depends`` entry: a repo id with a version or a revision."""

    repo_id: str
    version: int | None = None
    revision: str | None = None

    def __str__(self) -> str:
        """``org/name (version N)`` or ``org/name (revision R)``."""
        pin = f"version {self.version}" if self.version is not None else f"revision {self.revision}"
        return f"{self.repo_id} ({pin})"


#: Chains of ``kernel-depends`` longer than this are refused (by loads and locks).
MAX_DEPTH = 16
_T = TypeVar("_T")


def walk_depends(dep: KernelDepend, step: Callable[[KernelDepend, tuple[object, ...]], _T],
                 done: dict[KernelDepend, _T], path: tuple[object, ...] = (), *,
                 error: type[KernelPluginsError] = KernelDependencyError) -> _T:
    """The value of ``dep`` in a walk of a ``kernel-depends`` graph: ``step(dep, (*path, dep))``
    once per entry (remembered in ``done``); ``step`` walks its entries with that path.
    :raises error: ``dep`` is in ``path`` (a cycle), or ``path`` is too long (both named)."""
    if dep in path or len(path) > MAX_DEPTH:
        why = "form a cycle" if dep in path else f"nest more than {MAX_DEPTH} deep"
        raise error(f"kernel dependencies {why}: {' -> '.join(map(str, (*path, dep)))}. Remove one of them.")
    if dep not in done:
        done[dep] = step(dep, (*path, dep))
    return done[dep]


@record
class KernelMetadata:
    """The validated content of a variant's ``metadata.json``."""

    name: str
    id: str
    version: int
    license: str
    python_depends: tuple[str, ...]
    backend: BackendField
    upstream: str | None = None
    source: str | None = None
    kernel_depends: tuple[KernelDepend, ...] = ()
    digest: Digest | None = None
    provenance: dict[str, Any] | None = None
    kernels_minver: str | None = None
    build_layout: str = "files"

    @property
    def python_name(self) -> str:
        """The package name of the nested layout: ``name`` with ``-`` -> ``_``."""
        return self.name.replace("-", "_")

    @property
    def is_dirty(self) -> bool:
        """True when ``provenance`` says the build came from a dirty tree."""
        prov = self.provenance or {}
        return any(isinstance(v, dict) and v.get("dirty") is True for v in prov.values()) or prov.get("dirty") is True


class MetadataProblem(NamedTuple):
    """One bad key: ``key`` (dotted, ``backend.type``), ``message``, the ``value`` found
    (None when missing) and ``missing`` (the key is absent)."""

    key: str
    message: str
    value: object = None
    missing: bool = False


class _Bad(Exception):
    """One value is wrong (the message says how)."""


class _Nested(Exception):
    """Values inside a value are wrong: their problems, keys relative to it."""

    def __init__(self, problems: list[MetadataProblem]) -> None:
        self.problems = problems


_Check = Callable[[Any], Any]
_REQUIRED = object()


def _fields(data: object, spec: dict[str, tuple[_Check, object]], what: str) -> dict[str, Any]:
    """Check each key of ``spec`` in a JSON object; returns the values by attribute name, or
    raises every problem at once."""
    if not isinstance(data, dict):
        raise _Bad(f"Input should be a valid dictionary or instance of {what}")
    out: dict[str, Any] = {}
    problems: list[MetadataProblem] = []
    for key, (check, default) in spec.items():
        attr = key.replace("-", "_")
        if key in data:
            out[attr] = _run(check, data[key], key, problems)
        elif default is _REQUIRED:
            problems.append(MetadataProblem(key, "Field required", None, True))
        else:
            out[attr] = default
    if problems:
        raise _Nested(problems)
    return out


def _run(check: _Check, value: object, key: str, problems: list[MetadataProblem]) -> Any:
    """``check(value)``, its problems added to ``problems`` under ``key``."""
    try:
        return check(value)
    except _Bad as e:
        problems.append(MetadataProblem(key, str(e), value))
    except _Nested as e:
        problems += [p._replace(key=f"{key}.{p.key}") for p in e.problems]
    return None


def _record(cls: type, spec: dict[str, tuple[_Check, object]]) -> _Check:
    return lambda value: cls(**_fields(value, spec, cls.__name__))


def _optional(check: _Check) -> _Check:
    return lambda value: None if value is None else check(value)


def _typed(kind: type, name: str) -> Callable[[object], Any]:
    """A check that ``value`` is a ``kind`` (a bool is no integer), as pydantic words it."""
    def check(value: object) -> Any:
        if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
            raise _Bad(f"Input should be a valid {name}")
        return value

    return check


_str: Callable[[object], str] = _typed(str, "string")
_int: Callable[[object], int] = _typed(int, "integer")
_bool: Callable[[object], bool] = _typed(bool, "boolean")
_dict: Callable[[object], dict[str, Any]] = _typed(dict, "dictionary")


def _items(check: _Check) -> _Check:
    def items(value: object) -> tuple[Any, ...]:
        if not isinstance(value, (list, tuple)):
            raise _Bad("Input should be a valid tuple")
        problems: list[MetadataProblem] = []
        out = tuple(_run(check, item, str(i), problems) for i, item in enumerate(value))
        if problems:
            raise _Nested(problems)
        return out

    return items


def _name(value: object) -> str:
    if not _NAME_RE.match(v := _str(value)):
        raise _Bad(f"Value error, {v!r} must match {_NAME_RE.pattern} (lowercase, digits, '-')")
    return v


def _id(value: object) -> str:
    v = _str(value)
    if not v.isidentifier() or keyword.iskeyword(v) or not v.isascii() or len(v) > 128:
        raise _Bad(f"Value error, {v!r} must be a plain ASCII Python identifier (no dots, slashes or "
                   "dashes): it is the module name and torch.ops namespace of the build")
    if v.startswith("__"):
        raise _Bad(f"Value error, {v!r} must not start with two underscores: such names are Python's own")
    return v


def _version(value: object) -> int:
    if not 0 <= (v := _int(value)) < 1 << 64:
        raise _Bad(f"Value error, kernel version must be >= 0 and < 2**64, got {v}")
    return v


def _minver(value: object) -> str:
    """``X.Y.Z`` as kernels reads it (outer spaces, a ``+`` and leading zeros per number
    allowed; each below 2**64), normalised. Digits are counted before any is converted."""
    nums = [re.fullmatch(r"\+?0*([0-9]{1,20})", n) for n in _str(value).strip(_SPACE).split(".")]
    if len(nums) != 3 or not all(m and int(m[1]) < 1 << 64 for m in nums):
        raise _Bad(f"Value error, {value!r} is not a kernels version X.Y.Z (e.g. '0.19.1')")
    return ".".join(str(int(m[1])) for m in nums if m)


def _layout(value: object) -> str:
    if value not in BUILD_LAYOUTS:
        raise _Bad(f"Input should be 'files' or 'zip' (how the variant's package is stored), got {value!r}")
    return str(value)


def _backend_type(value: object) -> str:
    if not (v := _str(value)):
        raise _Bad("String should have at least 1 character")
    if len(v) > 64:
        raise _Bad("String should have at most 64 characters")
    return v


def _algorithm(value: object) -> str:
    if not isinstance(value, str) or value not in ("sha256", "sha512"):
        raise _Bad("Input should be 'sha256' or 'sha512'")
    return value


def _archs(value: object) -> tuple[str, ...]:
    if isinstance(value, (list, tuple)) and len(value) > MAX_ARCHS:
        raise _Bad(f"Value error, {len(value)} architectures; at most {MAX_ARCHS} are allowed")
    return _items(_str)(value)  # type: ignore[no-any-return]


def _oid(value: object) -> str:
    if not re.fullmatch(r"[0-9a-fA-F]{40}(?:[0-9a-fA-F]{24})?", v := _str(value)):
        raise _Bad(f"Value error, {v!r} is not a git commit id (40 or 64 hex digits)")
    return v


def _provenance(value: object) -> dict[str, Any]:
    """As kernels reads it: ``kernel-builder.version`` (a string), ``kernel``'s ``commit`` and
    ``dirty`` when it is given; other keys are kept, unread."""
    _fields(value, {"kernel-builder": (lambda b: _fields(b, {"version": (_str, _REQUIRED)}, "KernelBuilder"), _REQUIRED),
                    "kernel": (_optional(lambda k: _fields(k, {"commit": (_oid, _REQUIRED), "dirty": (_bool, _REQUIRED)},
                                                           "GitStatus")), None)}, "Provenance")
    return _dict(value)


def _files(value: object) -> dict[str, str]:
    problems: list[MetadataProblem] = []
    files = {k: _run(_str, v, str(k), problems) for k, v in _dict(value).items()}
    if problems:
        raise _Nested(problems)
    return files


def _repo_id(value: object) -> str:
    if (v := _str(value)).count("/") != 1 or v.startswith("/") or v.endswith("/"):
        raise _Bad(f"Value error, {v!r} is not a Hub repository id 'org/name'")
    return v  # hub.validate_repo_id checks the rest when the dependency is looked up


def _kernel_depend(value: object) -> KernelDepend:
    if isinstance(value, dict) and (extra := sorted(set(value) - {"repo-id", "version", "revision"})):
        raise _Bad(f"Value error, unknown key {extra[0]!r}: an entry has 'repo-id' and 'version' or 'revision'")
    dep: KernelDepend = _record(KernelDepend, {"repo-id": (_repo_id, _REQUIRED), "version": (
        _optional(_version), None), "revision": (_optional(_str), None)})(value)
    if (dep.version is None) == (dep.revision is None):
        raise _Bad(f"Value error, {value!r}: give exactly one of 'version' (an integer N, "
                   "branch vN) or 'revision' (a branch, tag or commit sha)")
    return dep


_METADATA = _record(KernelMetadata, {
    "name": (_name, _REQUIRED),
    "id": (_id, _REQUIRED),
    "version": (_version, _REQUIRED),
    "license": (_str, _REQUIRED),
    "upstream": (_optional(_str), None),
    "source": (_optional(_str), None),
    "python-depends": (_items(_str), _REQUIRED),
    "kernel-depends": (_items(_kernel_depend), ()),
    "backend": (_record(BackendField, {
        "type": (_backend_type, _REQUIRED),
        "archs": (lambda v: () if v is None else _archs(v), ()),
    }), _REQUIRED),
    "digest": (_optional(_record(Digest, {
        "algorithm": (_algorithm, _REQUIRED),
        "files": (_files, _REQUIRED),
    })), None),
    "provenance": (_optional(_provenance), None),
    "kernels-minver": (_optional(_minver), None),
    "build-layout": (_layout, "files"),
})


def check_minver(metadata: KernelMetadata, *, where: str) -> None:
    """:raises KernelsVersionError: ``kernels-minver`` is newer than :data:`KERNELS_VERSION`."""
    need, ours = metadata.kernels_minver, KERNELS_VERSION
    if need is not None and tuple(map(int, need.split("."))) > tuple(map(int, ours.split("."))):
        raise KernelsVersionError(f"{where}: kernel {metadata.name!r} needs kernels>={need} (kernels-minver), but "
                                  f"this kernel-plugins reads the format of kernels {KERNELS_VERSION}. Upgrade "
                                  "kernel-plugins, or load an older version of the kernel (version= or revision=).")


def metadata_problems(data: object) -> list[MetadataProblem]:
    """Every problem of already-decoded ``metadata.json`` content (empty when it is valid)."""
    if not isinstance(data, dict):
        return [MetadataProblem("", f"expected a JSON object, got {type(data).__name__}", data)]
    try:
        _METADATA(data)
    except _Nested as e:
        return e.problems
    return []


def parse_metadata(data: object, *, where: str) -> KernelMetadata:
    """Validate already-decoded JSON; errors name ``where`` and every bad key."""
    if not isinstance(data, dict):
        raise MetadataError(f"{where}: expected a JSON object, got {type(data).__name__}")
    try:
        return _METADATA(data)  # type: ignore[no-any-return]
    except _Nested as e:
        listed = "; ".join(f"key '{p.key}': {p.message}" for p in e.problems)
        raise MetadataError(f"{where}: invalid metadata: {listed}. Rebuild the kernel or fix the file.") from None


def parse_metadata_bytes(raw: bytes, *, where: str) -> KernelMetadata:
    """Decode and validate the bytes of a ``metadata.json`` (capped, as read); errors name
    ``where``. :raises MetadataError: not UTF-8 JSON, too large, or invalid."""
    from .jsonfile import JSONFileError, parse_json

    try:
        data = parse_json(raw, where=where, max_bytes=MAX_METADATA_BYTES)
    except JSONFileError as e:
        raise MetadataError(str(e)) from None
    return parse_metadata(data, where=where)


def read_metadata(variant_dir: Path) -> KernelMetadata:
    """Read and validate ``<variant_dir>/metadata.json``."""
    path = variant_dir / "metadata.json"
    if not path.is_file():
        raise MetadataError(f"{path}: missing; every build variant needs a metadata.json (is this a variant folder?)")
    from .jsonfile import JSONFileError, read_json

    try:
        data = read_json(path, max_bytes=MAX_METADATA_BYTES)
    except JSONFileError as e:
        raise MetadataError(str(e)) from None
    except OSError as e:
        raise MetadataError(f"{path}: cannot be read: {e.strerror or e}") from None
    return parse_metadata(data, where=str(path))
