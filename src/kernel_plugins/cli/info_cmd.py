"""``kernel-plugins info TARGET``: describe a kernel without importing it."""

from __future__ import annotations

import argparse
import ast
from pathlib import Path
from typing import Any

from ._output import clean, print_json

NAME = "info"
HELP = ("describe a kernel (Hub repository or local folder): name, version, license, variants and "
        "the one for this device, functions, layers, python-depends, kernel-depends, kernels-minver, "
        "digest, signature")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options: TARGET, revision, ``--device``, ``--json``."""
    from .main import add_target_options

    add_target_options(parser, "TARGET", "Hub repository org/name, short name or local kernel folder")
    parser.add_argument("--dep-tree", action="store_true", help="the kernel-depends tree, each kernel's own "
                        "too, for this device (a nested object with --json); only metadata.json is fetched")


_Definition = ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef


def _names(path: Path, roots: tuple[Path, ...], kind: type[_Definition] | tuple[type[_Definition], ...]) -> list[str]:
    """A module's ``__all__`` read from its source (never run), less submodules, else its public ``kind`` definitions."""
    from ..integrity import read_small_file

    try:
        tree = ast.parse(read_small_file(path, max_bytes=4 << 20, roots=roots)) if path.is_file() else ast.Module([], [])
    except (SyntaxError, ValueError):
        return []
    # not functions: submodules (``from . import layers``) and the ops namespace of ``_ops``
    modules = {a.asname or a.name for n in tree.body if isinstance(n, ast.ImportFrom) and n.level
               for a in n.names if n.module is None or (n.module, a.name) == ("_ops", "ops")}
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "__all__" for t in node.targets):
            try:
                return sorted(str(n) for n in ast.literal_eval(node.value) if n not in modules)
            except ValueError:
                break
    return [n.name for n in tree.body if isinstance(n, kind) and not n.name.startswith("_")]


def dep_tree(deps: Any, info: Any, done: dict[Any, Any], path: tuple[object, ...] = ()) -> dict[str, Any]:
    """``{"org/name (version N)": its own tree}`` for the variant of each that fits ``info``
    (else its first): only ``metadata.json`` is read. :raises KernelDependencyError: a cycle."""
    from ..detection import system_info
    from ..fetching import offer
    from ..metadata import parse_metadata_bytes, walk_depends
    from ..resolving import resolve_variants
    from ..sources import HUB_PREFIX, find
    from ..verification import peek_metadata

    def step(dep: Any, below: tuple[object, ...]) -> dict[str, Any]:
        off = offer(find(HUB_PREFIX + dep.repo_id, device=info, revision=dep.revision, version=dep.version),
                    trust_remote_code=True)
        best = resolve_variants(list(off.variants), info, system_info()).best or sorted(off.variants)[0]
        raw = peek_metadata(off, best)
        return dep_tree(parse_metadata_bytes(raw, where=f"{off.where} {best}").kernel_depends, info, done, below)

    return {str(d): walk_depends(d, step, done, path) for d in deps}


def tree_lines(tree: dict[str, Any], prefix: str = "") -> list[str]:
    """A nested dict as ``|-- name`` lines, as kernels prints a dependency tree."""
    out, items = [], list(tree.items())
    for i, (name, below) in enumerate(items):
        last = i == len(items) - 1
        out += [f"{prefix}{'`-- ' if last else '|-- '}{name}", *tree_lines(below, prefix + ("    " if last else "|   "))]
    return out


def run(args: argparse.Namespace) -> int:
    """Fetch the variant for this device (else the first), read it and print the summary."""
    from ..detection import get_device, system_info
    from ..fetching import fetch, offer
    from ..metadata import KERNELS_VERSION, parse_metadata_bytes
    from ..resolving import device_arch, resolve_variants
    from ..signatures import check_bundle, files_problem, org_of, read_bundle, read_metadata
    from ..sources import find

    off = offer(find(args.target, revision=args.revision, version=args.version), trust_remote_code=True)
    info = get_device(args.device)
    best = resolve_variants(list(off.variants), info, system_info()).best
    fetched = fetch(off, best or sorted(off.variants)[0], progress=False)  # read, never imported
    raw, roots = read_metadata(fetched), (fetched.path, *fetched.link_roots)
    sig = check_bundle(raw, read_bundle(fetched), variant=fetched.variant, org=org_of(fetched))
    meta = parse_metadata_bytes(raw, where=f"{fetched.path}/metadata.json")  # after the signature
    pkg = fetched.path / meta.python_name
    pkg = pkg if (pkg / "__init__.py").is_file() else fetched.path
    doc: dict[str, Any] = {
        "name": meta.name, "version": meta.version, "license": meta.license, "source": off.where,
        "variants": sorted(off.variants), "device": info.device_type, "variant_for_device": best,
        "archs": list(meta.backend.archs), "device_arch": device_arch(info) or "not reported",
        "described_variant": fetched.variant,
        "functions": _names(pkg / "__init__.py", roots, (ast.FunctionDef, ast.AsyncFunctionDef)),
        "layers": _names(pkg / "layers.py", roots, ast.ClassDef) or _names(pkg / "layers/__init__.py", roots, ast.ClassDef),
        "python_depends": list(meta.python_depends), "kernels_minver": meta.kernels_minver,
        "kernel_depends": [str(d) for d in meta.kernel_depends],
        "digest": files_problem(fetched, raw) or "files match the digest",
        "signature": {"state": sig.state, "detail": sig.detail, "signer": sig.signer},
    }
    if args.dep_tree:
        doc["dependency_tree"] = dep_tree(meta.kernel_depends, info, {})
    if args.json:
        print_json(doc)
        return 0
    doc["kernel"] = f"{meta.name} version {meta.version}, license {meta.license}"
    doc[f"for {info.device_type}"] = best or f"none fits; described: {fetched.variant}"
    doc["signature"] = f"{sig.state}: {sig.detail}"
    doc["kernels_minver"] = f"{meta.kernels_minver or '-'} (kernel-plugins reads kernels {KERNELS_VERSION})"
    for key in ("kernel", "source", "variants", f"for {info.device_type}", "archs", "device_arch", "functions",
                "layers", "python_depends", "kernel_depends", "kernels_minver", "digest", "signature"):
        value = doc[key]
        print(clean(f"{key.replace('_', '-')}: {', '.join(value) or '-' if isinstance(value, list) else value}"))
    for line in ["dependency-tree:", meta.name, *tree_lines(doc["dependency_tree"])] if args.dep_tree else []:
        print(clean(line))
    return 0
