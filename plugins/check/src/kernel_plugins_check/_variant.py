"""Every check of one ``build/<variant>/`` folder.

The folder name parses as a variant; neither the folder nor anything in it is a link out
of the repository; ``metadata.json`` validates; ``backend.type`` fits the variant name;
the kernel module exists; its layer classes are ones HF ``kernels`` accepts
(:mod:`._layers`); ``python-depends`` names are known for the backend; the
``digest``, when present, matches the files; ``name`` and ``version`` agree with
build.toml.
"""

from __future__ import annotations

import json
from pathlib import Path

from kernel_plugins.errors import MetadataError, VariantNameError
from kernel_plugins.metadata import (
    MAX_METADATA_BYTES,
    KernelMetadata,
    metadata_problems,
    parse_metadata,
)
from kernel_plugins.variants import Variant, parse_variant

from ._layers import check_layers
from ._report import _RENAME_FIX, _Ctx
from .buildconfig import canonical_backend
from .buildconfig._rules import python_depends_known


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
    check_layers(ctx, folder if (folder / "__init__.py").is_file() else folder / meta.python_name)
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
    """Report what loading refuses in the folder, and shipped bytecode, with the loader's
    own walker: links leading out of the variant (in huggingface_hub's cache, links into the
    repository's ``blobs/`` are how files are stored), links to folders, special files."""
    from kernel_plugins.errors import IntegrityError
    from kernel_plugins.integrity import walk_variant

    roots = [ctx.link_root / "blobs"] if ctx.link_root != ctx.root else []
    refused: list[IntegrityError] = []
    try:
        tree = walk_variant(folder, link_roots=roots, problems=refused)
    except IntegrityError as exc:  # the folder itself cannot be walked
        refused.append(exc)
        tree = None
    for problem in refused:
        where, _, message = str(problem).partition(": ")
        ctx.add(Path(where), "", message, "replace the link with the file or folder itself")
    shipped = sorted({b.split("__pycache__")[0] + "__pycache__" if "__pycache__" in b else b
                      for b in (tree.bytecode if tree is not None else ())})
    for rel in shipped:
        ctx.add(
            folder / rel, "", "the variant ships Python bytecode; kernel-plugins never runs it, "
            "but other loaders may run it instead of the published source",
            "remove __pycache__ folders and *.pyc files from the build",
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
        return parse_metadata(data, where=str(path))
    except MetadataError:
        for problem in metadata_problems(data):
            key = problem.key
            msg = problem.message.removeprefix("Value error, ")
            if problem.missing:
                msg = f"missing required key '{key}'"
            else:
                msg = f"{msg} (got {_short(problem.value)})"
            ctx.add(path, key, msg, f"rebuild the variant with the kernel builder, or set "
                    f"'{key}' in metadata.json")
    return None


def _short(value: object, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _check_module(ctx: _Ctx, folder: Path, meta: KernelMetadata | None) -> None:
    if meta is not None and meta.build_layout == "zip":
        _check_archive(ctx, folder, meta)
        return
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


def _check_archive(ctx: _Ctx, folder: Path, meta: KernelMetadata) -> None:
    """The ``zip`` layout: ``<id>.zip`` holds the package (``__init__.py`` at its root), and no
    member is one the loader refuses."""
    from kernel_plugins.errors import IntegrityError
    from kernel_plugins.integrity import read_variant
    from kernel_plugins.integrity.archive import archive_view, read_archive

    name = f"{meta.id}.zip"
    try:
        snap = read_variant(folder, preread=read_archive(folder, meta, ()))
        members = archive_view(snap, name).files
    except IntegrityError as e:
        ctx.add(folder / name, "", str(e), "rebuild the variant with the kernel builder")
        return
    if "__init__.py" not in members or "__init__.py" in snap.files:
        ctx.add(folder / name, "", f"no kernel module: expected __init__.py at the root of {name} "
                "(metadata.json says \"build-layout\": \"zip\")", "rebuild the variant with the kernel builder")


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
    known, missing = python_depends_known(ctx.manager.backends(), backend)
    for i, name in enumerate(meta.python_depends):
        if name in known:
            continue
        if missing and backend in ctx.known:
            ctx.notes.append(f"{ctx.rel(mfile)}: python-depends {name!r} cannot be checked: {missing}")
            continue
        ctx.add(
            mfile, f"python-depends[{i}]",
            f"{name!r} is not a known dependency for backend {backend!r}",
            f"use one of {', '.join(sorted(known))}, or ask for {name!r} to be added to the "
            "known dependencies",
        )


def _check_digest(ctx: _Ctx, folder: Path, meta: KernelMetadata) -> None:
    from kernel_plugins.errors import IntegrityError
    from kernel_plugins.integrity import check_digest

    fixes = {
        "missing": "restore the file or rebuild the variant",
        "changed": "rebuild the variant (files were modified after the build) or restore them",
        "unexpected": "remove the file or rebuild the variant so the digest lists it",
        "malformed": "rebuild the variant so the digest is written again",
    }
    roots = [ctx.link_root / "blobs"] if ctx.link_root != ctx.root else []
    try:
        mismatches = check_digest(folder, meta.digest, link_roots=roots)
    except IntegrityError:
        return  # a refused link or entry, reported by _check_links
    for m in mismatches:
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
