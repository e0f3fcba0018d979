"""The PrivateUse1 plugins' hooks modules are vendor facts for the plugin kit, nothing more."""

from __future__ import annotations

import ast
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
def test_hooks_module_is_about_fifty_lines_on_the_kit(plugin: str) -> None:
    text = _hooks(plugin).read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 60
    core = [line for line in text.splitlines() if line.startswith("from kernel_plugins.")]
    assert core and all(line.startswith("from kernel_plugins.plugin_kit import") for line in core)
    assert "PrivateUse1Backend(" in text and ".hookimpls())" in text
    assert "kernel_plugins_testing" not in text  # emulation stays out of the runtime path


@pytest.mark.parametrize(("a", "b"), list(combinations(KIT_PLUGINS, 2)))
def test_no_line_of_substance_is_repeated_across_plugins(a: str, b: str) -> None:
    assert _substance(_hooks(a)) & _substance(_hooks(b)) == set()


@pytest.mark.parametrize("plugin", (*KIT_PLUGINS, "neuron"))
def test_emulation_stays_out_of_the_runtime_path(plugin: str) -> None:
    """Importing and registering the hooks imports no test-only module (only emulate_device does)."""
    from kernel_plugins_testing import run_in_fresh_interpreter

    proc = run_in_fresh_interpreter(
        "import sys\n"
        f"from kernel_plugins_{plugin} import hooks\n"
        "from kernel_plugins.plugins import PluginManager\n"
        f"PluginManager(entry_points=False).register(hooks, name='{plugin}')\n"
        "hooks.detect_device()\n"
        "print(sorted(m for m in sys.modules if m.startswith('kernel_plugins_testing') or m.endswith('.emulation')))\n"
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"
