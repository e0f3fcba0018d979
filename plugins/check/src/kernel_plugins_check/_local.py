"""Check a kernel repository folder on disk: its ``build.toml`` and its ``build/`` folder."""

from __future__ import annotations

from pathlib import Path

from kernel_plugins.errors import KernelPluginsError, SourceError

from ._report import CheckReport, Problem, _Ctx
from ._variant import _check_variant
from .buildconfig import BuildToml, loads_toml, validate_build_data


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
