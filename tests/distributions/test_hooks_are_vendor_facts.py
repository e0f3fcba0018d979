"""The PrivateUse1 plugins' hooks modules are vendor facts for the plugin kit, nothing more."""

from __future__ import annotations

import ast
import json
from itertools import combinations
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
KIT_PLUGINS = ("mlu", "musa", "npu")


def _hooks(plugin: str) -> Path:
    return ROOT / "plugins" / plugin / "src" / f"kernel_plugins_{plugin}" / "hooks.py"


def _substance(path: Path) -> set[str]:
    """Lines that carry content: not blank, not import, not docstring or bracket lines."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    doc_lines = set()
    if ast.get_docstring(tree) is not None:
        node = tree.body[0]
        doc_lines = set(range(node.lineno, (node.end_lineno or node.lineno) + 1))
    lines = path.read_text(encoding="utf-8").splitlines()
    return {
        line.strip() for n, line in enumerate(lines, 1)
        if n not in doc_lines and len(line.strip()) > 25
        and not line.strip().startswith(("from ", "import ", "#"))
    }


@pytest.mark.parametrize("plugin", KIT_PLUGINS)
def test_hooks_module_is_about_eighty_lines_on_the_kit(plugin: str) -> None:
    """Facts only: the backend object and its emulation data, no generated globals."""
    text = _hooks(plugin).read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 85
    core = [line for line in text.splitlines() if line.startswith("from kernel_plugins.")]
    assert core and all(line.startswith("from kernel_plugins.plugin_kit import") for line in core)
    assert f"{plugin.upper()} = PrivateUse1Backend(" in text and "Emulation(" in text
    assert "globals()" not in text and "def " not in text.split("PrivateUse1Backend(")[1]
    assert "kernel_plugins_testing" not in text  # emulation stays out of the runtime path


@pytest.mark.parametrize(("a", "b"), list(combinations(KIT_PLUGINS, 2)))
def test_no_line_of_substance_is_repeated_across_plugins(a: str, b: str) -> None:
    assert _substance(_hooks(a)) & _substance(_hooks(b)) == set()


RUNTIME_PLUGINS = (*KIT_PLUGINS, "neuron", "tpu")


@pytest.fixture(scope="module")
def test_only_imports() -> dict[str, list[str]]:
    """For each plugin, in one fresh interpreter, one after the other: the test-only modules
    (``kernel_plugins_testing*``, ``*.emulation``) that importing its hooks, registering them
    and detecting its device imported. Modules only accumulate, so a plugin that imports one
    shows it in its own list (a later plugin importing the same module again shows nothing)."""
    from kernel_plugins_testing import run_in_fresh_interpreter

    proc = run_in_fresh_interpreter(
        "import importlib, json, sys\n"
        "from kernel_plugins.plugins import PluginManager\n"
        "def test_only():\n"
        "    return {m for m in sys.modules if m.startswith('kernel_plugins_testing') or m.endswith('.emulation')}\n"
        "out = {}\n"
        f"for name in {RUNTIME_PLUGINS!r}:\n"
        "    before = test_only()\n"
        "    plugin = getattr(importlib.import_module(f'kernel_plugins_{name}.hooks'), name.upper())\n"
        "    assert PluginManager(entry_points=False).register(plugin, name=name)\n"
        "    plugin.detect_device()\n"
        "    out[name] = sorted(test_only() - before)\n"
        "print(json.dumps(out))\n"
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("plugin", RUNTIME_PLUGINS)
def test_emulation_stays_out_of_the_runtime_path(
    plugin: str, test_only_imports: dict[str, list[str]]
) -> None:
    """Importing and registering the hooks imports no test-only module (only emulate_device does)."""
    assert test_only_imports[plugin] == []


def test_backend_plugins_are_the_folders_with_an_entry_point() -> None:
    """plugins/testing, plugins/check and plugins/benchmark are tools: only a ``kernel_plugins`` entry point
    makes a folder a backend, and each names the backend's plugin object."""
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        import tomli as tomllib
    from .test_plugin_distributions import PLUGINS

    backends, tools = set(), set()
    for folder in sorted(p for p in (ROOT / "plugins").iterdir() if p.is_dir()):
        meta = tomllib.loads((folder / "pyproject.toml").read_text(encoding="utf-8"))
        entry_points = meta["project"].get("entry-points", {}).get("kernel_plugins", {})
        (backends if entry_points else tools).add(folder.name)
        for name, target in entry_points.items():
            assert target == f"kernel_plugins_{name}.hooks:{name.upper()}", (name, target)
    assert backends == set(PLUGINS) == {*KIT_PLUGINS, "neuron", "tpu"}
    assert tools == {"testing", "check", "benchmark"}
