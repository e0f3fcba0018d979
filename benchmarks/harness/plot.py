"""Draw the suite's chart: ``python plot.py RESULTS.json CHART.png`` (needs matplotlib).

Left: the measured value of each figure that has a target, divided by the target's
limit (below 1 = target met). Right: each figure's kernel-plugins / kernels ratio.
Standalone (standard library + matplotlib), so any interpreter with matplotlib runs it.
"""

from __future__ import annotations

import json
import sys


def main() -> int:
    """Read the JSON results, write the PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import NullFormatter

    data = json.loads(open(sys.argv[1], encoding="utf-8").read())
    figs = data["figures"]
    fig, (left, right) = plt.subplots(1, 2, figsize=(13, 5))
    targeted = [f for f in figs if f["target"] and f.get("target_value") is not None]
    values = [f["target_value"] / f["target"]["max"] for f in targeted]
    colors = ["tab:green" if v <= 1 else "tab:red" for v in values]
    left.barh([f["name"] for f in targeted], values, color=colors)
    left.axvline(1.0, color="black", linestyle="--", linewidth=1)
    left.set_xscale("log")
    left.xaxis.set_minor_formatter(NullFormatter())
    left.set_xlabel("measured / target limit (< 1: met)")
    left.set_title("targets for kernel-plugins")
    compared = [f for f in figs if f["ratio"] is not None]
    right.barh([f["name"] for f in compared], [f["ratio"] for f in compared], color="tab:blue")
    right.axvline(1.0, color="black", linestyle="--", linewidth=1)
    right.set_xscale("log")
    right.xaxis.set_minor_formatter(NullFormatter())
    right.set_xlabel("kernel-plugins / kernels (median; < 1: kernel-plugins faster)")
    right.set_title(f"vs kernels {data['environment'].get('kernels')}")
    fig.suptitle(f"kernel-plugins benchmark suite, {data['date']} ({data['mode']} mode)")
    fig.tight_layout()
    fig.savefig(sys.argv[2], dpi=110)
    return 0


if __name__ == "__main__":
    sys.exit(main())
