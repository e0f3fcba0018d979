"""Where the variants of a kernel live: a local folder, a LOCAL_KERNELS override,
a plugin-shipped repository, a bundled reference kernel, or a Hub repo.

This module maps a user's name to a :class:`Target` and lists a local folder's
variants. The Hub side lives in :mod:`kernel_plugins.hub`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from .errors import SourceError
from .variants import validate_variant_name

__all__ = [
    "DEFAULT_ORG",
    "Target",
    "LocalVariants",
    "classify",
    "default_org",
    "parse_local_kernels",
    "local_variants",
]

DEFAULT_ORG = "kernels-community"


def default_org() -> str:
    """``KERNEL_PLUGINS_DEFAULT_ORG`` or ``kernels-community``."""
    return os.environ.get("KERNEL_PLUGINS_DEFAULT_ORG", "").strip() or DEFAULT_ORG


@dataclass(frozen=True)
class Target:
    """A classified request: a local path or a Hub repo id.

    Attributes: kind (``path`` or ``repo``), repo_id (for ``repo``), path (for ``path``),
    short_name (the kernel name, e.g. ``activation``, used for reference fallbacks).
    """

    kind: str
    repo_id: str | None
    path: Path | None
    short_name: str


def classify(name: object) -> Target:
    """Map what a user passed to ``load`` to a :class:`Target`.

    A :class:`~pathlib.Path`, or a string starting with ``/``, ``.``, ``~`` or holding
    more than one ``/`` (or a backslash), is a local path. ``org/name`` is a Hub repo id;
    a bare name (``"activation"``) means ``<default org>/<name>``.
    """
    if isinstance(name, Path):
        return _path_target(name)
    if not isinstance(name, str):
        raise SourceError(f"kernel name must be a string or a Path, got {type(name).__name__}")
    text = name.strip()
    if not text:
        raise SourceError("kernel name is empty: pass 'org/name', a short name or a local path")
    if text.startswith(("/", ".", "~")) or "\\" in text or text.count("/") > 1:
        return _path_target(Path(text))
    from .hub import validate_repo_id

    repo_id = text if "/" in text else f"{default_org()}/{text}"
    repo_id = validate_repo_id(repo_id)
    return Target("repo", repo_id, None, repo_id.split("/", 1)[1])


def _path_target(path: Path) -> Target:
    p = path.expanduser()
    if not p.exists():
        raise SourceError(f"local kernel path {p} does not exist")
    if not p.is_dir():
        raise SourceError(f"local kernel path {p} is not a folder")
    return Target("path", None, p.resolve(), p.resolve().name)


def parse_local_kernels(value: str | None = None) -> dict[str, Path]:
    """Parse ``LOCAL_KERNELS``: ``org/name=/path`` entries separated by ``os.pathsep``.

    Raises :class:`SourceError` naming a malformed entry.
    """
    from .hub import validate_repo_id

    raw = os.environ.get("LOCAL_KERNELS", "") if value is None else value
    out: dict[str, Path] = {}
    for entry in raw.split(os.pathsep):
        entry = entry.strip()
        if not entry:
            continue
        repo, sep, path = entry.partition("=")
        if not sep or not repo.strip() or not path.strip():
            raise SourceError(
                f"LOCAL_KERNELS entry {entry!r} is malformed: expected 'org/name=/path' (entries "
                f"separated by {os.pathsep!r})"
            )
        try:
            repo_id = validate_repo_id(repo.strip())
        except SourceError as e:
            raise SourceError(f"LOCAL_KERNELS entry {entry!r}: {e}") from None
        out[repo_id] = Path(path.strip()).expanduser()
    return out


@dataclass(frozen=True)
class LocalVariants:
    """The variants a local folder offers: name -> variant folder."""

    root: Path
    variants: dict[str, Path]
    layout: str  # "repo" (has build/), "variants" (folder of variants), "variant" (one)


def local_variants(root: Path) -> LocalVariants:
    """List the variant folders under a local kernel path.

    Accepts a repository folder with ``build/``, a folder of variant folders, or one
    variant folder (it holds ``metadata.json``). Symlinks that lead outside ``root`` are
    refused.
    """
    root = root.resolve()
    if (root / "metadata.json").is_file():
        return LocalVariants(root, {root.name: root}, "variant")
    base, layout = (root / "build", "repo") if (root / "build").is_dir() else (root, "variants")
    variants: dict[str, Path] = {}
    for child in sorted(base.iterdir()) if base.is_dir() else []:
        if not child.is_dir() or child.name.startswith((".", "__")):
            continue
        resolved = child.resolve()
        if root not in resolved.parents and resolved != root:
            raise SourceError(
                f"variant folder {child} is a link that points outside {root} (to {resolved}); "
                "refusing to load code from there"
            )
        if layout == "variants" and not (child / "metadata.json").is_file():
            continue
        variants[child.name] = child
    if not variants:
        raise SourceError(
            f"{root} holds no build variants: expected build/<variant>/metadata.json, "
            "<variant>/metadata.json or a single variant folder with metadata.json"
        )
    return LocalVariants(root, variants, layout)


def variant_folder(lv: LocalVariants, variant: str) -> Path:
    """The folder of ``variant`` (validated name)."""
    validate_variant_name(variant)
    return lv.variants[variant]
