"""Which format a ``build.toml`` is in: edition 5, or a legacy (v3 / v4) file.

A file with ``general.edition`` must name :data:`CURRENT_EDITION` and then also needs
``version``, ``license`` and a framework table. A file without ``edition`` is legacy: it
is still read, and labelled ``legacy v4`` or ``legacy v3`` from the keys it uses.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ._issues import _short
from ._models import CURRENT_EDITION, BuildConfigIssue


def _legacy_shape(data: Mapping[str, Any]) -> str:
    """Best-effort label of a legacy file: ``v4`` when it uses keys v3 lacked, else ``v3``."""
    general = data.get("general")
    general = general if isinstance(general, Mapping) else {}
    torch = data.get("torch")
    torch = torch if isinstance(torch, Mapping) else {}
    v4 = (
        "torch-noarch" in data
        or "tvm-ffi" in data
        or "stable-abi" in torch
        or any(k in general for k in ("upstream", "source", "kernel-depends"))
    )
    return "legacy v4" if v4 else "legacy v3"


def _edition_issues(data: Mapping[str, Any]) -> tuple[int | None, list[BuildConfigIssue]]:
    general = data.get("general")
    if not isinstance(general, Mapping) or "edition" not in general:
        return None, []
    edition = general["edition"]
    if isinstance(edition, bool) or not isinstance(edition, int):
        return None, [BuildConfigIssue(
            "general.edition", f"edition must be an integer, got {_short(edition)}",
            f"write edition = {CURRENT_EDITION}",
        )]
    if edition != CURRENT_EDITION:
        fix = (
            "upgrade kernel-plugins to read it"
            if edition > CURRENT_EDITION
            else f"write edition = {CURRENT_EDITION} (after migrating) or remove the key for the "
            "legacy format"
        )
        return edition, [BuildConfigIssue(
            "general.edition",
            f"edition {edition} is not supported: this kernel-plugins reads edition "
            f"{CURRENT_EDITION} and legacy files without an edition",
            fix,
        )]
    issues = []
    for key in ("version", "license"):
        if key not in general:
            issues.append(BuildConfigIssue(
                f"general.{key}",
                f"missing required key 'general.{key}' (required in edition {CURRENT_EDITION})",
                f"add {key} = ... to [general]",
            ))
    frameworks = [t for t in ("torch", "torch-noarch", "tvm-ffi") if t in data]
    if not frameworks:
        issues.append(BuildConfigIssue(
            "", "no framework table",
            "add [torch] (compiled kernels), [torch-noarch] (pure Python / Triton) or [tvm-ffi]",
        ))
    return edition, issues
