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


DOCS = sorted(p.relative_to(ROOT).as_posix() for p in [ROOT / "README.md", *(ROOT / "docs").glob("*.md"),
                                                      *(ROOT / "plugins").glob("*/README.md")])
#: what mkdocs --strict builds without a word but a reader sees as broken
_MARKUP_FAULTS = {
    "a link inside a link's text (renders as literal brackets)": re.compile(r"\[\[[^\]]*\]\([^)]*\)\]\("),
    "a PyPI spelling (kernel-plugins is installed from a checkout: pip install '.[extra]')":
        re.compile(r"pip install '?kernel-plugins\["),
}


@pytest.mark.parametrize("doc", DOCS)
def test_docs_markup_renders_as_meant(doc: str) -> None:
    path = ROOT / doc
    text = path.read_text(encoding="utf-8")
    faults = [f"{doc}:{text.count(chr(10), 0, m.start()) + 1}: {what}: {m.group(0)}"
              for what, pattern in _MARKUP_FAULTS.items() for m in pattern.finditer(text)]
    faults += [f"{doc}: links to itself ({m.group(0)})" for m in _LINK_RE.finditer(text)
               if (path.parent / m.group("target")).resolve() == path.resolve()]
    assert faults == []


def test_the_markup_check_sees_the_faults_it_names(tmp_path: Path) -> None:
    for bad in ("see [[loading](loading.md)](loading.md).", "pip install 'kernel-plugins[torch]'"):
        assert any(p.search(bad) for p in _MARKUP_FAULTS.values()), bad
    assert not any(p.search("see [loading](loading.md); pip install '.[torch]'")
                   for p in _MARKUP_FAULTS.values())


def test_vendor_facts_the_tests_rely_on_are_in_docs() -> None:
    """docs/vendors.md holds the facts the plugins' independent stand-ins are written from."""
    text = (ROOT / "docs" / "vendors.md").read_text(encoding="utf-8")
    for fact in ("torch_mlu.__version__", "version.txt", "torch.version.musa", '"4030"',
                 "torch.version.cann", "not known", "get_soc_version", "cann100",
                 "torch_neuronx", "privateuseone", "TORCH_DEVICE_BACKEND_AUTOLOAD",
                 "torch.backends.tpu", "torch.tpu.device_count()", "libtpu-nightly", "0.0.51"):
        assert fact in text, fact
