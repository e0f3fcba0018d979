"""``build.toml`` of a kernel source repository: pydantic models and a validator.

Kernel builders read ``build.toml`` to compile a kernel; kernel-plugins reads it only to
check a repository before it is published (``kernel-plugins check``). Two formats exist:

- **edition 5** (current): ``[general]`` has ``edition = 5`` and requires ``name``,
  ``version``, ``license`` and ``backends``; exactly one framework table (``[torch]``,
  ``[torch-noarch]`` or ``[tvm-ffi]``); ``[torch.stable-abi]`` may map backends to
  versions.
- **legacy** files without ``edition`` (the older v3 / v4 shapes): still read, with a
  note; ``version`` and ``license`` are optional there.

Keys are kebab-case. Unknown keys are refused with their location
(``general.python_depends``: "keys are kebab-case, write python-depends"). Backend names
(``general.backends``, ``kernel.<name>.backend``, ``[general.<backend>]`` tables and
``[torch.stable-abi]`` keys) are checked against the backends this installation knows:
the installed ones (built-in and plugins), the known plugin names
(:data:`kernel_plugins.known_plugins.KNOWN_PLUGINS`) and builder aliases such as ``cann``
(Ascend, served by the ``npu`` backend). So a repository that targets MLU or MUSA
validates without any change to the core.

:func:`validate_build_data` returns every issue (for ``check``);
:func:`parse_build_toml` / :func:`read_build_toml` raise one
:class:`~kernel_plugins.errors.BuildConfigError` listing them.
"""

from __future__ import annotations

import re
import types
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Union, get_args, get_origin

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictInt,
    StrictStr,
    StringConstraints,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticCustomError

from .errors import BuildConfigError, KernelPluginsError

__all__ = [
    "CURRENT_EDITION",
    "MAX_BUILD_TOML_BYTES",
    "KERNEL_BACKEND_KEYS",
    "BuildConfig",
    "General",
    "BackendGeneral",
    "CudaGeneral",
    "Hub",
    "KernelDependency",
    "Torch",
    "TorchNoarch",
    "TvmFfi",
    "Kernel",
    "BuildToml",
    "BuildConfigIssue",
    "known_backends",
    "canonical_backend",
    "loads_toml",
    "validate_build_data",
    "parse_build_toml",
    "read_build_toml",
]

#: The ``edition`` this version of kernel-plugins reads (files without one are legacy).
CURRENT_EDITION = 5
#: build.toml files larger than this are refused (the biggest real one is ~20 KiB).
MAX_BUILD_TOML_BYTES = 1 << 20
#: Backend names kernel builders use that kernel-plugins serves under another name.
#: ``[kernel.<name>]`` keys that only a kernel of one backend may use.
KERNEL_BACKEND_KEYS: dict[str, tuple[str, ...]] = {
    "cuda": ("cuda-capabilities", "cuda-flags", "cuda-minver"),
    "rocm": ("rocm-archs", "hip-flags"),
    "xpu": ("sycl-flags",),
}

_NAME_PATTERN = r"^[a-z][-a-z0-9]*[a-z0-9]$"
_VERSION_PATTERN = r"^[0-9]+(\.[0-9]+){0,2}$"
_BARE_KEY = re.compile(r"^[A-Za-z0-9_-]+$")


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
    from .known_plugins import builder_alias

    return builder_alias(name)


def known_backends() -> dict[str, str]:
    """Backend names this installation accepts, each with where it comes from.

    Installed backends (built-in and plugins), the known plugin names of
    :data:`~kernel_plugins.known_plugins.KNOWN_PLUGINS` (not necessarily installed), and
    their kernel-builder aliases.
    """
    from .known_plugins import KNOWN_PLUGINS
    from .plugins import get_manager

    out = {name: rec.origin() for name, rec in get_manager().backends().items()}
    for name, plugin in KNOWN_PLUGINS.items():
        out.setdefault(name, f"known plugin {plugin.distribution} (not installed)")
        for alias in plugin.builder_aliases:
            out.setdefault(alias, f"kernel-builder name of backend '{name}'")
    return out


# --- TOML text ------------------------------------------------------------------------


def _toml_loads() -> Any:
    try:
        import tomllib

        return tomllib.loads
    except ModuleNotFoundError:  # Python 3.10
        try:
            import tomli  # type: ignore[import-not-found]
        except ModuleNotFoundError:
            raise BuildConfigError(
                "reading build.toml needs the TOML parser of Python 3.11+ (tomllib); on "
                "Python 3.10 install it with: pip install tomli"
            ) from None
        return tomli.loads


def loads_toml(raw: bytes | str, *, where: str = "build.toml") -> dict[str, Any]:
    """Decode TOML text into a dict; :class:`BuildConfigError` for size, encoding, syntax.

    :param raw: the file's bytes (or text).
    :param where: how to name the file in messages.
    """
    size = len(raw.encode("utf-8", "surrogatepass") if isinstance(raw, str) else raw)
    if size > MAX_BUILD_TOML_BYTES:
        raise BuildConfigError(
            f"{where}: {size} bytes, larger than the {MAX_BUILD_TOML_BYTES} allowed for a "
            "build.toml; is this the right file?"
        )
    if isinstance(raw, bytes):
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as e:
            raise BuildConfigError(
                f"{where}: not UTF-8 text ({e}); save the file as UTF-8"
            ) from None
    else:
        text = raw
    loads = _toml_loads()
    try:
        data = loads(text)
    except RecursionError:
        raise BuildConfigError(
            f"{where}: malformed TOML: values are nested too deeply; flatten the file"
        ) from None
    except ValueError as e:  # tomllib.TOMLDecodeError is a ValueError
        raise BuildConfigError(
            f"{where}: malformed TOML: {e}; fix the syntax there (strings need quotes, "
            "tables are [name], lists are [\"a\", \"b\"])"
        ) from None
    return data


# --- validation -----------------------------------------------------------------------


def _fmt_loc(loc: tuple[Any, ...] | list[Any]) -> str:
    """``("kernel", "a.b", "src", 0)`` -> ``kernel."a.b".src[0]``."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
            continue
        text = str(part)
        if not _BARE_KEY.match(text):
            text = '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'
        out += ("." if out else "") + text
    return out


def _short(value: object, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _unwrap(annotation: Any) -> Any:
    """Strip ``Annotated`` and ``X | None`` from a type."""
    while True:
        origin = get_origin(annotation)
        if origin is Annotated:
            annotation = get_args(annotation)[0]
        elif origin in (Union, types.UnionType):
            args = [a for a in get_args(annotation) if a is not type(None)]
            if len(args) != 1:
                return annotation
            annotation = args[0]
        else:
            return annotation


def _model_at(loc: tuple[Any, ...]) -> type[BaseModel] | None:
    """The model class describing the table at ``loc`` (None when not a model)."""
    current: Any = BuildConfig
    parts = list(loc)
    while parts:
        if not (isinstance(current, type) and issubclass(current, BaseModel)):
            return None
        part = parts.pop(0)
        field = next(
            (f for n, f in current.model_fields.items() if (f.alias or _kebab(n)) == part), None
        )
        if field is None:
            return None
        current = _unwrap(field.annotation)
        while get_origin(current) in (dict, list) and parts:
            parts.pop(0)  # the dict key / list index
            current = _unwrap(get_args(current)[-1])
    return current if isinstance(current, type) and issubclass(current, BaseModel) else None


def _allowed_keys(model: type[BaseModel]) -> list[str]:
    return sorted(f.alias or _kebab(n) for n, f in model.model_fields.items())


_TYPE_FIXES = {
    "int_type": "write a whole number without quotes, e.g. version = 1",
    "string_type": 'write a quoted string, e.g. "value"',
    "list_type": 'write a list, e.g. ["a", "b"]',
    "model_type": "write a table: [section] followed by key = value lines",
    "dict_type": "write a table: [section] followed by key = value lines",
    "greater_than_equal": "use a number that is not negative",
    "too_short": "give at least one entry",
}


_CUSTOM_FIXES = {
    "version_or_revision": 'write {repo-id = "org/name", version = 1} or {repo-id = "org/name", '
    'revision = "main"}',
    "stable_abi": 'write stable-abi = "2.10", or a [torch.stable-abi] table such as cuda = "2.10"',
}


def _issue_from_error(err: Mapping[str, Any], prefix: tuple[Any, ...] = ()) -> BuildConfigIssue:
    loc = prefix + tuple(err.get("loc", ()))
    key = _fmt_loc(loc)
    kind = err.get("type", "")
    last = loc[-1] if loc else ""
    table = _fmt_loc(loc[:-1]) or "(top level)"
    if kind == "missing":
        return BuildConfigIssue(
            key, f"missing required key '{key}'", f"add {last} = ... to [{table}]"
        )
    if kind == "extra_forbidden":
        model = _model_at(loc[:-1])
        allowed = _allowed_keys(model) if model is not None else []
        if isinstance(last, str) and "_" in last and _kebab(last) in allowed:
            fix = f"keys are kebab-case: write '{_kebab(last)}' instead of '{last}'"
        else:
            extra = ""
            if model is General:
                extra = "; or a table named after a backend, such as [general.cuda]"
            elif model is Kernel:
                specific = {k for keys in KERNEL_BACKEND_KEYS.values() for k in keys}
                allowed = [k for k in allowed if k not in specific]
                extra = "; plus " + "; ".join(
                    f"for {b} kernels: {', '.join(k)}" for b, k in KERNEL_BACKEND_KEYS.items()
                )
            fix = (
                f"remove it or fix its spelling; keys allowed in [{table}]: "
                f"{', '.join(allowed) or 'none'}{extra}"
            )
        return BuildConfigIssue(key, f"unknown key '{key}'", fix)
    if kind == "string_pattern_mismatch":
        if last == "name":
            return BuildConfigIssue(
                key,
                f"kernel name {_short(err.get('input'))} is not lowercase letters, digits and "
                "'-' (starting with a letter)",
                'use a name such as "my-kernel"',
            )
        return BuildConfigIssue(
            key,
            f"{_short(err.get('input'))} is not a version number",
            'write a version such as "12.8" or "2.10"',
        )
    if kind in _CUSTOM_FIXES:
        return BuildConfigIssue(key, err.get("msg", "invalid value"), _CUSTOM_FIXES[kind])
    fix = _TYPE_FIXES.get(kind, "fix the value")
    return BuildConfigIssue(
        key, f"{err.get('msg', 'invalid value')} (got {_short(err.get('input'))})", fix
    )


def _legacy_shape(data: Mapping[str, Any]) -> str:
    """Best-effort label of a legacy file: ``v4`` when it uses keys v3 lacked, else ``v3``."""
    general = data.get("general")
    general = general if isinstance(general, Mapping) else {}
    torch = data.get("torch")
    torch = torch if isinstance(torch, Mapping) else {}
    v4 = (
        "torch-noarch" in data
        or "tvm-ffi" in data
        or "stable-abi" in torch
        or any(k in general for k in ("upstream", "source", "kernel-depends"))
    )
    return "legacy v4" if v4 else "legacy v3"


def _backend_issue(key: str, name: object, known: Mapping[str, str]) -> BuildConfigIssue | None:
    if isinstance(name, str) and name in known:
        return None
    return BuildConfigIssue(
        key,
        f"unknown backend {_short(name)}",
        f"use one of {', '.join(sorted(known))} (installed backends and known plugins); for "
        "another accelerator install the kernel-plugins backend distribution that provides it",
    )


def _semantic_issues(data: Mapping[str, Any], known: Mapping[str, str]) -> list[BuildConfigIssue]:
    """Backend names, backend-specific kernel keys and cross-table rules (on raw data)."""
    issues: list[BuildConfigIssue] = []
    general = data.get("general")
    general = general if isinstance(general, Mapping) else {}
    backends = general.get("backends")
    declared: set[str] = set()
    if isinstance(backends, list):
        for i, b in enumerate(backends):
            issue = _backend_issue(f"general.backends[{i}]", b, known)
            if issue:
                issues.append(issue)
            elif b in declared:
                issues.append(BuildConfigIssue(
                    f"general.backends[{i}]", f"backend {b!r} is listed twice",
                    "list each backend once",
                ))
            if isinstance(b, str):
                declared.add(b)
    hub = general.get("hub")
    if isinstance(hub, Mapping) and isinstance(hub.get("repo-id"), str):
        issues += _repo_id_issue("general.hub.repo-id", hub["repo-id"])
    torch = data.get("torch")
    if isinstance(torch, Mapping) and isinstance(torch.get("stable-abi"), Mapping):
        for b in torch["stable-abi"]:
            issue = _backend_issue(_fmt_loc(("torch", "stable-abi", b)), b, known)
            if issue:
                issues.append(issue)
    kernels = data.get("kernel")
    if isinstance(kernels, Mapping):
        for kname, table in kernels.items():
            if not isinstance(table, Mapping):
                continue
            backend = table.get("backend")
            if backend is None:
                continue
            bkey = _fmt_loc(("kernel", kname, "backend"))
            issue = _backend_issue(bkey, backend, known)
            if issue:
                issues.append(issue)
                continue
            if declared and backend not in declared:
                issues.append(BuildConfigIssue(
                    bkey,
                    f"kernel {kname!r} is built for backend {backend!r}, which general.backends "
                    "does not list",
                    f"add {backend!r} to general.backends or remove [kernel.{kname}]",
                ))
            for owner, keys in KERNEL_BACKEND_KEYS.items():
                if owner == backend:
                    continue
                for k in keys:
                    if k in table:
                        issues.append(BuildConfigIssue(
                            _fmt_loc(("kernel", kname, k)),
                            f"key '{k}' is only for {owner} kernels; this kernel's backend is "
                            f"{backend!r}",
                            f"remove '{k}' or set backend = \"{owner}\"",
                        ))
    frameworks = [t for t in ("torch", "torch-noarch", "tvm-ffi") if t in data]
    if len(frameworks) > 1:
        issues.append(BuildConfigIssue(
            "", f"more than one framework table: {', '.join(f'[{t}]' for t in frameworks)}",
            "keep exactly one of [torch], [torch-noarch] and [tvm-ffi]",
        ))
    if "torch-noarch" in data and isinstance(kernels, Mapping) and kernels:
        issues.append(BuildConfigIssue(
            "kernel",
            "a [torch-noarch] kernel has no compiled code, but [kernel.*] tables are present",
            "remove the [kernel.*] tables, or use [torch] for a compiled kernel",
        ))
    return issues


def _repo_id_issue(key: str, repo_id: str) -> list[BuildConfigIssue]:
    from .hub import validate_repo_id

    try:
        validate_repo_id(repo_id)
    except KernelPluginsError as e:
        return [BuildConfigIssue(key, str(e), "use the form 'org/name'")]
    return []


def _edition_issues(data: Mapping[str, Any]) -> tuple[int | None, list[BuildConfigIssue]]:
    general = data.get("general")
    if not isinstance(general, Mapping) or "edition" not in general:
        return None, []
    edition = general["edition"]
    if isinstance(edition, bool) or not isinstance(edition, int):
        return None, [BuildConfigIssue(
            "general.edition", f"edition must be an integer, got {_short(edition)}",
            f"write edition = {CURRENT_EDITION}",
        )]
    if edition != CURRENT_EDITION:
        fix = (
            "upgrade kernel-plugins to read it"
            if edition > CURRENT_EDITION
            else f"write edition = {CURRENT_EDITION} (after migrating) or remove the key for the "
            "legacy format"
        )
        return edition, [BuildConfigIssue(
            "general.edition",
            f"edition {edition} is not supported: this kernel-plugins reads edition "
            f"{CURRENT_EDITION} and legacy files without an edition",
            fix,
        )]
    issues = []
    for key in ("version", "license"):
        if key not in general:
            issues.append(BuildConfigIssue(
                f"general.{key}",
                f"missing required key 'general.{key}' (required in edition {CURRENT_EDITION})",
                f"add {key} = ... to [general]",
            ))
    frameworks = [t for t in ("torch", "torch-noarch", "tvm-ffi") if t in data]
    if not frameworks:
        issues.append(BuildConfigIssue(
            "", "no framework table",
            "add [torch] (compiled kernels), [torch-noarch] (pure Python / Triton) or [tvm-ffi]",
        ))
    return edition, issues


def validate_build_data(
    data: object, *, where: str = "build.toml", known: Mapping[str, str] | None = None
) -> tuple[BuildToml | None, list[BuildConfigIssue]]:
    """Validate decoded build.toml data; never raises for bad data.

    :param data: what :func:`loads_toml` returned.
    :param where: how to name the file in notes.
    :param known: backend name -> origin (default: :func:`known_backends`).
    :return: the :class:`BuildToml` (None when there is any issue) and every issue found.
    """
    if not isinstance(data, Mapping):
        return None, [BuildConfigIssue(
            "", f"expected a TOML document (a table), got {type(data).__name__}",
            "start the file with a [general] table",
        )]
    known = known_backends() if known is None else known
    edition, issues = _edition_issues(data)
    rest = dict(data)
    backend_tables: dict[str, BackendGeneral] = {}
    general = data.get("general")
    if isinstance(general, Mapping):
        general = dict(general)
        declared_keys = set(_allowed_keys(General))
        for key in [k for k in general if k not in declared_keys and k in known]:
            table = general.pop(key)
            model = _BACKEND_GENERAL_MODELS.get(canonical_backend(key), BackendGeneral)
            try:
                backend_tables[key] = model.model_validate(table)
            except ValidationError as e:
                issues += [_issue_from_error(err, ("general", key)) for err in e.errors()]
        rest["general"] = general
    issues += _semantic_issues(data, known)
    config: BuildConfig | None = None
    try:
        config = BuildConfig.model_validate(rest)
    except ValidationError as e:
        located = {i.key for i in issues}  # a specific issue beats the generic type error
        issues += [i for i in map(_issue_from_error, e.errors()) if i.key not in located]
    except RecursionError:
        issues.append(BuildConfigIssue("", "values are nested too deeply", "flatten the file"))
    unique = sorted(dict.fromkeys(issues), key=lambda i: i.key)
    if unique or config is None:
        return None, unique
    shape = f"edition {edition}" if edition is not None else _legacy_shape(data)
    notes: tuple[str, ...] = ()
    if edition is None:
        notes = (
            f"{where} uses the legacy build.toml format without an edition ({shape} shape); it "
            f"is still read, but kernel builders now write edition {CURRENT_EDITION}: add "
            f"edition = {CURRENT_EDITION} to [general] when you migrate (edition "
            f"{CURRENT_EDITION} also requires version and license)",
        )
    return BuildToml(config, edition, shape, backend_tables, notes, where), []


def _raise(where: str, issues: list[BuildConfigIssue]) -> BuildConfigError:
    listed = "; ".join(i.describe() for i in issues[:20])
    more = f" (and {len(issues) - 20} more)" if len(issues) > 20 else ""
    return BuildConfigError(f"{where}: invalid build.toml: {listed}{more}")


def parse_build_toml(
    text: bytes | str, *, where: str = "build.toml", known: Mapping[str, str] | None = None
) -> BuildToml:
    """Decode and validate build.toml text.

    :raises BuildConfigError: malformed TOML or any issue (all of them are listed).
    """
    data = loads_toml(text, where=where)
    config, issues = validate_build_data(data, where=where, known=known)
    if config is None:
        raise _raise(where, issues)
    return config


def read_build_toml(path: Path, *, known: Mapping[str, str] | None = None) -> BuildToml:
    """Read and validate a ``build.toml`` file (or the one in a repository folder).

    :raises BuildConfigError: missing, too large, not UTF-8, malformed or invalid.
    """
    path = Path(path)
    if path.is_dir():
        path = path / "build.toml"
    if not path.is_file():
        raise BuildConfigError(
            f"{path}: missing; a kernel source repository has a build.toml at its top level"
        )
    size = path.stat().st_size
    if size > MAX_BUILD_TOML_BYTES:
        raise BuildConfigError(
            f"{path}: {size} bytes, larger than the {MAX_BUILD_TOML_BYTES} allowed for a "
            "build.toml; is this the right file?"
        )
    return parse_build_toml(path.read_bytes(), where=str(path), known=known)
