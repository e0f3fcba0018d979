"""``metadata.json`` of a build variant: the pydantic model and a file reader.

Keys are kebab-case; unknown keys are ignored (newer builders add keys). A malformed
file raises :class:`~kernel_plugins.errors.MetadataError` naming the file and key.
"""

from __future__ import annotations

import keyword
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from .errors import MetadataError

if TYPE_CHECKING:
    from pydantic_core import ErrorDetails

__all__ = ["KernelMetadata", "BackendField", "Digest", "KernelDepend", "read_metadata", "MAX_METADATA_BYTES"]

#: Metadata files larger than this are refused (a real one is a few hundred bytes).
MAX_METADATA_BYTES = 1 << 20

_NAME_RE = re.compile(r"^[a-z][-a-z0-9]*[a-z0-9]$")


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="ignore", populate_by_name=True)


class BackendField(_Model):
    """``backend``: the backend type (a backend name) and optional architectures."""

    type: str = Field(min_length=1, max_length=64)
    archs: tuple[str, ...] = ()


class Digest(_Model):
    """``digest``: per-file hashes (base64) of the variant's files."""

    algorithm: Literal["sha256", "sha512"]
    files: dict[str, str]


class KernelDepend(_Model):
    """One ``kernel-depends`` entry: a repo id with a version or a revision."""

    repo_id: str = Field(alias="repo-id")
    version: int | None = None
    revision: str | None = None


class KernelMetadata(_Model):
    """The validated content of a variant's ``metadata.json``."""

    name: str
    id: str
    version: int = Field(strict=True)
    license: str
    upstream: str | None = None
    source: str | None = None
    python_depends: tuple[str, ...] = Field(alias="python-depends")
    kernel_depends: tuple[KernelDepend, ...] = Field(default=(), alias="kernel-depends")
    backend: BackendField
    digest: Digest | None = None
    provenance: dict[str, Any] | None = None

    @field_validator("name")
    @classmethod
    def _name(cls, v: str) -> str:
        if not _NAME_RE.match(v):
            raise ValueError(f"{v!r} must match {_NAME_RE.pattern} (lowercase, digits, '-')")
        return v

    @field_validator("id")
    @classmethod
    def _id(cls, v: str) -> str:
        if not v.isidentifier() or keyword.iskeyword(v) or not v.isascii() or len(v) > 128:
            raise ValueError(
                f"{v!r} must be a plain ASCII Python identifier (no dots, slashes or dashes): it "
                "is the module name and torch.ops namespace of the build"
            )
        return v

    @field_validator("version")
    @classmethod
    def _version(cls, v: int) -> int:
        if v < 0:
            raise ValueError(f"kernel version must be >= 0, got {v}")
        return v

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


def _loc(err: ErrorDetails) -> str:
    return ".".join(str(p) for p in err.get("loc", ())) or "(top level)"


def parse_metadata(data: object, *, where: str) -> KernelMetadata:
    """Validate already-decoded JSON; errors name ``where`` and the key."""
    if not isinstance(data, dict):
        raise MetadataError(f"{where}: expected a JSON object, got {type(data).__name__}")
    try:
        return KernelMetadata.model_validate(data)
    except ValidationError as e:
        problems = "; ".join(f"key '{_loc(err)}': {err['msg']}" for err in e.errors())
        raise MetadataError(
            f"{where}: invalid metadata: {problems}. Rebuild the kernel or fix the file."
        ) from None


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
