"""``kernel-plugins list-backends``: every installed backend and what it found."""

from __future__ import annotations

import argparse
import textwrap
from typing import Any

from ..device import SystemInfo
from ._output import DEFAULT_WIDTH, clean, print_json, print_table

NAME = "list-backends"
HELP = "list installed backends (built-in and plugins), their devices and accepted variants"
SHOWN_VARIANTS = 3


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options: ``--json``, ``--wide`` (``--emulate`` is global)."""
    from .main import add_wide_option

    parser.add_argument("--json", action="store_true", help="machine-readable output")
    add_wide_option(parser)


def system_line(s: SystemInfo) -> str:
    """``system: x86_64 linux, Python 3.11 (GIL: abi3 builds), torch 2.13 (cxx11)``."""
    py = "Python {}.{} ({})".format(*s.python_version, "free-threaded: abi3t builds only" if s.free_threaded
                                    else "GIL: abi3 builds" + (", abi3t too" if s.python_version >= (3, 15) else ""))
    torch = "torch not installed" if s.torch_version is None else "torch {}.{}".format(*s.torch_version) + (
        "" if s.cxx11_abi is None else " (cxx11)" if s.cxx11_abi else " (cxx98)")
    return f"system: {s.cpu} {s.os}, {py}, {torch}" + (", mlx" if s.mlx else "")


def backend_rows() -> list[dict[str, Any]]:
    """One dict per installed backend plus one per failed plugin."""
    from ..detection import system_info
    from ..errors import KernelPluginsError
    from ..plugins import get_manager
    from ..resolving import device_arch

    manager = get_manager()
    system = system_info()
    rows: list[dict[str, Any]] = []
    for name, rec in manager.backends().items():
        outcome = manager.detect(name)
        dev = outcome.device
        variants: list[str] = []
        error = outcome.error
        if dev is not None:
            try:
                variants = manager.list_variants(dev, system)
            except KernelPluginsError as e:
                error = str(e)
        rows.append({
            "name": name, "device_type": rec.spec.device_type,
            "display_name": rec.spec.display_name, "distribution": rec.distribution,
            "version": rec.version, "builtin": rec.builtin,
            "status": "error" if error else outcome.status, "error": error,
            "reason": outcome.reason, "count": dev.count if dev else 0,
            "device_name": dev.name if dev else None,
            "runtime_version": dev.runtime_version if dev else None,
            "capability": list(dev.capability) if dev and dev.capability else None,
            "arch": device_arch(dev) if dev else None,
            "emulated": bool(dev and dev.emulated), "notes": list(dev.notes) if dev else [],
            "variants": variants,
        })
    for f in manager.failures():
        rows.append({
            "name": f.name, "device_type": None, "display_name": None,
            "distribution": f.distribution, "version": f.version, "builtin": False,
            "status": "error", "error": f"{f.stage}: {f.message}", "reason": None, "count": 0,
            "device_name": None, "runtime_version": None, "capability": None, "arch": None,
            "emulated": False, "notes": [], "variants": [],
        })
    return rows


def run(args: argparse.Namespace) -> int:
    """Print the table (or JSON)."""
    from ..detection import system_info, unserved_vendor_stacks
    from ..torch_support import torch_note

    rows = backend_rows()
    torch = torch_note()
    if args.json:
        print_json({"system": system_info().to_dict(), "torch_problem": torch, "backends": rows})
        return 0
    shown_variants = SHOWN_VARIANTS if args.wide else 1
    table, details = [], []
    for r in rows:
        status = r["status"] + (" (EMULATED)" if r["emulated"] else "")
        shown = r["variants"][:shown_variants]
        more = len(r["variants"]) - len(shown)
        table.append([r["name"], f"{r['distribution'] or '?'} {r['version'] or ''}".strip(), status,
                      r["count"], r["runtime_version"] or "-", r["arch"] or "-",
                      (", ".join(shown) + (f" (+{more})" if more > 0 else "")) or "-"])
        why = r["error"] or r["reason"]
        if why:
            details.append(f"{r['name']}: {r['status']}: {why}")
        details += [f"{r['name']}: note: {note}" for note in r["notes"]]
    width = None if args.wide else DEFAULT_WIDTH
    print_table(["backend", "distribution", "status", "devices", "runtime", "arch", "accepts"], table,
                width=width, whole=(0, 1, 2))
    details += [f"note: {line}" for line in ([torch] if torch else []) + unserved_vendor_stacks()]
    details.append(system_line(system_info()))
    if details:
        print()
    for line in details:
        text = clean(line, one_line=True)
        print(text if width is None else textwrap.fill(text, width, subsequent_indent="    "))
    return 0
