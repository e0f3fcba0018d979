"""The shape of the source tree: no import cycles, no private names borrowed across packages."""

from __future__ import annotations

import ast
from pathlib import Path

import kernel_plugins

SRC = Path(kernel_plugins.__file__).parent
PACKAGE = "kernel_plugins"


def modules() -> dict[str, Path]:
    """Every module of the core (the reference kernels' build folders are kernels, not core)."""
    out = {}
    for path in sorted(SRC.rglob("*.py")):
        rel = path.relative_to(SRC)
        if "build" in rel.parts and "reference" in rel.parts:
            continue
        parts = [PACKAGE, *rel.with_suffix("").parts]
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


def _is_package(name: str, mods: dict[str, Path]) -> bool:
    return mods[name].name == "__init__.py"


def imports(name: str, path: Path, mods: dict[str, Path], *, top_level_only: bool):
    """(imported module, imported names) of ``name``; type-checking-only imports skipped."""
    tree = ast.parse(path.read_text())
    package = name if _is_package(name, mods) else name.rpartition(".")[0]
    nodes = tree.body if top_level_only else list(ast.walk(tree))
    for node in nodes:
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.dump(node.test):
            continue
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                target = ".".join([*base, *([node.module] if node.module else [])])
            else:
                target = node.module or ""
            if not target.startswith(PACKAGE):
                continue
            names = [a.name for a in node.names]
            for n in names:  # "from . import hub" imports a module
                if f"{target}.{n}" in mods:
                    yield f"{target}.{n}", []
            if target in mods:
                yield target, [n for n in names if f"{target}.{n}" not in mods]
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith(PACKAGE) and alias.name in mods:
                    yield alias.name, []


def test_no_import_cycles_among_module_level_imports():
    mods = modules()
    graph = {
        name: {t for t, _ in imports(name, path, mods, top_level_only=True) if t != name}
        for name, path in mods.items()
    }
    # a package's __init__ importing its own submodules is how packages work
    for name in graph:
        graph[name] = {t for t in graph[name] if not (_is_package(name, mods) and t.startswith(name + "."))}
    state: dict[str, int] = {}
    cycles: list[list[str]] = []

    def visit(node: str, stack: list[str]) -> None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                cycles.append(stack[stack.index(nxt):] + [nxt])
            elif nxt not in state:
                visit(nxt, stack)
        stack.pop()
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node, [])
    assert cycles == []


def test_no_private_names_imported_from_another_package():
    """A ``_name`` is imported only inside its own package; a ``_module`` only by its package
    and the packages below it (which it serves)."""
    mods = modules()
    offenders = []
    for name, path in mods.items():
        own = name if _is_package(name, mods) else name.rpartition(".")[0]
        for target, names in imports(name, path, mods, top_level_only=False):
            target_pkg = target if _is_package(target, mods) else target.rpartition(".")[0]
            private_names = [n for n in names if n.startswith("_") and not n.startswith("__")]
            if private_names and target_pkg != own:
                offenders.append((name, target, private_names))
            leaf = target.rpartition(".")[2]
            if leaf.startswith("_") and not (own == target_pkg or own.startswith(target_pkg + ".")):
                offenders.append((name, target, names))
    assert offenders == []


def test_the_pipeline_modules_exist_and_the_old_one_is_gone():
    mods = modules()
    for step in ("sources", "fetching", "resolving", "verification", "importer", "loader",
                 "fallback", "integrity", "integrity.snapshot", "integrity.verify"):
        assert f"{PACKAGE}.{step}" in mods
    assert f"{PACKAGE}.hubload" not in mods
