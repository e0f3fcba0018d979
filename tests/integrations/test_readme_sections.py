"""The docs' "Use with transformers" and "Change one import" examples run as written
(in a fresh interpreter; the Hub is unreachable, so the reference kernels serve)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from kernel_plugins_testing import run_in_fresh_interpreter

DOCS = Path(__file__).resolve().parents[2] / "docs"
PAGES = {"Use with transformers": "transformers.md", "Change one import": "moving-from-kernels.md"}


def section_code(title: str) -> str:
    text = (DOCS / PAGES[title]).read_text(encoding="utf-8")
    start = text.index(f"## {title}\n")
    end = text.find("\n## ", start + 1)
    blocks = re.findall(r"```python\n(.*?)```", text[start:end], flags=re.S)
    assert len(blocks) == 1, f"section {title!r} should hold one python example"
    return blocks[0]


@pytest.mark.parametrize(
    ("title", "expected"),
    [
        ("Use with transformers", "reference"),
        ("Change one import", "['activation']"),
    ],
)
def test_readme_example_runs(title, expected):
    pytest.importorskip("transformers")
    proc = run_in_fresh_interpreter(section_code(title), env={"HF_HUB_OFFLINE": "1"})
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.strip().splitlines()[-1] == expected
