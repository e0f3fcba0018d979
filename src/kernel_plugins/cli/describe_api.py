"""``kernel-plugins describe-api TARGET``: a kernel's functions and layers, without importing it."""

from __future__ import annotations

import argparse
import ast
from pathlib import Path
from typing import Any

from ._output import clean, print_json

NAME = "describe-api"
HELP = ("list a kernel's public functions and layers from its symbols.json (else from a static "
        "scan of its source), never importing it; of a Hub variant only metadata.json, "
        "symbols.json (and, without it, the scanned sources) are fetched")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options: TARGET, revision, ``--device``, ``--json``."""
    from .main import add_target_options

    add_target_options(parser, "TARGET", "Hub repository org/name, short name or local kernel folder")


def _symbols(raw: bytes, where: str) -> dict[str, Any]:
    """A ``symbols.json`` (schema 1: named functions and layers, layer attributes true,
    false or null), as kernels reads it. :raises MetadataError: anything else."""
    from ..errors import MetadataError
    from ..jsonfile import JSONFileError, parse_json

    try:
        data: Any = parse_json(raw, where=where, max_bytes=4 << 20)
    except JSONFileError as e:
        raise MetadataError(f"{e}; rebuild the kernel with a recent kernel-builder") from e
    groups: list[Any] = [data.get(g) for g in ("functions", "layers")] if isinstance(data, dict) else []
    problem = ("schema_version is not 1" if not isinstance(data, dict) or data.get("schema_version") != 1 else
               "functions and layers must be lists of objects with a string name"
               if any(not isinstance(g, list) or not all(isinstance(s, dict) and isinstance(s.get("name"), str)
                                                         for s in g) for g in groups) else
               "layer attributes must be true, false or null"
               if any(not isinstance(a := layer.get("attributes", {}), dict)
                      or any(v is not None and not isinstance(v, bool) for v in a.values())
                      for layer in groups[1]) else None)
    if problem:
        raise MetadataError(f"{where}: unsupported symbols.json: {problem}; rebuild the kernel with a "
                            "recent kernel-builder")
    return data


def run(args: argparse.Namespace) -> int:
    """Choose the variant for this device (else the first), read its API, print it."""
    from .. import hub
    from ..detection import get_device, system_info
    from ..errors import SourceError
    from ..fetching import offer
    from ..integrity import read_small_file
    from ..metadata import parse_metadata_bytes
    from ..resolving import resolve_variants
    from ..sources import find
    from ..verification import peek_metadata
    from .info_cmd import _names

    off = offer(find(args.target, revision=args.revision, version=args.version), trust_remote_code=True)
    variant = resolve_variants(list(off.variants), get_device(args.device), system_info()).best or sorted(off.variants)[0]
    meta = parse_metadata_bytes(peek_metadata(off, variant), where=f"{off.where} {variant}/metadata.json")
    ref, folder = off.ref, off.folders.get(variant)
    roots = (hub.blobs_folder(ref),) if ref else (folder, *hub.snapshot_blobs(folder)) if folder else ()

    def local(rel: str) -> Path | None:  # one file of the variant, fetched alone from the Hub
        if ref is None:
            return path if folder and (path := folder / rel).is_file() else None
        try:
            return hub.download_file(ref, f"build/{variant}/{rel}")
        except SourceError:
            return None

    if found := local("symbols.json"):
        where = f"{off.where} {variant}/symbols.json"
        doc = {**_symbols(read_small_file(found, max_bytes=4 << 20, roots=(found.parent, *roots)), where),
               "read_from": "symbols.json"}
    else:  # the names ``info`` finds, read from the source (never run)
        base = f"{meta.python_name}/" if local(f"{meta.python_name}/__init__.py") else ""
        init, layers = local(f"{base}__init__.py"), local(f"{base}layers.py") or local(f"{base}layers/__init__.py")
        scan = [(_names(p, (p.parent, *roots), kind) if p else []) for p, kind in (
            (init, (ast.FunctionDef, ast.AsyncFunctionDef)), (layers, ast.ClassDef))]
        body = ast.parse(read_small_file(layers, max_bytes=4 << 20, roots=(layers.parent, *roots))).body if layers and scan[1] else []
        flags = {c.name: {t.id: s.value.value for s in c.body if isinstance(s, ast.Assign) and isinstance(s.value, ast.Constant)
                          for t in s.targets if isinstance(t, ast.Name) and isinstance(s.value.value, bool)}
                 for c in body if isinstance(c, ast.ClassDef)}
        doc = {"schema_version": 1, "functions": [{"name": n} for n in scan[0]],
               "layers": [{"name": n, "attributes": {k: flags.get(n, {}).get(k) for k in ("has_backward", "can_torch_compile")}}
                          for n in scan[1]], "read_from": "static scan (the variant has no symbols.json)"}
    doc.update(source=off.where, variant=variant)
    if args.json:
        print_json(doc)
        return 0
    print(clean(f"source: {off.where}\nvariant: {variant}\nread from: {doc['read_from']}"))
    print(clean("functions: " + (", ".join(f["name"] for f in doc["functions"]) or "-")))
    print("layers:" + ("" if doc["layers"] else " -"))
    for layer in doc["layers"]:
        attrs = layer.get("attributes") or {}
        print(clean(f"  {layer['name']}" + "".join(f"  {k}={'unknown' if attrs.get(k) is None else attrs[k]}"
                                                   for k in ("has_backward", "can_torch_compile"))))
    return 0
