"""Every ```python block of README.md and docs/*.md runs as shown, on a CPU machine.

A block runs in a fresh Python process (forked from one that imported torch:
kernel_plugins_testing.run_forked) from the repository root, offline
(``HF_HUB_OFFLINE=1`` with an empty Hub cache: Hub kernels with a bundled reference
fall back to it, as documented). Blocks that start with ``# file: PATH`` are files of the
plugin that ``docs/writing-a-backend.md`` builds; ``tests/distributions`` installs
and tests that plugin. A block that cannot run on a CPU machine says why in an HTML
comment on the line above it: ``<!-- not runnable: REASON -->``; such exceptions stay few.
"""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import pytest
from kernel_plugins_testing import run_forked

ROOT = Path(__file__).resolve().parents[2]
DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
USAGE = (ROOT / "docs" / "usage.md").read_text(encoding="utf-8")
_BLOCKS = [b for d in DOCUMENTS for b in re.findall(r"^```python\n(.*?)^```", d.read_text(encoding="utf-8"), re.M | re.S)]
_FENCE = re.compile(r"^(?:<!--(?P<note>[^>]*)-->\n)?```python\n(?P<code>.*?)^```", re.M | re.S)
_NOT_RUNNABLE = re.compile(r"\s*not runnable: (?P<why>\S.{9,})", re.S)
MAX_NOT_RUNNABLE = 3


#: The line a page section's example prints last (offline: the reference kernels serve).
LAST_LINE = {("docs/transformers.md", "Use with transformers"): "reference",
             ("docs/moving-from-kernels.md", "Change one import"): "['activation']"}


def _blocks() -> list[tuple[str, str | None, str, str]]:
    """(``file:line``, the HTML comment above or None, code, the ``## `` section) for every
    python block."""
    found = []
    for doc in DOCUMENTS:
        text = doc.read_text(encoding="utf-8")
        for m in _FENCE.finditer(text):
            line = text.count("\n", 0, m.start("code")) + 1
            heads = re.findall(r"^## (.*)$", text[: m.start()], re.M)
            found.append((f"{doc.relative_to(ROOT)}:{line}", m.group("note"), m.group("code"),
                          heads[-1] if heads else ""))
    return found


BLOCKS = _blocks()
RUNNABLE = [(where, code, section) for where, note, code, section in BLOCKS
            if note is None and not code.startswith("# file: ")]


def test_every_block_runs_or_says_why_not() -> None:
    assert len(BLOCKS) >= 10 and len(RUNNABLE) >= 7, [w for w, _, _ in BLOCKS]
    guide_test = ROOT / "tests" / "distributions" / "test_writing_a_backend.py"
    assert "# file: " in guide_test.read_text(encoding="utf-8")
    excused = []
    for page, title in LAST_LINE:  # each such section holds exactly one example
        assert len([w for w, _, _, s in BLOCKS if (w.split(":")[0], s) == (page, title)]) == 1, title
    for where, note, code, _ in BLOCKS:
        if code.startswith("# file: "):  # installed and tested by guide_test
            assert where.startswith("docs/writing-a-backend.md"), where
        elif note is not None:
            assert _NOT_RUNNABLE.fullmatch(note), f"{where}: {note!r} must say 'not runnable: REASON'"
            excused.append(where)
    assert len(excused) <= MAX_NOT_RUNNABLE, excused


@pytest.mark.parametrize(("where", "code", "section"), RUNNABLE, ids=[w for w, _, _ in RUNNABLE])
def test_block_runs_on_a_cpu_machine(where: str, code: str, section: str, tmp_path: Path) -> None:
    env = {
        "HF_HUB_OFFLINE": "1",
        "HF_HOME": str(tmp_path / "hf"),
        "KERNEL_PLUGINS_REFERENCE_CACHE": str(tmp_path / "reference"),
        "PYTHONWARNINGS": "default",
    }
    drop = ("HF_HUB_CACHE", "LOCAL_KERNELS", "KERNEL_PLUGINS_TRUSTED_ORGS", "KERNEL_PLUGINS_STRICT")
    proc = run_forked(code, env, timeout=600, cwd=ROOT, drop=drop)
    assert proc.returncode == 0, f"{where} failed:\n{proc.stderr[-3000:]}"
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    if (last := LAST_LINE.get((where.split(":")[0], section))) is not None:
        assert proc.stdout.strip().splitlines()[-1] == last, proc.stdout[-2000:]


def test_resolve_variants_for_a_described_device_runs_without_a_gpu() -> None:
    block = next(b for b in _BLOCKS if "resolve_variants(" in b and "DeviceInfo(" in b)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(block, "docs/usage.md", "exec"), {})  # noqa: S102 - our own documentation
    lines = out.getvalue().splitlines()
    best_comment = re.search(r"print\(res\.best\)\s+# (\S+)", block)
    assert best_comment is not None and lines[0] == best_comment.group(1)
    reason = re.search(r"# \.\.\. (\w+): (.*?) \.\.\.", block)
    assert reason is not None
    token, why = reason.groups()
    assert any(token in line and why in line for line in lines[1:]), lines


def test_resolve_variants_in_the_api_tour_needs_no_accelerator() -> None:
    import kernel_plugins

    line = next(x for x in USAGE.splitlines() if x.startswith("res = kernel_plugins.resolve_variants"))
    names = re.search(r"resolve_variants\((\[.*?\])", line)
    assert names is not None and "device=" not in line
    res = kernel_plugins.resolve_variants(eval(names.group(1)))  # noqa: S307 - a list literal
    assert res.best in ("torch-cpu", "torch-universal")  # cpu, or whichever accelerator
