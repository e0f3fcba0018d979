"""The repository stands alone: no file points outside it, and doc links resolve."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
#: Spelled in two pieces so that this file does not match itself.
OUTSIDE = ("../" + "shared", "shared/" + "reference")
_SKIP_DIRS = {".git", ".venv", ".olah-venv", "__pycache__", ".mypy_cache", ".ruff_cache",
              ".pytest_cache", "build", "dist", "site"}
_LINK_RE = re.compile(r"\]\((?!https?://|#|mailto:)(?P<target>[^)\s#]+)")


def repository_files() -> list[Path]:
    """Tracked files when this is a git checkout, else every file outside tool folders."""
    try:
        out = subprocess.run(
            ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT, capture_output=True, check=True, timeout=60
        ).stdout.decode()
        files = [ROOT / p for p in out.split("\0") if p]
    except (OSError, subprocess.CalledProcessError):
        files = [p for p in ROOT.rglob("*") if p.is_file()]
    return [p for p in files if not _SKIP_DIRS.intersection(p.relative_to(ROOT).parts)
            and p.is_file()]


def test_no_file_refers_outside_the_repository() -> None:
    offenders = []
    for path in repository_files():
        try:
            text = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue
        for n, line in enumerate(text.splitlines(), 1):
            if any(marker in line for marker in OUTSIDE):
                offenders.append(f"{path.relative_to(ROOT)}:{n}: {line.strip()}")
    assert offenders == []


@pytest.mark.parametrize(
    "doc", sorted(p.relative_to(ROOT).as_posix() for p in [ROOT / "README.md",
                  *(ROOT / "docs").glob("*.md"), *(ROOT / "plugins").glob("*/README.md")])
)
def test_relative_links_resolve(doc: str) -> None:
    import argparse

    from kernel_plugins.cli.main import build_parser

    path = ROOT / doc
    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    # docs/hooks/cli_pages.py generates docs/cli/index.md and one page per command
    generated = {"cli/index.md", *(f"cli/{name}.md" for name in sub.choices)}
    missing = [m.group("target") for m in _LINK_RE.finditer(path.read_text(encoding="utf-8"))
               if not (path.parent / m.group("target")).exists()
               and not (doc.startswith("docs/") and m.group("target") in generated)]
    assert missing == [], f"{doc} links to missing files"


def test_vendor_facts_the_tests_rely_on_are_in_docs() -> None:
    """docs/vendors.md holds the facts the plugins' independent stand-ins are written from."""
    text = (ROOT / "docs" / "vendors.md").read_text(encoding="utf-8")
    for fact in ("torch_mlu.__version__", "version.txt", "torch.version.musa", '"4030"',
                 "torch.version.cann", "not known", "get_soc_version", "cann100",
                 "torch_neuronx", "privateuseone", "TORCH_DEVICE_BACKEND_AUTOLOAD",
                 "torch.backends.tpu", "torch.tpu.device_count()", "libtpu-nightly", "0.0.51"):
        assert fact in text, fact
