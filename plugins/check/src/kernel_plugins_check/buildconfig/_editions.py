"""Which format a ``build.toml`` is in, as kernels 0.19.1 tells: edition 6, 5, or legacy.

A file with ``general.edition`` must name one of :data:`EDITIONS` (kernel-builder knows no
other; it upgrades edition 5 to :data:`CURRENT_EDITION` in memory). A file without one is
legacy: kernels reads it in the v4 shape (``version``, ``license`` and a framework table
required) and upgrades it in memory too; it refuses the older v3 shape, and what only the
editions brought (``kernel-depends``, ``[general.tpu]``, a ``[torch.stable-abi]`` table).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ._issues import _fmt_loc, _short
from ._models import CURRENT_EDITION, EDITIONS, BuildConfigIssue

_V3 = "a legacy file without it is in the v3 format, which kernel-builder no longer reads"


def _edition_issues(data: Mapping[str, Any]) -> tuple[int | None, list[BuildConfigIssue]]:
    general = data.get("general")
    if not isinstance(general, Mapping):
        return None, []  # the models say what [general] should be
    if "edition" not in general:
        return None, _legacy_issues(data, general) + _edition6_issues(data, general, None)
    edition = general["edition"]
    if isinstance(edition, bool) or not isinstance(edition, int) or edition < 0:
        return None, [BuildConfigIssue(
            "general.edition", f"edition must be a whole number, got {_short(edition)}",
            f"write edition = {CURRENT_EDITION}",
        )]
    if edition not in EDITIONS:
        return edition, [BuildConfigIssue(
            "general.edition",
            f"edition {edition} is not supported: kernel-builder and kernels 0.19.1 read editions "
            f"{' and '.join(map(str, EDITIONS))} (and legacy files without an edition)",
            f"write edition = {CURRENT_EDITION}" + (
                " (or upgrade kernel-plugins-check, if kernel-builder has a newer edition)"
                if edition > CURRENT_EDITION else ""),
        )]
    return edition, _edition6_issues(data, general, edition) if edition != 6 else []


def _edition6_issues(
    data: Mapping[str, Any], general: Mapping[str, Any], edition: int | None
) -> list[BuildConfigIssue]:
    """What only edition 6 has: ``general.build-layout``, ``[mlx-noarch]``, ``language``."""
    kernels = data.get("kernel")
    locs: list[tuple[str, ...]] = [("general", "build-layout")] if "build-layout" in general else []
    locs += [("mlx-noarch",)] if "mlx-noarch" in data else []
    locs += [("kernel", k, "language") for k, t in kernels.items()
             if isinstance(t, Mapping) and "language" in t] if isinstance(kernels, Mapping) else []
    this = f"edition {edition}" if edition else "no edition (a legacy file)"
    return [BuildConfigIssue(
        _fmt_loc(loc), f"'{_fmt_loc(loc)}' needs edition 6, and this file has {this}",
        "write edition = 6 (a kernel then names its kind with language = \"cpp-cuda\" & co. "
        "instead of backend; `kernel-builder update-build` migrates the file)",
    ) for loc in locs]


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
                _fmt_loc(loc), f"'{_fmt_loc(loc)}' needs edition 5 or {CURRENT_EDITION}, and this "
                "file has no edition (a legacy file)",
                f"migrate the file to edition {CURRENT_EDITION} with `kernel-builder update-build`"
                " (or add edition = 5 to [general], which keeps its [kernel.*] tables as they are)",
            ))
    return issues
