"""Writing the suite's results: ``<date>.json``, ``<date>.md`` and ``<date>.png``.

JSON layout (``schema`` ``"kernel-plugins-suite/1"``): ``date``, ``mode`` (``full`` or
``quick``), ``runs``, ``environment`` (python, platform, cpu count, torch, the package
versions, where each environment lives), ``inputs`` (repository id, variant count, commit,
variant names resolved, marked layers), ``figures`` (list; each: ``name``, ``what``,
``unit``, ``kernel_plugins`` and ``kernels`` summaries ``{median, iqr, min, max, n,
samples}`` or null, ``ratio`` (kernel-plugins / kernels medians) or null, ``target``
``{text, kind, max}`` or null, ``target_value`` (the number compared with the target),
``met`` (bool or null), ``extra`` and ``notes``), ``skipped`` (``[{name, reason}]``) and
``notes``.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

__all__ = ["SCHEMA", "format_value", "markdown", "text_table", "write_results"]

SCHEMA = "kernel-plugins-suite/1"


def format_value(value: float | None, unit: str) -> str:
    """``0.0123`` s -> ``12.3 ms``; requests as plain numbers."""
    if value is None:
        return "-"
    if unit != "s":
        return f"{value:g}"
    for name, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if abs(value) >= scale:
            return f"{value / scale:.3g} {name}"
    return f"{value / 1e-9:.3g} ns"


def _cell(summary: dict[str, Any] | None, unit: str) -> str:
    if summary is None:
        return "-"
    return f"{format_value(summary['median'], unit)} (IQR {format_value(summary['iqr'], unit)})"


def _rows(data: dict[str, Any]) -> list[list[str]]:
    rows = []
    for f in data["figures"]:
        target = f["target"]["text"] if f["target"] else "-"
        value = f.get("target_value")
        if value is not None and f["target"] and f["target"]["kind"] == "absolute":
            shown = format_value(value, f["unit"])
        else:
            shown = "-" if value is None else f"{value:.3f}x"
        met = {True: "yes", False: "NO", None: "-"}[f["met"]]
        ratio = "-" if f["ratio"] is None else f"{f['ratio']:.3f}x"
        rows.append(
            [
                f["name"],
                _cell(f["kernel_plugins"], f["unit"]),
                _cell(f["kernels"], f["unit"]),
                ratio,
                target,
                shown,
                met,
            ]
        )
    return rows


HEADERS = [
    "figure",
    "kernel-plugins median",
    "kernels median",
    "ratio",
    "target",
    "measured",
    "met",
]


def text_table(data: dict[str, Any]) -> str:
    """The figures as an aligned plain-text table."""
    rows = _rows(data)
    widths = [max([len(h), *(len(r[i]) for r in rows)]) for i, h in enumerate(HEADERS)]
    lines = [
        "  ".join(h.ljust(w) for h, w in zip(HEADERS, widths, strict=True)),
        "  ".join("-" * w for w in widths),
    ]
    lines += ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) for r in rows]
    return "\n".join(line.rstrip() for line in lines)


def markdown(data: dict[str, Any]) -> str:
    """The results as a markdown page: table, notes, environment."""
    env = data["environment"]
    out = [
        f"# kernel-plugins vs kernels {env.get('kernels') or '(not measured)'}: {data['date']}",
        "",
        f"Mode {data['mode']}, {data['runs']} run(s) per figure; median with IQR over runs "
        "(in-process figures: over all repeats of all runs). ratio = kernel-plugins / "
        "kernels; measured = the number the target is about.",
        "",
        "| " + " | ".join(HEADERS) + " |",
        "|" + "---|" * len(HEADERS),
    ]
    out += ["| " + " | ".join(r) + " |" for r in _rows(data)]
    out.append("")
    for f in data["figures"]:
        lines = [f"- {n}" for n in f["notes"]]
        if lines:
            out += [f"**{f['name']}** ({f['what']})", "", *lines, ""]
    for s in data["skipped"]:
        out.append(f"- skipped {s['name']}: {s['reason']}")
    out += [f"- {n}" for n in data["notes"]]
    out += ["", "## Environment", ""]
    out += [f"- {k}: {v}" for k, v in env.items()]
    out += ["", "## Inputs", ""]
    out += [f"- {k}: {v}" for k, v in data["inputs"].items()]
    return "\n".join(out) + "\n"


def write_results(data: dict[str, Any], out_dir: Path, plot_python: Path | None) -> list[Path]:
    """Write JSON, markdown and (with a matplotlib interpreter) the PNG chart."""
    out_dir.mkdir(parents=True, exist_ok=True)
    stem = out_dir / data["date"]
    written = [stem.with_suffix(".json"), stem.with_suffix(".md")]
    written[0].write_text(json.dumps(data, indent=2) + "\n")
    written[1].write_text(markdown(data))
    if plot_python is None:
        data["notes"].append("no PNG chart: matplotlib is not installed (pip install matplotlib)")
        written[0].write_text(json.dumps(data, indent=2) + "\n")
        return written
    png = stem.with_suffix(".png")
    done = subprocess.run(
        [str(plot_python), str(Path(__file__).with_name("plot.py")), str(written[0]), str(png)],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode == 0:
        written.append(png)
    else:
        data["notes"].append(f"the chart failed: {done.stderr.strip()[-500:]}")
        written[0].write_text(json.dumps(data, indent=2) + "\n")
    return written
