"""Output helpers shared by the commands: JSON and plain tables."""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from typing import Any

__all__ = ["print_json", "print_table", "CommandError", "VariantRows"]


class CommandError(Exception):
    """A command-line usage problem (printed without a traceback, exit status 2)."""


def print_json(data: Any) -> None:
    """Print ``data`` as indented JSON on stdout."""
    json.dump(data, sys.stdout, indent=2, sort_keys=False, default=str)
    sys.stdout.write("\n")


def print_table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
    """Print a left-aligned plain-text table."""
    cells = [[("" if c is None else str(c)) for c in row] for row in rows]
    widths = [len(h) for h in headers]
    for row in cells:
        for i, c in enumerate(row):
            widths[i] = max(widths[i], len(c))
    line = "  ".join(h.ljust(widths[i]) for i, h in enumerate(headers))
    print(line.rstrip())
    print("  ".join("-" * w for w in widths))
    for row in cells:
        print("  ".join(c.ljust(widths[i]) for i, c in enumerate(row)).rstrip())


class VariantRows:
    """One outcome per kernel variant (``verify``, ``download``).

    Each row is printed at once as ``<repo> <variant>: <outcome>``, or, with ``--json``,
    collected and printed by :meth:`finish` as ``{"target", "checked", "failed", "variants"}``.
    """

    def __init__(self, as_json: bool) -> None:
        self.as_json = as_json
        self.rows: list[dict[str, str]] = []

    def add(self, repo_id: str, variant: str, status: str, detail: str) -> None:
        """Record a row; ``status`` is ``ok``, ``failed`` or ``skipped``."""
        self.rows.append(
            {"repo_id": repo_id, "variant": variant, "status": status, "detail": detail}
        )
        if not self.as_json:
            shown = {"skipped": f"{detail} (skipped)", "failed": f"FAILED: {detail}"}
            print(f"{repo_id} {variant}: {shown.get(status, detail)}")

    def finish(self, where: str) -> int:
        """Print the summary (or the JSON document); exit status 1 when any row failed."""
        checked = sum(r["status"] != "skipped" for r in self.rows)
        failed = sum(r["status"] == "failed" for r in self.rows)
        if self.as_json:
            print_json({"target": where, "checked": checked, "failed": failed, "variants": self.rows})
        else:
            print(f"{where}: {checked} checked, {failed} failed")
        return 1 if failed else 0
