"""The shape of the source tree: no import cycles counting every import (in the core, in
each plugin and tool distribution under ``plugins/``, and across them), the layers of the
core, and no private names borrowed across packages.

Every import statement counts: module-level, inside functions, and under
``TYPE_CHECKING``, and so does ``importlib.import_module("<a module>")``. A cycle through a function-level import still means two modules that
cannot be understood apart.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

import kernel_plugins

SRC = Path(kernel_plugins.__file__).parent
PACKAGE = "kernel_plugins"
#: Every distribution's package folder: the core and each one under plugins/.
PACKAGES = {PACKAGE: SRC, **{p.name: p for p in sorted(
    (Path(__file__).resolve().parents[2] / "plugins").glob("*/src/*")) if (p / "__init__.py").is_file()}}

#: The layers of the core, low to high. A module may import modules of its own layer or
#: of lower layers; an entry names a module and everything below it.
LAYERS: list[tuple[str, ...]] = [
    # basics: no knowledge of kernels or plugins
    ("_record", "errors", "_suggest", "_warn", "jsonfile", "emulation_registry"),
    # values and checks
    ("device", "variants", "metadata", "contracts", "known_plugins", "distributed",
     "provenance", "integrity", "registry"),
    # the plugin contract and the plugin manager
    ("hookspecs", "_plugin_records", "_hook_results", "plugins", "detection", "backends",
     "plugin_kit", "torch_support"),
    # the Hub, lock files, the bundled reference kernels
    ("hub", "lock", "reference"),
    # the load pipeline (trust asks the Hub about publishers)
    ("trust", "sources", "fetching", "resolving", "verification", "importer", "dependencies", "fallback",
     "loader", "signatures"),
    # what is built on loading
    ("layers", "compat", "integrations"),
    # the command line
    ("cli",),
]
#: Imports allowed to run back up the layers: (importer, imported). At most one.
UPWARD_ALLOWED: set[tuple[str, str]] = set()


def modules(package: str = PACKAGE) -> dict[str, Path]:
    """Every module of a distribution's package (default: the core; the reference kernels'
    build folders are kernels, not core)."""
    out = {}
    src = PACKAGES[package]
    for path in sorted(src.rglob("*.py")):
        rel = path.relative_to(src)
        if "reference" in rel.parts and ("build" in rel.parts or "torch-ext" in rel.parts):
            continue
        parts = [package, *rel.with_suffix("").parts]
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


def _is_package(name: str, mods: dict[str, Path]) -> bool:
    return mods[name].name == "__init__.py"


def imports(name: str, path: Path, mods: dict[str, Path]) -> Iterator[tuple[str, list[str]]]:
    """(imported module, imported names) for every import statement of ``name``, wherever
    it stands (module level, functions, ``TYPE_CHECKING`` blocks)."""
    tree = ast.parse(path.read_text())
    package = name if _is_package(name, mods) else name.rpartition(".")[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                target = ".".join([*base, *([node.module] if node.module else [])])
            else:
                target = node.module or ""
            if target.partition(".")[0] not in PACKAGES:
                continue
            names = [a.name for a in node.names]
            for n in names:  # "from . import hub" imports a module
                if f"{target}.{n}" in mods:
                    yield f"{target}.{n}", []
            rest = [n for n in names if f"{target}.{n}" not in mods]
            if target in mods and rest:
                yield target, rest
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name in mods:
                    yield alias.name, []
        elif isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", None)) in (
                "import_module", "__import__") and node.args and isinstance(node.args[0], ast.Constant) \
                and node.args[0].value in mods:  # an import by name is an import
            yield node.args[0].value, []


def import_graph(mods: dict[str, Path]) -> dict[str, set[str]]:
    """Module -> the modules of ``mods`` it imports (a package importing its own submodules,
    and the top-level packages, left out: the core's is lazy)."""
    graph = {}
    for name, path in mods.items():
        targets = {t for t, _ in imports(name, path, mods)}
        graph[name] = {
            t for t in targets
            if t != name and t not in PACKAGES and not (_is_package(name, mods) and t.startswith(name + "."))
        }
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Every cycle found by a depth-first walk (each as a closed path)."""
    state: dict[str, int] = {}
    found: list[list[str]] = []

    def visit(node: str, stack: list[str]) -> None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                found.append(stack[stack.index(nxt):] + [nxt])
            elif nxt not in state:
                visit(nxt, stack)
        stack.pop()
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node, [])
    return found


def layer_of(name: str) -> int | None:
    """The index in :data:`LAYERS` of the entry that covers module ``name``."""
    rel = name[len(PACKAGE) + 1:]
    best: tuple[int, int] | None = None  # (length of the matching entry, layer)
    for index, entries in enumerate(LAYERS):
        for entry in entries:
            if (rel == entry or rel.startswith(entry + ".")) and (best is None or len(entry) > best[0]):
                best = (len(entry), index)
    return None if best is None else best[1]


def test_the_graph_sees_function_level_and_type_checking_imports(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from kernel_plugins.b import X\n"
    )
    (tmp_path / "b.py").write_text("def f():\n    from .a import Y\n")
    mods = {f"{PACKAGE}.a": tmp_path / "a.py", f"{PACKAGE}.b": tmp_path / "b.py"}
    graph = import_graph(mods)
    assert graph == {f"{PACKAGE}.a": {f"{PACKAGE}.b"}, f"{PACKAGE}.b": {f"{PACKAGE}.a"}}
    assert cycles(graph) == [[f"{PACKAGE}.a", f"{PACKAGE}.b", f"{PACKAGE}.a"]]


def test_the_graph_sees_imports_by_name(tmp_path: Path) -> None:
    """A module naming another to ``importlib.import_module`` imports it (as the ``kernels``
    module offered to kernel code once imported the compat module from below it)."""
    (tmp_path / "a.py").write_text("import importlib\nAPI = lambda: importlib.import_module('kernel_plugins.b')\n")
    (tmp_path / "b.py").write_text("from . import a\n")
    mods = {f"{PACKAGE}.a": tmp_path / "a.py", f"{PACKAGE}.b": tmp_path / "b.py"}
    assert cycles(import_graph(mods)) == [[f"{PACKAGE}.a", f"{PACKAGE}.b", f"{PACKAGE}.a"]]


def test_the_kernels_module_offered_to_kernel_code_gets_the_rest_of_the_api_from_above(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``import kernels`` in a kernel's code without HF kernels: get_kernel_dep from the pipeline,
    the rest from the compat module, which offers itself (nothing below it names it)."""
    from kernel_plugins import dependencies
    from kernel_plugins.compat import kernels as compat
    from kernel_plugins.errors import KernelDependencyError

    assert compat in dependencies.KERNELS_API
    offered = dependencies._KERNELS
    assert offered.get_kernel is compat.get_kernel and offered.get_kernel_dep is dependencies.get_kernel_dep
    monkeypatch.setattr(dependencies, "KERNELS_API", [])  # as before the compat module is imported
    assert offered.get_kernel_dep is dependencies.get_kernel_dep and not hasattr(offered, "__path__")
    with pytest.raises(KernelDependencyError, match=r"kernels\.get_kernel: .* once kernel_plugins\.compat"
                                                    r"\.kernels is imported: import it"):
        offered.get_kernel  # noqa: B018


def test_no_import_cycles_counting_every_import() -> None:
    assert cycles(import_graph(modules())) == []


def test_no_import_cycles_in_or_across_the_plugin_and_tool_distributions() -> None:
    assert {"kernel_plugins_testing", "kernel_plugins_check", "kernel_plugins_benchmark",
            "kernel_plugins_mlu"} <= set(PACKAGES)
    everything = {n: p for package in PACKAGES for n, p in modules(package).items()}
    graph = import_graph(everything)
    assert "kernel_plugins_testing._plugin_conformance" in graph["kernel_plugins_testing.conformance"]
    assert "kernel_plugins.errors" in graph["kernel_plugins_testing.conformance"]  # across them
    assert cycles(graph) == []


def test_every_module_has_a_layer_and_at_most_one_import_runs_up() -> None:
    mods = modules()
    unplaced = sorted(n for n in mods if n != PACKAGE and layer_of(n) is None)
    assert unplaced == [], "add these modules to LAYERS"
    upward = sorted(
        (name, target)
        for name, targets in import_graph(mods).items() if name != PACKAGE
        for target in targets
        if layer_of(target) > layer_of(name)  # type: ignore[operator]
    )
    assert len(UPWARD_ALLOWED) <= 1
    assert [u for u in upward if u not in UPWARD_ALLOWED] == []


def test_the_plugin_contract_lies_below_the_pipeline() -> None:
    graph = import_graph(modules())
    contract = {f"{PACKAGE}.hookspecs", f"{PACKAGE}.provenance"}
    pipeline = {f"{PACKAGE}.{m}" for m in LAYERS[4]}
    reach: set[str] = set()
    todo = list(contract)
    while todo:
        for nxt in graph[todo.pop()] - reach:
            reach.add(nxt)
            todo.append(nxt)
    assert reach & pipeline == set()
    assert f"{PACKAGE}.importer" not in graph[f"{PACKAGE}.verification"]


def test_no_private_names_imported_from_another_package() -> None:
    """A ``_name`` is imported only inside its own package; a ``_module`` only by its package
    and the packages below it (which it serves)."""
    mods = modules()
    offenders = []
    for name, path in mods.items():
        own = name if _is_package(name, mods) else name.rpartition(".")[0]
        for target, names in imports(name, path, mods):
            target_pkg = target if _is_package(target, mods) else target.rpartition(".")[0]
            private_names = [n for n in names if n.startswith("_") and not n.startswith("__")]
            if private_names and target_pkg != own:
                offenders.append((name, target, private_names))
            leaf = target.rpartition(".")[2]
            if leaf.startswith("_") and not (own == target_pkg or own.startswith(target_pkg + ".")):
                offenders.append((name, target, names))
    assert offenders == []


def test_the_pipeline_modules_exist_and_the_old_one_is_gone() -> None:
    mods = modules()
    for step in ("sources", "fetching", "resolving", "verification", "importer", "loader",
                 "fallback", "registry", "provenance", "integrity", "integrity.snapshot",
                 "integrity.verify"):
        assert f"{PACKAGE}.{step}" in mods
    assert f"{PACKAGE}.hubload" not in mods


def test_only_the_hub_package_knows_the_hub_cache_layout() -> None:
    offenders = []
    for name, path in modules().items():
        if name.startswith(f"{PACKAGE}.hub"):
            continue
        text = path.read_text()
        offenders += [(name, w) for w in ('"snapshots"', '"blobs"', '"refs"', "models--") if w in text]
    assert offenders == []
