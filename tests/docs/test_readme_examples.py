"""README examples that must run on any machine, without a GPU."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text(encoding="utf-8")
_BLOCKS = re.findall(r"^```python\n(.*?)^```", README, re.M | re.S)


def test_resolve_variants_for_a_described_device_runs_without_a_gpu() -> None:
    block = next(b for b in _BLOCKS if "resolve_variants(" in b and "DeviceInfo(" in b)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(block, "README.md", "exec"), {})  # noqa: S102 - our own documentation
    lines = out.getvalue().splitlines()
    best_comment = re.search(r"print\(res\.best\)\s+# (\S+)", block)
    assert best_comment is not None and lines[0] == best_comment.group(1)
    reason = re.search(r"# \.\.\. (\w+): (.*?) \.\.\.", block)
    assert reason is not None
    token, why = reason.groups()
    assert any(token in line and why in line for line in lines[1:]), lines


def test_resolve_variants_in_the_api_tour_needs_no_accelerator() -> None:
    import kernel_plugins

    line = next(x for x in README.splitlines() if x.startswith("res = kernel_plugins.resolve_variants"))
    names = re.search(r"resolve_variants\((\[.*?\])", line)
    assert names is not None and "device=" not in line
    res = kernel_plugins.resolve_variants(eval(names.group(1)))  # noqa: S307 - a list literal
    assert res.best in ("torch-cpu", "torch-universal")  # cpu, or whichever accelerator
