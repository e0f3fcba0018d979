"""Validate a kernel repository before it is published (``kernel-plugins check``).

:func:`check` takes a local folder or a Hub repo id and returns a :class:`CheckReport`:
one :class:`Problem` (file, key, message, fix) per thing that is wrong, plus notes that
are not problems (a legacy build.toml, a deprecated ``torch-universal`` variant...).

What is checked:

- ``build.toml`` (when present): the models of :mod:`kernel_plugins.buildconfig`
  (edition 5 or legacy), backend names against the backends this installation knows.
- every ``build/<variant>/``: the folder name parses as a variant; the folder is not a
  link leading out of the repository, nor holds one; ``metadata.json`` validates; its
  ``backend.type`` agrees with the variant (``torch-<backend>`` for noarch, the owner of
  the arch token for arch variants, anything for ``torch-universal``); the kernel module
  exists (``__init__.py`` flat, or ``<python_name>/__init__.py`` nested);
  ``python-depends`` names are known for that backend; ``digest``, when present,
  matches the files (see :mod:`kernel_plugins.integrity`); ``name`` and ``version``
  agree with build.toml.

Nothing is written to the repository. A Hub repo is downloaded into the Hugging Face
cache first (every variant: this can be large).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from .buildconfig import (
    BuildToml,
    canonical_backend,
    known_backends,
    loads_toml,
    validate_build_data,
)
from .errors import KernelPluginsError, SourceError, VariantNameError
from .known_plugins import known_token_owner
from .metadata import MAX_METADATA_BYTES, KernelMetadata
from .variants import Variant, parse_variant

__all__ = [
    "Problem",
    "CheckReport",
    "check",
    "check_path",
    "check_hub",
]

_RENAME_FIX = (
    "rename the folder to a variant name such as torch-cpu, torch-cuda or "
    "torch213-cxx11-cu128-x86_64-linux"
)


@dataclass(frozen=True)
class Problem:
    """One problem found by :func:`check`.

    Attributes:
        file: the file or folder concerned, relative to the repository (POSIX).
        key: the key inside the file (``backend.type``, ``general.backends[1]``), or "".
        message: what is wrong, with the values involved.
        fix: what to do about it.
    """

    file: str
    key: str
    message: str
    fix: str

    def describe(self) -> str:
        """``file: key: message (fix: ...)`` on one line."""
        key = f" {self.key}:" if self.key else ""
        text = f"{self.file}:{key} {self.message} (fix: {self.fix})"
        return " ".join(text.split())

    def to_dict(self) -> dict[str, str]:
        """A JSON-ready dict."""
        return {"file": self.file, "key": self.key, "message": self.message, "fix": self.fix}


@dataclass(frozen=True)
class CheckReport:
    """The result of :func:`check`.

    Attributes:
        target: what was checked (a path, or ``org/name@sha``).
        root: the local folder that was read.
        problems: every problem, build.toml first, then by variant.
        notes: remarks that are not problems.
        variants: the variant folders found under ``build/``.
    """

    target: str
    root: Path
    problems: tuple[Problem, ...]
    notes: tuple[str, ...] = ()
    variants: tuple[str, ...] = field(default=())

    @property
    def ok(self) -> bool:
        """True when no problem was found."""
        return not self.problems

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {
            "target": self.target,
            "root": str(self.root),
            "ok": self.ok,
            "variants": list(self.variants),
            "problems": [p.to_dict() for p in self.problems],
            "notes": list(self.notes),
        }


class _Ctx:
    """What the variant checks share: known backends, the manager, build.toml, roots."""

    def __init__(self, root: Path, link_root: Path, build: BuildToml | None) -> None:
        from .plugins import get_manager

        self.root = root
        self.link_root = link_root
        self.build = build
        self.known = known_backends()
        self.manager = get_manager()
        self.problems: list[Problem] = []
        self.notes: list[str] = []

    def rel(self, path: Path) -> str:
        try:
            return path.relative_to(self.root).as_posix()
        except ValueError:
            return str(path)

    def add(self, file: Path | str, key: str, message: str, fix: str) -> None:
        name = file if isinstance(file, str) else self.rel(file)
        self.problems.append(Problem(name, key, message, fix))

    def inside(self, path: Path) -> bool:
        resolved = path.resolve()
        return resolved == self.link_root or self.link_root in resolved.parents

    def token_owner(self, prefix: str) -> str | None:
        return self.manager.token_owner(prefix) or known_token_owner(prefix)


def check(
    target: str | Path, *, revision: str | None = None, version: int | None = None
) -> CheckReport:
    """Check a kernel repository: a local folder, or a Hub repo id.

    An existing local path is always read as a folder. Anything else goes through
    :func:`kernel_plugins.sources.classify` (``org/name``, or a short name in the default
    organisation); a ``LOCAL_KERNELS`` override of that repo id is checked instead of the
    Hub repo, with a note.

    :raises SourceError: the path does not exist or is not a folder, or the Hub repo
        cannot be resolved (see :func:`kernel_plugins.hub.resolve`).
    """
    if isinstance(target, Path) or Path(str(target)).expanduser().exists():
        if revision is not None or version is not None:
            raise SourceError(
                f"{target} is a local folder; --revision / --version apply only to Hub repos"
            )
        return check_path(Path(target))
    from .sources import classify, parse_local_kernels

    t = classify(target)
    if t.kind == "path":
        assert t.path is not None
        return check_path(t.path)
    assert t.repo_id is not None
    override = parse_local_kernels().get(t.repo_id)
    if override is not None:
        report = check_path(override)
        return CheckReport(
            report.target, report.root, report.problems,
            (f"checked the LOCAL_KERNELS override of {t.repo_id}: {override}", *report.notes),
            report.variants,
        )
    return check_hub(t.repo_id, revision=revision, version=version)


def check_path(
    path: Path, *, link_root: Path | None = None, label: str | None = None
) -> CheckReport:
    """Check a local kernel repository folder (or a single variant folder).

    :param path: a folder with ``build.toml`` and/or ``build/``, or one variant folder
        (it holds ``metadata.json``).
    :param link_root: links may point anywhere inside this folder (default: ``path``).
    :param label: how to name the target in the report (default: the path).
    :raises SourceError: ``path`` does not exist or is not a folder.
    """
    p = Path(path).expanduser()
    if not p.exists():
        raise SourceError(f"{p} does not exist; pass a kernel repository folder or 'org/name'")
    if not p.is_dir():
        raise SourceError(f"{p} is not a folder; pass the kernel repository folder")
    root = p.resolve()
    single = (root / "metadata.json").is_file() and not (root / "build").is_dir()
    repo_root = root.parent.parent if single and root.parent.name == "build" else root
    build_path = repo_root / "build.toml"
    build = _check_build_toml(build_path, repo_root) if not single else None
    ctx = _Ctx(repo_root, (link_root or repo_root).resolve(), build[0] if build else None)
    if build:
        ctx.problems += build[1]
        ctx.notes += build[2]
    if single:
        variants = {root.name: root}
    else:
        variants = _variant_folders(ctx, repo_root, build is not None)
    for name, folder in variants.items():
        _check_variant(ctx, name, folder)
    return CheckReport(
        label or str(p), repo_root, tuple(ctx.problems), tuple(ctx.notes), tuple(variants)
    )


def _check_build_toml(
    path: Path, root: Path
) -> tuple[BuildToml | None, list[Problem], list[str]] | None:
    """(config, problems, notes) for ``path``, or None when there is no build.toml."""
    if not path.exists():
        return None
    rel = path.relative_to(root).as_posix()
    if not path.is_file():
        return None, [Problem(rel, "", "build.toml is not a file", "replace it with the file")], []
    try:
        data = loads_toml(path.read_bytes(), where=rel)
    except KernelPluginsError as e:
        return None, [Problem(rel, "", str(e), "fix the file so it is valid TOML")], []
    config, issues = validate_build_data(data, where=rel)
    problems = [Problem(rel, i.key, i.message, i.fix) for i in issues]
    return config, problems, list(config.notes) if config else []


def _variant_folders(ctx: _Ctx, root: Path, has_build_toml: bool) -> dict[str, Path]:
    build = root / "build"
    if not build.is_dir():
        if has_build_toml:
            ctx.notes.append("no build/ folder: nothing is built yet, only build.toml was checked")
        else:
            ctx.add(
                ".", "", "neither build.toml nor build/ was found",
                "point check at a kernel repository folder (it holds build.toml and/or build/)",
            )
        return {}
    if not ctx.inside(build):
        ctx.add(
            "build", "", f"build/ is a link that points outside the repository (to "
            f"{build.resolve()})", "replace the link with a real build/ folder",
        )
        return {}
    if not has_build_toml:
        ctx.notes.append("no build.toml: only build/ was checked")
    found: dict[str, Path] = {}
    for child in sorted(build.iterdir(), key=lambda c: c.name):
        if child.name.startswith(".") or child.name == "__pycache__":
            continue
        if not child.is_dir():
            ctx.notes.append(f"build/{child.name} is a file, not a variant folder; it is ignored")
            continue
        found[child.name] = child
    if not found:
        ctx.add("build", "", "build/ holds no variant folders",
                "build the kernel, or remove the empty build/ folder")
    return found


def _check_variant(ctx: _Ctx, name: str, folder: Path) -> None:
    """Every check of one ``build/<variant>`` folder."""
    if folder.is_symlink() or not ctx.inside(folder):
        ctx.add(
            folder, "", f"variant folder is a link that points outside the repository (to "
            f"{folder.resolve()})", "replace the link with a real folder under build/",
        )
        return
    variant: Variant | None = None
    try:
        variant = parse_variant(name)
    except VariantNameError as e:
        ctx.add(folder, "", str(e), _RENAME_FIX)
    _check_links(ctx, folder)
    meta = _read_metadata(ctx, folder)
    _check_module(ctx, folder, meta)
    if meta is None:
        return
    backend = canonical_backend(meta.backend.type)
    mfile = folder / "metadata.json"
    if variant is not None and variant.kind == "universal":
        ctx.notes.append(
            f"{ctx.rel(folder)}: torch-universal is deprecated; ship torch-<backend> noarch "
            "variants instead (they can declare dependencies per backend)"
        )
    elif meta.backend.type not in ctx.known:
        ctx.add(
            mfile, "backend.type", f"unknown backend {meta.backend.type!r}",
            f"use one of {', '.join(sorted(ctx.known))}, or install the plugin of that backend",
        )
    elif variant is not None:
        _check_agreement(ctx, folder, variant, meta, backend)
    _check_python_depends(ctx, mfile, meta, backend)
    if meta.digest is not None:
        _check_digest(ctx, folder, meta)
    _check_against_build(ctx, mfile, meta)


def _check_links(ctx: _Ctx, folder: Path) -> None:
    """Report links inside the variant that lead out of the repository (never followed)."""
    for dirpath, dirnames, filenames in os.walk(folder, followlinks=False):
        for entry in [*dirnames, *filenames]:
            p = Path(dirpath) / entry
            if p.is_symlink() and not ctx.inside(p):
                ctx.add(
                    p, "", f"link points outside the repository (to {p.resolve()}); loading "
                    "would read files from there", "replace the link with the file itself",
                )


def _read_metadata(ctx: _Ctx, folder: Path) -> KernelMetadata | None:
    """Validate ``metadata.json``; one problem per bad key."""
    path = folder / "metadata.json"
    rebuild = "rebuild the variant with the kernel builder, or fix metadata.json"
    if not path.is_file():
        ctx.add(path, "", "missing: every build variant needs a metadata.json", rebuild)
        return None
    size = path.stat().st_size
    if size > MAX_METADATA_BYTES:
        ctx.add(path, "", f"{size} bytes, larger than the {MAX_METADATA_BYTES} allowed", rebuild)
        return None
    try:
        data = json.loads(path.read_bytes().decode("utf-8"))
    except UnicodeDecodeError as e:
        ctx.add(path, "", f"not UTF-8 text ({e})", "save the file as UTF-8")
        return None
    except json.JSONDecodeError as e:
        ctx.add(path, "", f"malformed JSON at line {e.lineno} column {e.colno}: {e.msg}", rebuild)
        return None
    except RecursionError:
        ctx.add(path, "", "malformed JSON: values are nested too deeply", rebuild)
        return None
    if not isinstance(data, dict):
        ctx.add(path, "", f"expected a JSON object, got {type(data).__name__}", rebuild)
        return None
    try:
        return KernelMetadata.model_validate(data)
    except ValidationError as e:
        for err in e.errors():
            key = ".".join(str(p) for p in err.get("loc", ()))
            msg = err["msg"].removeprefix("Value error, ")
            if err.get("type") == "missing":
                msg = f"missing required key '{key}'"
            else:
                msg = f"{msg} (got {_short(err.get('input'))})"
            ctx.add(path, key, msg, f"rebuild the variant with the kernel builder, or set "
                    f"'{key}' in metadata.json")
    return None


def _short(value: object, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _check_module(ctx: _Ctx, folder: Path, meta: KernelMetadata | None) -> None:
    if (folder / "__init__.py").is_file():
        return
    if meta is not None:
        nested = folder / meta.python_name / "__init__.py"
        if nested.is_file():
            return
        expected = f"__init__.py or {meta.python_name}/__init__.py"
    else:
        if any((c / "__init__.py").is_file() for c in folder.iterdir() if c.is_dir()):
            return
        expected = "__init__.py or <python_name>/__init__.py"
    ctx.add(
        folder, "", f"no kernel module: expected {expected}",
        "add the kernel's Python package (flat: __init__.py in the variant folder; nested: "
        "<name with - replaced by _>/__init__.py)",
    )


def _check_agreement(
    ctx: _Ctx, folder: Path, variant: Variant, meta: KernelMetadata, backend: str
) -> None:
    """``backend.type`` must fit the variant name."""
    mfile = folder / "metadata.json"
    if variant.kind == "noarch":
        want = variant.noarch_backend or ""
        if canonical_backend(want) not in ctx.known:
            ctx.add(
                folder, "", f"noarch variant for unknown backend {want!r}",
                f"use torch-<backend> with one of {', '.join(sorted(ctx.known))}",
            )
        elif canonical_backend(want) != backend:
            ctx.add(
                mfile, "backend.type",
                f"variant {variant.name} is for backend {want!r} but backend.type is "
                f"{meta.backend.type!r}",
                f"set backend.type to {want!r}, or move the build to build/torch-{backend}",
            )
        return
    prefix = variant.token_prefix or ""
    owner = ctx.token_owner(prefix)
    if owner is None:
        ctx.add(
            folder, "", f"backend token {variant.token!r} belongs to no known backend",
            "use a token of an installed backend (cu128, rocm63, xpu20253, cpu, metal...) or "
            "install the plugin that owns it",
        )
    elif owner != backend:
        ctx.add(
            mfile, "backend.type",
            f"variant {variant.name} has token {variant.token!r} of backend {owner!r} but "
            f"backend.type is {meta.backend.type!r}",
            f"set backend.type to {owner!r}, or rename the folder with a {backend} token",
        )


def _check_python_depends(ctx: _Ctx, mfile: Path, meta: KernelMetadata, backend: str) -> None:
    from .importer import GENERIC_PYTHON_DEPENDS
    from .known_plugins import INSTALL_HINTS

    rec = ctx.manager.backends().get(backend)
    known = {**GENERIC_PYTHON_DEPENDS, **(rec.spec.python_depends if rec else {})}
    for i, name in enumerate(meta.python_depends):
        if name in known:
            continue
        if rec is None and backend in ctx.known:
            hint = INSTALL_HINTS.get(backend)
            ctx.notes.append(
                f"{ctx.rel(mfile)}: python-depends {name!r} cannot be checked: backend "
                f"{backend!r} is not installed" + (f" (pip install {hint})" if hint else "")
            )
            continue
        ctx.add(
            mfile, f"python-depends[{i}]",
            f"{name!r} is not a known dependency for backend {backend!r}",
            f"use one of {', '.join(sorted(known))}, or ask for {name!r} to be added to the "
            "known dependencies",
        )


def _check_digest(ctx: _Ctx, folder: Path, meta: KernelMetadata) -> None:
    from .integrity import check_digest

    fixes = {
        "missing": "restore the file or rebuild the variant",
        "changed": "rebuild the variant (files were modified after the build) or restore them",
        "unexpected": "remove the file or rebuild the variant so the digest lists it",
        "malformed": "rebuild the variant so the digest is written again",
    }
    for m in check_digest(folder, meta.digest):
        file = folder / "metadata.json" if m.kind == "malformed" else folder / m.path
        ctx.add(file, "digest", m.describe(), fixes[m.kind])


def _check_against_build(ctx: _Ctx, mfile: Path, meta: KernelMetadata) -> None:
    if ctx.build is None:
        return
    general = ctx.build.config.general
    if meta.name != general.name:
        ctx.add(
            mfile, "name", f"name {meta.name!r} differs from build.toml's {general.name!r}",
            "rebuild the variant from this build.toml, or remove the stale build",
        )
    if general.version is not None and meta.version != general.version:
        ctx.add(
            mfile, "version",
            f"version {meta.version} differs from build.toml's {general.version}",
            "rebuild the variant from this build.toml, or remove the stale build",
        )


def check_hub(
    repo_id: str, *, revision: str | None = None, version: int | None = None
) -> CheckReport:
    """Check a kernel repository on the Hub (every variant is downloaded into the cache).

    :raises SourceError: bad repo id / revision / version, or the repo cannot be fetched.
    """
    from . import hub

    ref = hub.resolve(repo_id, revision=revision, version=version)
    names = hub.list_variant_names(ref)
    problems: list[Problem] = []
    folders: dict[str, Path] = {}
    for name in names:
        try:
            folders[name] = hub.download_variant(ref, name, progress=False)
        except SourceError as e:
            if isinstance(e, hub.HubError):
                raise
            problems.append(Problem(f"build/{name}", "", str(e), _RENAME_FIX))
    toml_path = _fetch_build_toml(ref)
    snapshot = (
        next(iter(folders.values())).parent.parent if folders
        else (toml_path.parent if toml_path else None)
    )
    label = f"{ref.repo_id}@{ref.sha}"
    if snapshot is None:
        raise SourceError(f"{label} has neither build.toml nor a usable build/ variant folder")
    report = check_path(snapshot, link_root=snapshot.parent.parent, label=label)
    return CheckReport(
        label, report.root, tuple(problems) + report.problems, report.notes, report.variants
    )


def _fetch_build_toml(ref: Any) -> Path | None:
    """Download ``build.toml`` of ``ref`` when the repository has one."""
    from huggingface_hub import hf_hub_download

    from .errors import HubError

    try:
        return Path(
            hf_hub_download(
                ref.repo_id, "build.toml", repo_type=ref.repo_type, revision=ref.sha,
                endpoint=ref.endpoint,
            )
        )
    except Exception as e:  # noqa: BLE001 - "not there" is normal; the rest is mapped
        names = {c.__name__ for c in type(e).__mro__}
        if names & {"EntryNotFoundError", "RemoteEntryNotFoundError", "LocalEntryNotFoundError",
                    "OfflineModeIsEnabled"}:
            return None
        raise HubError(
            f"could not fetch build.toml of {ref.repo_id} at {ref.sha}: {type(e).__name__}: {e}"
        ) from e

