"""Issue 37, item 8: locking has a page of its own in the site's navigation (usage.md keeps a
pointer, not a copy), every option that page names exists on its command, and the site's CSS
keeps code blocks and CLI usage from being cut at a 1400 px window (checked once with headless
chromium on the built site: 54 cut blocks without the CSS, 0 with it; here the rules that do it)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from kernel_plugins.cli.main import main

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
MKDOCS = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")


def test_locking_has_its_page_in_the_nav_and_usage_points_to_it() -> None:
    assert re.search(r"^  - [^:\n]+: locking\.md$", MKDOCS, re.M), "mkdocs.yml: no nav entry for locking.md"
    locking = (DOCS / "locking.md").read_text(encoding="utf-8")
    usage = (DOCS / "usage.md").read_text(encoding="utf-8")
    section = usage.split("## Reproducible and safe Hub loading", 1)[1].split("\n## ", 1)[0]
    assert "(locking.md)" in section
    for moved in ("a cycle or a chain deeper than 16", "kernels allows no other key in `kernels.lock`"):
        assert moved in locking and moved not in usage, moved  # moved, not copied
    for command in ("lock", "download", "verify"):
        assert f"kernel-plugins {command} ." in locking


@pytest.mark.parametrize("command", ["lock", "download", "verify"])
def test_every_option_the_locking_page_names_exists(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    locking = (DOCS / "locking.md").read_text(encoding="utf-8")
    named = set(re.findall(rf"(?:kernel-plugins |`){command} [^`\n]*?(--[a-z-]+)", locking))
    named |= {"--all-variants"} if command == "download" else {"--allow-missing"} if command == "verify" else set()
    with pytest.raises(SystemExit):
        main([command, "--help"])
    usage = capsys.readouterr().out
    assert {o for o in named if o not in usage} == set(), f"{command} has no such option"


def test_the_site_css_widens_the_page_and_wraps_code_lines() -> None:
    assert re.search(r"^extra_css:\n  - stylesheets/extra\.css$", MKDOCS, re.M)
    css = re.sub(r"/\*.*?\*/", "", (DOCS / "stylesheets" / "extra.css").read_text(encoding="utf-8"), flags=re.S)
    rules = {sel.strip(): body for sel, body in re.findall(r"([^{}]+)\{([^}]*)\}", css)}
    grid = re.search(r"max-width:\s*(\d+)rem", rules[".md-grid"])
    assert grid and int(grid.group(1)) * 20 >= 1400  # material: 1 rem = 20 px below 1600 px: fills the window
    code = rules[".md-typeset pre > code"]
    assert "white-space: pre-wrap" in code and "overflow-wrap: anywhere" in code
