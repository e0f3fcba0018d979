"""The layer classes of a variant, as HF ``kernels`` 0.19.1 validates them, read, never run.

``kernels`` refuses a layer class that overrides ``__init__`` or has members beyond those
of ``torch.nn.Module`` and ``has_backward`` / ``can_torch_compile`` ("must not contain
additional members"); kernel-plugins also reads a ``kernel_properties`` attribute, which
``kernels`` therefore refuses: properties belong in the layers module's
``__kernel_properties__`` table. A class counts as a layer when a base is named
``Module`` (``nn.Module``, ``torch.nn.Module``); its members are what its body defines.
"""

from __future__ import annotations

import ast
from pathlib import Path

from ._report import _Ctx

#: What a layer class body may define for ``kernels`` 0.19.1 (dunders other than __init__
#: come from ``nn.Module`` itself).
KERNELS_MEMBERS = frozenset({"forward", "has_backward", "can_torch_compile"})
_MAX_BYTES = 4 << 20


def _defined(node: ast.ClassDef) -> list[str]:
    names: list[str] = []
    for stmt in node.body:
        if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.append(stmt.name)
        elif isinstance(stmt, ast.Assign):
            names += [t.id for t in stmt.targets if isinstance(t, ast.Name)]
        elif isinstance(stmt, ast.AnnAssign) and stmt.value is not None and isinstance(stmt.target, ast.Name):
            names.append(stmt.target.id)
    return [n for n in names if n == "__init__" or not (n.startswith("__") and n.endswith("__"))]


def check_layers(ctx: _Ctx, package: Path) -> None:
    """Report each layer class of ``package``'s ``layers`` module that ``kernels`` refuses."""
    path = next((p for p in (package / "layers.py", package / "layers" / "__init__.py")
                 if p.is_file() and not p.is_symlink()), None)
    if path is None or path.stat().st_size > _MAX_BYTES:
        return
    try:
        tree = ast.parse(path.read_bytes())
    except (SyntaxError, ValueError) as e:
        ctx.add(path, "", f"the layers module does not parse: {e}", "fix the Python syntax")
        return
    for node in tree.body:
        if not isinstance(node, ast.ClassDef) or not any(
                ast.unparse(b).rpartition(".")[2] == "Module" for b in node.bases):
            continue
        extra = [n for n in _defined(node) if n not in KERNELS_MEMBERS]
        if extra:
            ctx.add(
                path, node.name,
                f"layer class {node.name} defines {', '.join(extra)}: HF kernels 0.19.1 "
                "refuses it (a layer \"must not contain additional members\" nor its own __init__)",
                "keep only forward, has_backward and can_torch_compile in the class; declare "
                "properties in the module's __kernel_properties__ = {'<class>': frozenset({...})}",
            )
