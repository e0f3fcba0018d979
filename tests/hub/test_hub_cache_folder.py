"""The cache folder: ``KERNELS_CACHE`` as kernels reads it, and only ``hub/`` decides it."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from kernel_plugins import hub

ROOT = Path(__file__).resolve().parents[2]
DOWNLOADERS = {"snapshot_download", "hf_hub_download", "get_cached_repo_tree", "scan_cache_dir"}


def test_kernels_cache_ranks_first_and_empty_means_unset(
    hf_cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("KERNELS_CACHE", raising=False)
    assert hub.cache_dir() == hf_cache  # HF_HUB_CACHE (itself $HF_HOME/hub by default)
    monkeypatch.setenv("KERNELS_CACHE", str(tmp_path / "k"))
    assert hub.cache_dir() == tmp_path / "k"
    assert hub.storage_folder("org/name", "kernel") == tmp_path / "k" / "kernels--org--name"
    monkeypatch.setenv("KERNELS_CACHE", "~/kc")
    assert hub.cache_dir() == Path.home() / "kc"
    monkeypatch.setenv("KERNELS_CACHE", "")
    assert hub.cache_dir() == hf_cache


def test_only_the_hub_package_names_the_cache_folder() -> None:
    offenders = []
    files = [*(ROOT / "src" / "kernel_plugins").rglob("*.py"), *ROOT.glob("plugins/*/src/**/*.py")]
    for path in files:
        if "hub" in path.relative_to(ROOT).parts[:3]:
            continue
        text = path.read_text()
        offenders += [(path.name, w) for w in ("HF_HUB_CACHE", "KERNELS_CACHE") if w in text]
        for node in ast.walk(ast.parse(text)):  # huggingface_hub's cache calls get ours
            if isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", "")) in DOWNLOADERS:
                if "cache_dir" not in {k.arg for k in node.keywords}:
                    offenders.append((path.name, node.lineno))
    assert len(files) > 100 and offenders == []
