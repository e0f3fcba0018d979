"""``metadata.json`` of a build variant: the validated values and a file reader.

Keys are kebab-case (the snake_case spelling of a key is accepted too); unknown keys are
ignored (newer builders add keys). Validation is hand-written, so loading a kernel imports
no validation library. Every bad key is reported, each with its dotted location: a
malformed file raises :class:`~kernel_plugins.errors.MetadataError` naming the file and
the keys, and :func:`metadata_problems` lists them one by one (``kernel-plugins check``).
"""

from __future__ import annotations

import keyword
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

from .errors import MetadataError

__all__ = [
    "KernelMetadata",
    "BackendField",
    "Digest",
    "KernelDepend",
    "MetadataProblem",
    "metadata_problems",
    "parse_metadata",
    "read_metadata",
    "MAX_METADATA_BYTES",
]

#: Metadata files larger than this are refused (a real one is a few hundred bytes).
MAX_METADATA_BYTES = 1 << 20

_NAME_RE = re.compile(r"^[a-z][-a-z0-9]*[a-z0-9]$")
_DIGEST_ALGORITHMS = ("sha256", "sha512")


@dataclass(frozen=True)
class BackendField:
    """``backend``: the backend type (a backend name, 1-64 characters) and optional archs."""

    type: str
    archs: tuple[str, ...] = ()


@dataclass(frozen=True)
class Digest:
    """``digest``: per-file hashes (base64) of the variant's files; ``sha256`` or ``sha512``."""

    algorithm: str
    files: dict[str, str]


@dataclass(frozen=True)
class KernelDepend:
    """One ``kernel-depends`` entry: a repo id with a version or a revision."""

    repo_id: str
    version: int | None = None
    revision: str | None = None


@dataclass(frozen=True)
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

    @property
    def python_name(self) -> str:
        """The package name of the nested layout: ``name`` with ``-`` -> ``_``."""
        return self.name.replace("-", "_")

    @property
    def is_dirty(self) -> bool:
        """True when ``provenance`` says the build came from a dirty tree."""
        prov = self.provenance or {}
        return any(
            isinstance(v, dict) and v.get("dirty") is True for v in prov.values()
        ) or prov.get("dirty") is True


class MetadataProblem(NamedTuple):
    """One bad key: ``key`` (dotted, ``backend.type``), ``message``, the ``value`` found
    (None when missing) and ``missing`` (the key is absent)."""

    key: str
    message: str
    value: object = None
    missing: bool = False


class _Bad(Exception):
    """Raised inside the checks for one value; turned into a :class:`MetadataProblem`."""


_MISSING = object()


class _Checker:
    """Collects the problems of one document, in the order of its fields."""

    def __init__(self) -> None:
        self.problems: list[MetadataProblem] = []

    def field(
        self, data: dict[Any, Any], key: str, check: Any, *, at: str = "", default: object = _MISSING
    ) -> Any:
        """``check(value, location)`` for ``data[key]`` (or its snake_case spelling)."""
        value = data.get(key, _MISSING)
        if value is _MISSING and key.replace("-", "_") in data:
            key = key.replace("-", "_")
            value = data[key]
        where = f"{at}{key}"
        if value is _MISSING:
            if default is _MISSING:
                self.problems.append(MetadataProblem(where, "Field required", None, True))
            return default
        try:
            return check(value, where)
        except _Bad as e:
            self.problems.append(MetadataProblem(where, str(e), value))
            return None

    def items(self, value: object, where: str, check: Any) -> tuple[Any, ...]:
        """A JSON array (or tuple) checked item by item (``where.<index>``)."""
        if not isinstance(value, (list, tuple)):
            raise _Bad("Input should be a valid tuple")
        out = []
        for i, item in enumerate(value):
            try:
                out.append(check(item, f"{where}.{i}"))
            except _Bad as e:
                self.problems.append(MetadataProblem(f"{where}.{i}", str(e), item))
        return tuple(out)

    def table(self, value: object, what: str) -> dict[Any, Any]:
        if not isinstance(value, dict):
            raise _Bad(f"Input should be a valid dictionary or instance of {what}")
        return value


def _str(value: object, where: str = "") -> str:
    if not isinstance(value, str):
        raise _Bad("Input should be a valid string")
    return value


def _opt_str(value: object, where: str = "") -> str | None:
    return None if value is None else _str(value)


def _int(value: object) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise _Bad("Input should be a valid integer")
    return value


def _lax_int(value: object, where: str = "") -> int | None:
    """An optional integer, converted as JSON schema validators usually do (``true``, ``2.0``
    and ``"2"`` are 1, 2 and 2), for keys that older builders wrote loosely."""
    if value is None or (isinstance(value, int) and not isinstance(value, bool)):
        return value
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")):
            raise _Bad("Input should be a finite number")
        if not value.is_integer():
            raise _Bad("Input should be a valid integer, got a number with a fractional part")
        return int(value)
    if isinstance(value, str):
        if not re.fullmatch(r"\s*[+-]?[0-9]+\s*", value):
            raise _Bad("Input should be a valid integer, unable to parse string as an integer")
        return int(value)
    raise _Bad("Input should be a valid integer")


def _name(value: object, where: str) -> str:
    v = _str(value)
    if not _NAME_RE.match(v):
        raise _Bad(f"Value error, {v!r} must match {_NAME_RE.pattern} (lowercase, digits, '-')")
    return v


def _id(value: object, where: str) -> str:
    v = _str(value)
    if not v.isidentifier() or keyword.iskeyword(v) or not v.isascii() or len(v) > 128:
        raise _Bad(
            f"Value error, {v!r} must be a plain ASCII Python identifier (no dots, slashes or "
            "dashes): it is the module name and torch.ops namespace of the build"
        )
    return v


def _version(value: object, where: str) -> int:
    v = _int(value)
    if v < 0:
        raise _Bad(f"Value error, kernel version must be >= 0, got {v}")
    return v


def _backend_type(value: object, where: str) -> str:
    v = _str(value)
    if not v:
        raise _Bad("String should have at least 1 character")
    if len(v) > 64:
        raise _Bad("String should have at most 64 characters")
    return v


def _dict(value: object, where: str) -> dict[str, Any] | None:
    if value is not None and not isinstance(value, dict):
        raise _Bad("Input should be a valid dictionary")
    return value


def _check(data: dict[Any, Any]) -> tuple[KernelMetadata | None, list[MetadataProblem]]:
    c = _Checker()

    def backend(value: object, where: str) -> BackendField:
        table = c.table(value, "BackendField")
        at = f"{where}."
        kind = c.field(table, "type", _backend_type, at=at)
        archs = c.field(table, "archs", lambda v, w: c.items(v, w, _str), at=at, default=())
        return BackendField(kind, archs)

    def digest(value: object, where: str) -> Digest | None:
        if value is None:
            return None
        table = c.table(value, "Digest")

        def algorithm(v: object, w: str) -> str:
            if v not in _DIGEST_ALGORITHMS or not isinstance(v, str):
                raise _Bad("Input should be 'sha256' or 'sha512'")
            return v

        def files(v: object, w: str) -> dict[str, str]:
            if not isinstance(v, dict):
                raise _Bad("Input should be a valid dictionary")
            for k, h in v.items():
                if not isinstance(h, str) or not isinstance(k, str):
                    c.problems.append(
                        MetadataProblem(f"{w}.{k}", "Input should be a valid string", h)
                    )
            return dict(v)

        alg = c.field(table, "algorithm", algorithm, at=f"{where}.")
        return Digest(alg, c.field(table, "files", files, at=f"{where}."))

    def depend(value: object, where: str) -> KernelDepend:
        table = c.table(value, "KernelDepend")
        at = f"{where}."
        repo_id = c.field(table, "repo-id", _str, at=at)
        version = c.field(table, "version", _lax_int, at=at, default=None)
        return KernelDepend(repo_id, version, c.field(table, "revision", _opt_str, at=at,
                                                      default=None))

    values = {
        "name": c.field(data, "name", _name),
        "id": c.field(data, "id", _id),
        "version": c.field(data, "version", _version),
        "license": c.field(data, "license", _str),
        "upstream": c.field(data, "upstream", _opt_str, default=None),
        "source": c.field(data, "source", _opt_str, default=None),
        "python_depends": c.field(data, "python-depends", lambda v, w: c.items(v, w, _str)),
        "kernel_depends": c.field(
            data, "kernel-depends", lambda v, w: c.items(v, w, depend), default=()
        ),
        "backend": c.field(data, "backend", backend),
        "digest": c.field(data, "digest", digest, default=None),
        "provenance": c.field(data, "provenance", _dict, default=None),
    }
    if c.problems:
        return None, c.problems
    return KernelMetadata(**values), []


def metadata_problems(data: object) -> list[MetadataProblem]:
    """Every problem of already-decoded ``metadata.json`` content (empty when it is valid)."""
    if not isinstance(data, dict):
        return [MetadataProblem("", f"expected a JSON object, got {type(data).__name__}", data)]
    return _check(data)[1]


def parse_metadata(data: object, *, where: str) -> KernelMetadata:
    """Validate already-decoded JSON; errors name ``where`` and every bad key."""
    if not isinstance(data, dict):
        raise MetadataError(f"{where}: expected a JSON object, got {type(data).__name__}")
    meta, problems = _check(data)
    if meta is None:
        listed = "; ".join(f"key '{p.key}': {p.message}" for p in problems)
        raise MetadataError(
            f"{where}: invalid metadata: {listed}. Rebuild the kernel or fix the file."
        )
    return meta


def read_metadata(variant_dir: Path) -> KernelMetadata:
    """Read and validate ``<variant_dir>/metadata.json``."""
    path = variant_dir / "metadata.json"
    if not path.is_file():
        raise MetadataError(
            f"{path}: missing; every build variant needs a metadata.json (is this a variant folder?)"
        )
    from .jsonfile import JSONFileError, read_json

    try:
        data = read_json(path, max_bytes=MAX_METADATA_BYTES)
    except JSONFileError as e:
        raise MetadataError(str(e)) from None
    except OSError as e:
        raise MetadataError(f"{path}: cannot be read: {e.strerror or e}") from None
    return parse_metadata(data, where=str(path))
