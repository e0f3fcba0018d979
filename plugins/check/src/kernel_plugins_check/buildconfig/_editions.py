"""Which format a ``build.toml`` is in, as kernel-builder 0.17.2 tells: edition 5, or legacy.

A file with ``general.edition`` must name :data:`CURRENT_EDITION` (kernel-builder knows no
other). A file without one is legacy: kernels reads it in the v4 shape (``version``,
``license`` and a framework table required) and upgrades it to edition 5 in memory; it
refuses the older v3 shape, and what only edition 5 brought (``kernel-depends``,
``[general.tpu]``, a ``[torch.stable-abi]`` table).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ._issues import _fmt_loc, _short
from ._models import CURRENT_EDITION, BuildConfigIssue

_V3 = "a legacy file without it is in the v3 format, which kernel-builder no longer reads"


def _edition_issues(data: Mapping[str, Any]) -> tuple[int | None, list[BuildConfigIssue]]:
    general = data.get("general")
    if not isinstance(general, Mapping):
        return None, []  # the models say what [general] should be
    if "edition" not in general:
        return None, _legacy_issues(data, general)
    edition = general["edition"]
    if isinstance(edition, bool) or not isinstance(edition, int) or edition < 0:
        return None, [BuildConfigIssue(
            "general.edition", f"edition must be a whole number, got {_short(edition)}",
            f"write edition = {CURRENT_EDITION}",
        )]
    if edition != CURRENT_EDITION:
        return edition, [BuildConfigIssue(
            "general.edition",
            f"edition {edition} is not supported: kernel-builder and kernels 0.17.2 read edition "
            f"{CURRENT_EDITION} (and legacy files without an edition)",
            f"write edition = {CURRENT_EDITION}",
        )]
    return edition, []


def _legacy_issues(data: Mapping[str, Any], general: Mapping[str, Any]) -> list[BuildConfigIssue]:
    """What a file without an edition may not use, or must not lack."""
    issues = [
        BuildConfigIssue(f"general.{key}", f"missing required key 'general.{key}' ({_V3})",
                         f"add {key} = ... to [general], or migrate the file with "
                         "`kernel-builder update-build`")
        for key in ("version", "license") if key not in general
    ]
    newer: list[tuple[str, ...]] = [("general", "kernel-depends"), ("general", "tpu")]
    newer += [("general", b, "kernel-depends") for b, t in general.items()
              if isinstance(t, Mapping) and b != "hub"]
    torch = data.get("torch")
    if isinstance(torch, Mapping) and isinstance(torch.get("stable-abi"), Mapping):
        newer.append(("torch", "stable-abi"))
    for loc in newer:
        table: Any = data
        for part in loc:
            table = table.get(part) if isinstance(table, Mapping) else None
        if table is not None:
            issues.append(BuildConfigIssue(
                _fmt_loc(loc), f"'{_fmt_loc(loc)}' needs edition {CURRENT_EDITION}, and this "
                "file has no edition (a legacy file)",
                f"add edition = {CURRENT_EDITION} to [general]",
            ))
    return issues
