"""The commands of kernels 0.18/0.19's CLI: ``cache ls``, ``describe-api``, ``variants
--all-versions | --only-compatible | --version latest``, ``info --dep-tree``, and
``versions`` naming what replaces it; end to end against the loopback Hub, in process."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kernel_plugins.cli import main
from tests.support.inputs import metadata
from tests.support.kernels import make_repo

SYMBOLS = {"schema_version": 1, "functions": [{"name": "relu", "doc": "ReLU"}],
           "layers": [{"name": "ReLU", "attributes": {"has_backward": True, "can_torch_compile": None}}]}
CODE = "from . import layers\n\n__all__ = ['relu', 'layers']\n\ndef relu(x):\n    return x\n"
LAYERS = "class ReLU:\n    has_backward = False\n\n    def forward(self, x):\n        return x\n"


def variant(meta: dict[str, Any], **files: str) -> dict[str, str]:
    return {"metadata.json": json.dumps(meta), "__init__.py": CODE, "layers.py": LAYERS, **files}


def cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, Any, str]:
    """Exit status, stdout (a JSON document with --json) and stderr of one command."""
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, json.loads(out) if "--json" in argv else out, err


@pytest.fixture(scope="module")
def repos(hub_server) -> dict[str, str]:  # noqa: ANN001
    """``relu`` v1 (no symbols.json) and v2 (with it; torch-cpu and torch-cuda), which
    depends on ``mid`` (v1), which depends on ``leaf`` (v1): repositories of
    kernels-community (a trusted publisher) made once on the session's server."""
    from tests.support.hub import make_kernel_repo

    names = {k: f"kernels-community/parity-{k}" for k in ("leaf", "mid", "relu")}
    make_kernel_repo(hub_server, names["leaf"], variants={"torch-cpu": variant(metadata(name="leaf"))})
    mid = metadata(name="mid", kernel_depends=[{"repo-id": names["leaf"], "version": 1}])
    make_kernel_repo(hub_server, names["mid"], variants={"torch-cpu": variant(mid)})
    make_kernel_repo(hub_server, names["relu"], variants={"torch-cpu": variant(metadata())})
    top = metadata(kernel_depends=[{"repo-id": names["mid"], "version": 1}])
    make_kernel_repo(hub_server, names["relu"], branches=("v2",), variants={
        "torch-cpu": variant(top, **{"symbols.json": json.dumps(SYMBOLS)}),
        "torch-cuda": variant(metadata(backend={"type": "cuda"}))})
    return names


@pytest.fixture
def served(hub_env, repos: dict[str, str]) -> dict[str, Any]:  # noqa: ANN001
    """:func:`repos` with an empty cache, and the server (``"server"``)."""
    return {**repos, "server": hub_env}


def test_variants_of_every_version_the_latest_and_only_what_fits(served, capsys) -> None:  # noqa: ANN001
    code, doc, _ = cli(capsys, "variants", served["relu"], "--all-versions", "--json")
    assert code == 0
    assert [(v["version"], v["best"], [d["variant"] for d in v["decisions"]]) for v in doc["versions"]] == [
        (1, "torch-cpu", ["torch-cpu"]), (2, "torch-cpu", ["torch-cpu", "torch-cuda"])]
    code, doc, _ = cli(capsys, "variants", served["relu"], "--version", "latest", "--only-compatible", "--json")
    assert (code, doc["version"], doc["decisions"]) == (
        0, 2, [{"variant": "torch-cpu", "accepted": True, "reason": None}])
    code, out, _ = cli(capsys, "variants", served["relu"], "--all-versions", "--only-compatible")
    assert code == 0 and out.count("chosen: torch-cpu") == 2 and "torch-cuda" not in out
    assert f"depends on: {served['mid']} (version 1)" in out
    code, _, err = cli(capsys, "versions", served["relu"])
    assert code == 0 and "`kernel-plugins variants REPO --all-versions` replaces `versions`" in err


def test_variants_refuses_versions_of_a_folder_and_a_bad_version(tmp_path: Path, capsys) -> None:  # noqa: ANN001
    repo = make_repo(tmp_path / "r", ["torch-cpu"])
    for flags in (["--all-versions"], ["--version", "latest"]):
        code, doc, _ = cli(capsys, "variants", str(repo), *flags, "--json")
        assert code == 1 and doc["error"]["message"] == (
            f"{str(repo)!r} is a local folder; versions are branches of a Hub repository")
    assert main(["variants", str(repo), "--version", "newest"]) == 2
    assert "argument --version: 'newest' is not a whole number, nor 'latest'" in capsys.readouterr().err
    assert main(["variants", str(repo), "--version", "1", "--all-versions"]) == 2
    assert "not allowed with argument --version" in capsys.readouterr().err


def test_describe_api_reads_symbols_json_and_fetches_nothing_else(served, capsys) -> None:  # noqa: ANN001
    from kernel_plugins import hub

    code, doc, _ = cli(capsys, "describe-api", served["relu"], "--version", "2", "--json")
    assert code == 0
    assert doc == {**SYMBOLS, "read_from": "symbols.json", "source": doc["source"], "variant": "torch-cpu"}
    snapshot = next((hub.storage_folder(served["relu"], "kernel") / "snapshots").iterdir())
    assert sorted(p.name for p in (snapshot / "build" / "torch-cpu").iterdir()) == ["metadata.json", "symbols.json"]
    assert [p for p in served["server"].paths("GET") if "/resolve/" in p and "/build/" in p] == [
        f"/kernels/{served['relu']}/resolve/{snapshot.name}/build/torch-cpu/{f}" for f in ("metadata.json", "symbols.json")]
    code, out, _ = cli(capsys, "describe-api", served["relu"], "--version", "2")
    assert out.splitlines()[2:] == ["read from: symbols.json", "functions: relu", "layers:",
                                    "  ReLU  has_backward=True  can_torch_compile=unknown"]


def test_describe_api_without_symbols_json_scans_the_sources_it_fetches(served, capsys) -> None:  # noqa: ANN001
    code, doc, _ = cli(capsys, "describe-api", served["relu"], "--version", "1", "--json")
    assert code == 0 and doc["read_from"] == "static scan (the variant has no symbols.json)"
    assert doc["functions"] == [{"name": "relu"}]
    assert doc["layers"] == [{"name": "ReLU", "attributes": {"has_backward": False, "can_torch_compile": None}}]


@pytest.mark.parametrize(("symbols", "problem"), [
    ({"schema_version": 2, "functions": [], "layers": []}, "schema_version is not 1"),
    ({"schema_version": 1, "functions": [{"doc": "x"}], "layers": []}, "functions and layers must be lists"),
    ({"schema_version": 1, "functions": [], "layers": [{"name": "L", "attributes": {"a": 1}}]},
     "layer attributes must be true, false or null"),
    ([1], "schema_version is not 1"),
])
def test_describe_api_refuses_a_bad_symbols_json(tmp_path: Path, capsys, symbols: Any, problem: str) -> None:  # noqa: ANN001
    repo = make_repo(tmp_path / "r", ["torch-cpu"])
    (repo / "build" / "torch-cpu" / "symbols.json").write_text(json.dumps(symbols))
    code, doc, _ = cli(capsys, "describe-api", str(repo), "--json")
    assert code == 1 and doc["error"]["type"] == "MetadataError"
    assert f"symbols.json: unsupported symbols.json: {problem}" in doc["error"]["message"]
    (repo / "build" / "torch-cpu" / "symbols.json").write_text("{")
    assert cli(capsys, "describe-api", str(repo), "--json")[1]["error"]["type"] == "MetadataError"


def test_info_dep_tree_walks_every_level(served, capsys) -> None:  # noqa: ANN001
    code, doc, _ = cli(capsys, "info", served["relu"], "--version", "2", "--dep-tree", "--json")
    assert code == 0 and doc["dependency_tree"] == {
        f"{served['mid']} (version 1)": {f"{served['leaf']} (version 1)": {}}}
    code, out, _ = cli(capsys, "info", served["relu"], "--version", "2", "--dep-tree")
    assert out.splitlines()[-4:] == ["dependency-tree:", "relu", f"`-- {served['mid']} (version 1)",
                                     f"    `-- {served['leaf']} (version 1)"]
    assert "dependency_tree" not in cli(capsys, "info", served["relu"], "--version", "2", "--json")[1]


def test_cache_ls_lists_what_loads_cached(served, capsys) -> None:  # noqa: ANN001
    code, doc, _ = cli(capsys, "cache", "ls", "--json")
    assert (code, doc["repos"]) == (0, [])
    assert cli(capsys, "cache", "ls")[1].startswith("no kernels in the cache ")
    assert main(["download", served["relu"], "--version", "1"]) == 0
    assert main(["describe-api", served["relu"], "--version", "2"]) == 0
    capsys.readouterr()
    code, doc, _ = cli(capsys, "cache", "ls", "--json")
    [repo] = [r for r in doc["repos"] if r["repo_id"] == served["relu"]]
    rows = [(r["ref_names"], r["version"], r["variants"]) for r in repo["revisions"]]
    assert rows == [(["v1"], 1, ["torch-cpu"]), (["v2"], 2, ["torch-cpu"])]
    v1, v2 = repo["revisions"]
    assert v1["size_on_disk"] > 0 and v2["size_on_disk"] > 0 and v1["last_accessed"] > 0
    assert repo["size_on_disk"] >= max(v1["size_on_disk"], v2["size_on_disk"])
    out = cli(capsys, "cache", "ls")[1]
    assert f"{served['relu']}  v1" in out and f"{served['relu']}  v2" in out


def test_cache_ls_of_a_cache_that_is_a_file_and_describe_api_of_a_link_out(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys) -> None:  # noqa: ANN001
    (tmp_path / "cache").write_text("not a folder")
    monkeypatch.setenv("KERNELS_CACHE", str(tmp_path / "cache"))
    code, doc, _ = cli(capsys, "cache", "ls", "--json")
    assert (code, doc["error"]["type"]) == (1, "LocalDiskError")
    assert doc["error"]["message"].startswith(f"cannot list the kernel cache {tmp_path / 'cache'}: ")
    repo = make_repo(tmp_path / "r", ["torch-cpu"])
    (tmp_path / "outside.json").write_text(json.dumps(SYMBOLS))
    (repo / "build" / "torch-cpu" / "symbols.json").symlink_to(tmp_path / "outside.json")
    code, doc, _ = cli(capsys, "describe-api", str(repo), "--json")
    assert (code, doc["error"]["type"]) == (1, "IntegrityError") and "symbols.json" in doc["error"]["message"]
