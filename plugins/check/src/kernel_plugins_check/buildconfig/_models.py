"""The pydantic models of ``build.toml`` and the values the validator returns.

One model per table, as the build.toml reader of kernels 0.19.1 (kernel-builder's) reads
them (``[general]``, ``[general.hub]``, ``[general.cuda|neuron|tpu|xpu]``, ``[torch]``,
``[torch-noarch]``, ``[tvm-ffi]``, ``[mlx-noarch]``, ``[kernel.<name>]``); unknown keys are
refused and TOML types are exact. Edition 5 and legacy (v4) files share :class:`BuildConfig`
(what only edition 5 may use is checked in ``_editions``); edition 6 has its own
:class:`BuildConfig6`: ``general.build-layout``, ``[mlx-noarch]``, and kernels chosen by
``language`` (:data:`KERNEL_LANGUAGES`, C++ and Rust) instead of ``backend``. :class:`BuildToml` is a validated file and :class:`BuildConfigIssue` one
problem found in one.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
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

#: The newest ``edition`` kernels 0.19.1 reads; it reads :data:`EDITIONS` (files without one
#: are legacy v4 files, which it upgrades in memory, as it does edition 5).
CURRENT_EDITION = 6
EDITIONS = (5, 6)

#: The backend names kernel-builder knows (``general.backends``, stable-abi keys).
BUILDER_BACKENDS = ("cann", "cpu", "cuda", "metal", "neuron", "rocm", "tpu", "xpu")

#: The backends kernel-builder compiles ``[kernel.<name>]`` tables for, each with the keys
#: only its kernels take.
KERNEL_BACKEND_KEYS: dict[str, tuple[str, ...]] = {
    "cpu": (),
    "cuda": ("cuda-capabilities", "cuda-flags", "cuda-minver"),
    "metal": (),
    "rocm": ("rocm-archs", "hip-flags"),
    "xpu": ("sycl-flags",),
}

#: Edition 6's kernel kinds (``[kernel.<name>] language``): the backend each builds for.
#: A Rust kernel (``rust-*``) needs ``cargo-manifest`` and a ``[tvm-ffi]`` framework.
KERNEL_LANGUAGES: dict[str, str] = {
    "cpp-cpu": "cpu", "cpp-cuda": "cuda", "cpp-metal": "metal", "cpp-rocm": "rocm",
    "cpp-xpu": "xpu", "rust-cpu": "cpu", "rust-cuda-oxide": "cuda", "rust-cutile": "cuda",
}

#: The first CUDA version with cuTile: the least ``tileiras-minver`` of a ``rust-cutile`` kernel.
CUTILE_MINVER = (13, 2)

#: What a kernel's ``depends`` may name (kernel-builder's build dependencies).
KernelBuildDependency = Literal[
    "cutlass_2_10", "cutlass_3_5", "cutlass_3_6", "cutlass_3_8", "cutlass_3_9", "cutlass_4_0",
    "cutlass_4_4", "cutlass_4_5", "sycl_tla", "metal-cpp", "torch", "torch-stable-abi-shim",
]

_NAME_PATTERN = r"^[a-z][-a-z0-9]*[a-z0-9]$"

_GIT_SCHEMES = ("https", "http", "git", "ssh", "git+ssh", "git+https", "git+http")


def _kebab(name: str) -> str:
    return name.replace("_", "-")


def _major_minor(value: str) -> str:
    """kernel-builder's versions: two numbers (``"12.8"``), blanks around them ignored."""
    numbers = [re.fullmatch(r"\+?0*([0-9]{1,20})", p, re.ASCII) for p in value.strip().split(".")]
    if len(numbers) != 2 or not all(n and int(n[1]) < 1 << 64 for n in numbers):
        raise _error("major_minor", f"{value!r} is not a version such as \"12.8\"")
    return value


def _git_url(value: str) -> str:
    """A git URL (``https://...``, ``ssh://...``) or ``user@host:path``, as kernel-builder
    accepts them."""
    scheme = re.match(r"([A-Za-z][A-Za-z0-9+.-]*):", value)
    if scheme:
        if scheme[1].lower() not in _GIT_SCHEMES:
            raise _error("git_url", f"unsupported scheme {scheme[1]!r} in git URL {value!r} "
                         f"(kernel-builder accepts {', '.join(_GIT_SCHEMES)})")
        return value
    host, _, path = value.partition(":")
    if not host or not path or path.startswith("/") or re.search(r"[\s/]", host):
        raise _error("git_url", f"{value!r} is not a git URL")
    return value


def _repo_id(value: str) -> str:
    from kernel_plugins.errors import KernelPluginsError
    from kernel_plugins.hub import validate_repo_id

    try:
        return validate_repo_id(value)
    except KernelPluginsError as e:
        raise _error("repo_id", str(e)) from None


def _error(kind: str, message: str) -> PydanticCustomError:
    """A validation error of type ``kind`` whose message is ``message`` as written."""
    return PydanticCustomError(kind, "{message}", {"message": message})


class _Table(BaseModel):
    """A TOML table: kebab-case keys, unknown keys refused, exact TOML types."""

    model_config = ConfigDict(
        extra="forbid", frozen=True, strict=True, alias_generator=_kebab, populate_by_name=False
    )


StrList = list[StrictStr]

Version = Annotated[StrictStr, AfterValidator(_major_minor)]

GitUrl = Annotated[StrictStr, AfterValidator(_git_url)]

RepoId = Annotated[StrictStr, AfterValidator(_repo_id)]

KernelName = Annotated[StrictStr, StringConstraints(pattern=_NAME_PATTERN)]


class Hub(_Table):
    """``[general.hub]``: where the kernel is published."""

    repo_id: RepoId | None = None
    branch: StrictStr | None = None


class KernelDependency(_Table):
    """One ``kernel-depends`` entry: ``{repo-id, version}`` or ``{repo-id, revision}``."""

    repo_id: RepoId
    version: Annotated[StrictInt, Field(ge=0)] | None = None
    revision: Annotated[StrictStr, Field(min_length=1)] | None = None

    @model_validator(mode="after")
    def _one_of(self) -> KernelDependency:
        if (self.version is None) == (self.revision is None):
            raise PydanticCustomError(
                "version_or_revision",
                "give exactly one of 'version' (an integer N, branch vN) or 'revision'",
            )
        return self


class TpuGeneral(_Table):
    """``[general.tpu]``: Python dependencies of the TPU builds."""

    python_depends: StrList | None = None


class BackendGeneral(_Table):
    """``[general.neuron]``, ``[general.xpu]`` (and a kernel-plugins backend's table):
    the dependencies that only builds for that backend have."""

    python_depends: StrList | None = None
    kernel_depends: list[KernelDependency] | None = None


class CudaGeneral(BackendGeneral):
    """``[general.cuda]``: CUDA version bounds plus the backend dependencies."""

    minver: Version | None = None
    maxver: Version | None = None


class General(_Table):
    """``[general]``: the kernel's name, version, license and target backends."""

    name: KernelName
    version: Annotated[StrictInt, Field(ge=0)]
    edition: StrictInt | None = None
    license: Annotated[StrictStr, Field(min_length=1)]
    upstream: GitUrl | None = None
    source: GitUrl | None = None
    backends: Annotated[list[StrictStr], Field(min_length=1)]
    hub: Hub | None = None
    python_depends: StrList | None = None
    kernel_depends: list[KernelDependency] | None = None
    cuda: CudaGeneral | None = None
    neuron: BackendGeneral | None = None
    tpu: TpuGeneral | None = None
    xpu: BackendGeneral | None = None


class Torch(_Table):
    """``[torch]``: a compiled torch extension."""

    src: StrList = []
    include: StrList | None = None
    pyext: StrList | None = None
    cxx_flags: StrList | None = None
    minver: Version | None = None
    maxver: Version | None = None
    stable_abi: Any = None

    @field_validator("stable_abi", mode="plain")
    @classmethod
    def _stable_abi(cls, v: object) -> str | dict[str, str] | None:
        try:
            if v is None or isinstance(v, str) and _major_minor(v):
                return v  # type: ignore[return-value]
            if isinstance(v, dict) and all(isinstance(x, str) and _major_minor(x)
                                           for x in v.values()):
                return dict(v)
        except PydanticCustomError:
            pass
        raise PydanticCustomError(
            "stable_abi",
            "expected a torch version such as \"2.10\" or a table mapping backends to such "
            "versions",
        )


class TorchNoarch(_Table):
    """``[torch-noarch]``: pure Python / Triton kernels, no compiled code. kernel-builder
    spells the architecture keys of this table with underscores."""

    pyext: StrList | None = None
    cuda_capabilities: StrList | None = Field(None, alias="cuda_capabilities")
    rocm_archs: StrList | None = Field(None, alias="rocm_archs")


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
    depends: list[KernelBuildDependency]
    src: StrList
    include: StrList | None = None
    cxx_flags: StrList | None = None
    cuda_capabilities: StrList | None = None
    cuda_flags: StrList | None = None
    cuda_minver: Version | None = None
    rocm_archs: StrList | None = None
    hip_flags: StrList | None = None
    sycl_flags: StrList | None = None


class BuildConfig(_Table):
    """The whole ``build.toml`` (edition 5 or legacy v4)."""

    general: General
    torch: Torch | None = None
    torch_noarch: TorchNoarch | None = None
    tvm_ffi: TvmFfi | None = None
    kernel: dict[StrictStr, Kernel] = {}


def _cutile_minver(value: str) -> str:
    parts = tuple(int(p.strip().lstrip("+")) for p in value.split("."))
    if parts < CUTILE_MINVER:
        least = ".".join(map(str, CUTILE_MINVER))
        raise _error("cutile_minver", f"tileiras-minver {value!r} is below {least}, the first "
                     "CUDA version with cuTile")
    return value


class _Kernel6(_Table):
    """An edition-6 ``[kernel.<name>]`` table; ``language`` names its kind."""

    language: str
    src: StrList

    @property
    def backend(self) -> str:
        """The backend this kind of kernel builds for (:data:`KERNEL_LANGUAGES`)."""
        return KERNEL_LANGUAGES[self.language]


class _CppKernel(_Kernel6):
    depends: list[KernelBuildDependency]
    include: StrList | None = None
    cxx_flags: StrList | None = None


class CppKernel(_CppKernel):
    """``language = "cpp-cpu"`` or ``"cpp-metal"``: a C++ kernel."""

    language: Literal["cpp-cpu", "cpp-metal"]


class CppCudaKernel(_CppKernel):
    """``language = "cpp-cuda"``: a C++/CUDA kernel."""

    language: Literal["cpp-cuda"]
    cuda_capabilities: StrList | None = None
    cuda_flags: StrList | None = None
    cuda_minver: Version | None = None


class CppRocmKernel(_CppKernel):
    """``language = "cpp-rocm"``: a HIP kernel."""

    language: Literal["cpp-rocm"]
    rocm_archs: StrList | None = None
    hip_flags: StrList | None = None


class CppXpuKernel(_CppKernel):
    """``language = "cpp-xpu"``: a SYCL kernel."""

    language: Literal["cpp-xpu"]
    sycl_flags: StrList | None = None


class RustKernel(_Kernel6):
    """``language = "rust-cpu"``: a Rust kernel built from its Cargo manifest (the other
    Rust kinds add their keys)."""

    language: Literal["rust-cpu"]
    cargo_manifest: StrictStr


class RustCudaOxideKernel(RustKernel):
    """``language = "rust-cuda-oxide"``: a Rust CUDA kernel (cuda-oxide)."""

    language: Literal["rust-cuda-oxide"]  # type: ignore[assignment]
    cuda_capabilities: StrList | None = None


class RustCutileKernel(RustKernel):
    """``language = "rust-cutile"``: a Rust cuTile kernel (CUDA >= 13.2)."""

    language: Literal["rust-cutile"]  # type: ignore[assignment]
    tileiras_minver: Annotated[Version, AfterValidator(_cutile_minver)]


Kernel6 = Annotated[
    CppKernel | CppCudaKernel | CppRocmKernel | CppXpuKernel | RustKernel | RustCudaOxideKernel
    | RustCutileKernel,
    Field(discriminator="language"),
]


class General6(General):
    """Edition 6's ``[general]``: also ``build-layout``, how a build variant's files are
    stored (``files``, or ``zip``: one archive)."""

    build_layout: Literal["files", "zip"] | None = None


class MlxNoarch(_Table):
    """``[mlx-noarch]`` (edition 6): a pure-Python MLX kernel, for the metal backend only."""

    pyext: StrList | None = None


class BuildConfig6(BuildConfig):
    """The whole edition-6 ``build.toml``."""

    general: General6
    mlx_noarch: MlxNoarch | None = None
    kernel: dict[StrictStr, Kernel6] = {}  # type: ignore[assignment]


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
        edition: ``5`` or ``6``, or None for a legacy file.
        shape: ``"edition 6"``, ``"edition 5"`` or ``"legacy v4"``.
        backend_tables: the ``[general.<backend>]`` tables by backend name.
        notes: remarks that are not problems (e.g. the legacy-format note).
        where: the file the data came from.
    """

    config: BuildConfig
    edition: int | None
    shape: str
    backend_tables: Mapping[str, BackendGeneral | TpuGeneral]
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

    def _tables_of(self, backend: str) -> list[BackendGeneral | TpuGeneral]:
        return [t for key, t in self.backend_tables.items()
                if canonical_backend(key) == canonical_backend(backend)]

    def python_depends(self, backend: str) -> list[str]:
        """``python-depends`` names of ``[general]`` plus ``[general.<backend>]``."""
        names = list(self.config.general.python_depends or [])
        for table in self._tables_of(backend):
            names += table.python_depends or []
        return names

    def kernel_depends(self, backend: str) -> list[KernelDependency]:
        """``kernel-depends`` of ``[general]`` plus ``[general.<backend>]``."""
        deps = list(self.config.general.kernel_depends or [])
        for table in self._tables_of(backend):
            deps += getattr(table, "kernel_depends", None) or []
        return deps


def canonical_backend(name: str) -> str:
    """The kernel-plugins backend name for a builder backend name (``cann`` -> ``npu``)."""
    from kernel_plugins.known_plugins import builder_alias

    return builder_alias(name)


def known_backends() -> dict[str, str]:
    """Backend names this installation knows, each with where it comes from.

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


def builder_spelling(name: str) -> str | None:
    """kernel-builder's name for a kernel-plugins backend that it knows under another name
    (``npu`` -> ``cann``), else None."""
    from kernel_plugins.known_plugins import KNOWN_PLUGINS

    plugin = KNOWN_PLUGINS.get(name)
    aliases = plugin.builder_aliases if plugin else ()
    return next((a for a in aliases if a in BUILDER_BACKENDS), None)


def plugin_only(name: object, known: Mapping[str, str]) -> bool:
    """True for a kernel-plugins backend that kernel-builder does not know at all (``mlu``)."""
    return (isinstance(name, str) and name in known and name not in BUILDER_BACKENDS
            and builder_spelling(name) is None)
