"""The pydantic models of ``build.toml`` and the values the validator returns.

One model per table (``[general]``, ``[general.hub]``, ``[general.<backend>]``,
``[torch]``, ``[torch-noarch]``, ``[tvm-ffi]``, ``[kernel.<name>]``); keys are kebab-case,
unknown keys are refused and TOML types are exact. Edition 5 and legacy files share these
models: what differs between them is checked in ``_editions``. :class:`BuildToml` is a
validated file and :class:`BuildConfigIssue` one problem found in one.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Annotated, Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictInt,
    StrictStr,
    StringConstraints,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticCustomError

#: The ``edition`` this version of kernel-plugins reads (files without one are legacy).
CURRENT_EDITION = 5

#: ``[kernel.<name>]`` keys that only a kernel of one backend may use.
KERNEL_BACKEND_KEYS: dict[str, tuple[str, ...]] = {
    "cuda": ("cuda-capabilities", "cuda-flags", "cuda-minver"),
    "rocm": ("rocm-archs", "hip-flags"),
    "xpu": ("sycl-flags",),
}

_NAME_PATTERN = r"^[a-z][-a-z0-9]*[a-z0-9]$"

_VERSION_PATTERN = r"^[0-9]+(\.[0-9]+){0,2}$"


def _kebab(name: str) -> str:
    return name.replace("_", "-")


class _Table(BaseModel):
    """A TOML table: kebab-case keys, unknown keys refused, exact TOML types."""

    model_config = ConfigDict(
        extra="forbid", frozen=True, strict=True, alias_generator=_kebab, populate_by_name=False
    )


StrList = list[StrictStr]

VersionStr = Annotated[StrictStr, StringConstraints(pattern=_VERSION_PATTERN)]

KernelName = Annotated[StrictStr, StringConstraints(pattern=_NAME_PATTERN)]


class Hub(_Table):
    """``[general.hub]``: where the kernel is published."""

    repo_id: StrictStr | None = None
    branch: StrictStr | None = None


class KernelDependency(_Table):
    """One ``kernel-depends`` entry: ``{repo-id, version}`` or ``{repo-id, revision}``."""

    repo_id: StrictStr
    version: Annotated[StrictInt, Field(ge=1)] | None = None
    revision: Annotated[StrictStr, Field(min_length=1)] | None = None

    @model_validator(mode="after")
    def _one_of(self) -> KernelDependency:
        if (self.version is None) == (self.revision is None):
            raise PydanticCustomError(
                "version_or_revision",
                "give exactly one of 'version' (an integer N, branch vN) or 'revision'",
            )
        return self


class BackendGeneral(_Table):
    """``[general.<backend>]``: dependencies that only builds for one backend have."""

    python_depends: StrList | None = None
    kernel_depends: list[KernelDependency] | None = None


class CudaGeneral(BackendGeneral):
    """``[general.cuda]``: CUDA version bounds plus the backend dependencies."""

    minver: VersionStr | None = None
    maxver: VersionStr | None = None


#: Model of ``[general.<backend>]`` per backend (others use :class:`BackendGeneral`).
_BACKEND_GENERAL_MODELS: dict[str, type[BackendGeneral]] = {"cuda": CudaGeneral}


class General(_Table):
    """``[general]``: the kernel's name, version, license and target backends.

    ``[general.<backend>]`` tables are validated separately (see
    :attr:`BuildToml.backend_tables`).
    """

    name: KernelName
    version: Annotated[StrictInt, Field(ge=0)] | None = None
    edition: StrictInt | None = None
    license: Annotated[StrictStr, Field(min_length=1)] | None = None
    upstream: StrictStr | None = None
    source: StrictStr | None = None
    backends: Annotated[list[StrictStr], Field(min_length=1)]
    hub: Hub | None = None
    python_depends: StrList | None = None
    kernel_depends: list[KernelDependency] | None = None


class Torch(_Table):
    """``[torch]``: a compiled torch extension."""

    src: StrList = []
    include: StrList | None = None
    pyext: StrList | None = None
    cxx_flags: StrList | None = None
    minver: VersionStr | None = None
    maxver: VersionStr | None = None
    stable_abi: Any = None

    @field_validator("stable_abi", mode="plain")
    @classmethod
    def _stable_abi(cls, v: object) -> str | dict[str, str] | None:
        ok = re.compile(_VERSION_PATTERN)
        if v is None or (isinstance(v, str) and ok.match(v)):
            return v  # type: ignore[return-value]
        if isinstance(v, dict) and all(
            isinstance(k, str) and isinstance(x, str) and ok.match(x) for k, x in v.items()
        ):
            return dict(v)
        raise PydanticCustomError(
            "stable_abi",
            "expected a torch version string such as \"2.10\" or a table mapping backends to "
            "such versions",
        )


class TorchNoarch(_Table):
    """``[torch-noarch]``: pure Python / Triton kernels, no compiled code."""

    pyext: StrList | None = None
    cuda_capabilities: StrList | None = None
    rocm_archs: StrList | None = None


class TvmFfi(_Table):
    """``[tvm-ffi]``: a kernel built against tvm-ffi instead of torch."""

    src: StrList
    include: StrList | None = None
    pyext: StrList | None = None
    cxx_flags: StrList | None = None


class Kernel(_Table):
    """``[kernel.<name>]``: one compiled kernel for one backend.

    Keys in :data:`KERNEL_BACKEND_KEYS` are accepted only for their backend.
    """

    backend: StrictStr
    depends: StrList
    src: StrList
    include: StrList | None = None
    cxx_flags: StrList | None = None
    cuda_capabilities: StrList | None = None
    cuda_flags: StrList | None = None
    cuda_minver: VersionStr | None = None
    rocm_archs: StrList | None = None
    hip_flags: StrList | None = None
    sycl_flags: StrList | None = None


class BuildConfig(_Table):
    """The whole ``build.toml`` (edition 5 or legacy)."""

    general: General
    torch: Torch | None = None
    torch_noarch: TorchNoarch | None = None
    tvm_ffi: TvmFfi | None = None
    kernel: dict[StrictStr, Kernel] = {}


@dataclass(frozen=True)
class BuildConfigIssue:
    """One problem in a build.toml: the key (dotted TOML path), what is wrong, the fix."""

    key: str
    message: str
    fix: str

    def describe(self) -> str:
        """``key: message (fix: ...)``."""
        where = self.key or "(top level)"
        return f"{where}: {self.message} (fix: {self.fix})"


@dataclass(frozen=True)
class BuildToml:
    """A validated build.toml.

    Attributes:
        config: the validated tables.
        edition: ``5``, or None for a legacy file.
        shape: ``"edition 5"``, ``"legacy v4"`` or ``"legacy v3"`` (the legacy label is a
            best-effort guess from the keys used).
        backend_tables: the ``[general.<backend>]`` tables by backend name.
        notes: remarks that are not problems (e.g. the legacy-format note).
        where: the file the data came from.
    """

    config: BuildConfig
    edition: int | None
    shape: str
    backend_tables: Mapping[str, BackendGeneral]
    notes: tuple[str, ...]
    where: str

    @property
    def legacy(self) -> bool:
        """True for a file without ``edition``."""
        return self.edition is None

    @property
    def name(self) -> str:
        """``general.name``."""
        return self.config.general.name

    @property
    def backends(self) -> list[str]:
        """``general.backends`` in canonical kernel-plugins names (``cann`` -> ``npu``)."""
        return [canonical_backend(b) for b in self.config.general.backends]

    def python_depends(self, backend: str) -> list[str]:
        """``python-depends`` names of ``[general]`` plus ``[general.<backend>]``."""
        names = list(self.config.general.python_depends or [])
        for key, table in self.backend_tables.items():
            if canonical_backend(key) == canonical_backend(backend):
                names += table.python_depends or []
        return names


def canonical_backend(name: str) -> str:
    """The kernel-plugins backend name for a builder backend name (``cann`` -> ``npu``)."""
    from kernel_plugins.known_plugins import builder_alias

    return builder_alias(name)


def known_backends() -> dict[str, str]:
    """Backend names this installation accepts, each with where it comes from.

    Installed backends (built-in and plugins), the known plugin names of
    :data:`~kernel_plugins.known_plugins.KNOWN_PLUGINS` (not necessarily installed), and
    their kernel-builder aliases.
    """
    from kernel_plugins.known_plugins import KNOWN_PLUGINS
    from kernel_plugins.plugins import get_manager

    out = {name: rec.origin() for name, rec in get_manager().backends().items()}
    for name, plugin in KNOWN_PLUGINS.items():
        out.setdefault(name, f"known plugin {plugin.distribution} (not installed)")
        for alias in plugin.builder_aliases:
            out.setdefault(alias, f"kernel-builder name of backend '{name}'")
    return out
