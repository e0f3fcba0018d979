"""``kernel-plugins benchmark --scripts``: a repository's own ``benchmarks/benchmark*.py``
classes, run as ``kernels benchmark`` 0.17.2 runs them (the same workloads as kernels itself
finds: tests/reference/test_hf_kernels_compat.py)."""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

import pytest
from kernel_plugins_benchmark.scripts import find_scripts, run_scripts

from kernel_plugins.cli import main
from kernel_plugins.errors import KernelPluginsError, TrustError
from tests.support.kernels import make_variant

from .conftest import REPO_ROOT

EXAMPLE = REPO_ROOT / "examples" / "relu"
FAST = ["--iterations", "3", "--warmup", "1"]

#: A script with one workload that matches, one that does not and one that raises; it
#: leaves a marker file in the working directory (the repository) when imported.
SCRIPT = '''
from pathlib import Path
import torch
from kernels.benchmark import Benchmark

Path("imported").write_text("yes")

class Add(Benchmark):
    seed = 1
    def setup(self):
        self.x = torch.randn(8, 8, device=self.device)
        self.out = torch.empty_like(self.x)
    def benchmark_right(self):
        self.out = self.kernel.add_one(self.x)
    def verify_right(self):
        return self.x + 1
    def benchmark_wrong(self):
        self.out = self.kernel.add_one(self.x)
    def verify_wrong(self):
        return self.x + 2
    def setup_broken(self):
        raise RuntimeError("no inputs today")
    def benchmark_broken(self):
        pass
'''


def _repo(root: Path, script: str = SCRIPT, name: str = "addk") -> Path:
    make_variant(root, "torch-cpu", name=name, code="def add_one(x):\n    return x + 1\n")
    (root / "benchmarks").mkdir()
    (root / "benchmarks" / "benchmark_add.py").write_text(script)
    return root


def test_the_example_runs_with_json_output_in_kernels_format(
        manager, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    out_file = tmp_path / "results.json"
    assert main(["benchmark", str(EXAMPLE), "--scripts", *FAST, "--json", "--output", str(out_file)]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert json.loads(out_file.read_text()) == doc
    assert [r["workload"] for r in doc["results"]] == ["ReluBenchmark.large", "ReluBenchmark.small"]
    for r in doc["results"]:
        assert set(r["timingResults"]) == {"mean_ms", "std_ms", "min_ms", "max_ms", "q1_ms", "q3_ms",
                                           "iqr_ms", "outliers", "iterations"}
        assert r["timingResults"]["iterations"] == 3 and r["verified"] is True
        assert r["ref_mean_ms"] > 0
    assert set(doc["machineInfo"]) == {"gpu", "backend", "pytorchVersion", "os", "cpu"}
    assert doc["benchmarkScriptPath"] == "benchmarks" and len(doc["benchmarkScriptSha"]) == 64
    assert doc["ok"] is True and doc["emulated"] is False and doc["kernel"]["source"] == "local"
    # the compat module stood in for `kernels` only while importing (HF kernels, when installed, stays)
    assert getattr(sys.modules.get("kernels"), "__name__", "kernels") == "kernels"


def test_failures_are_reported_per_workload_and_exit_1(
        manager, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    repo = _repo(tmp_path / "k")
    assert main(["benchmark", str(repo), "--scripts", *FAST]) == 1
    out, err = capsys.readouterr()
    rows = {line.split()[1]: line for line in out.splitlines() if line.startswith("Add ")}
    assert rows["right"].endswith("yes") and rows["wrong"].endswith("NO")
    assert rows["broken"].endswith("error") and "no inputs today" in out
    assert "2 benchmark workload(s)" in err and "Add.wrong: the output differs" in err
    assert (repo / "imported").read_text() == "yes"  # the script ran in the repository folder
    assert Path.cwd() != repo


def test_repository_without_usable_scripts(manager, tmp_path: Path) -> None:
    repo = tmp_path / "k"
    make_variant(repo, "torch-cpu", name="nobench")
    with pytest.raises(KernelPluginsError, match="has no benchmarks/ folder"):
        run_scripts(str(repo))
    (repo / "benchmarks").mkdir()
    (repo / "benchmarks" / "helpers.py").write_text("X = 1\n")
    with pytest.raises(KernelPluginsError, match="holds no benchmark"):
        run_scripts(str(repo))
    (repo / "benchmarks" / "benchmark_x.py").write_text("import nonexistent_module_xyz\n")
    with pytest.raises(KernelPluginsError, match="failed to import: ModuleNotFoundError"):
        run_scripts(str(repo))
    (repo / "benchmarks" / "benchmark_x.py").write_text("class NotABenchmark:\n    pass\n")
    with pytest.raises(KernelPluginsError, match="defines no subclass of kernels.benchmark.Benchmark"):
        run_scripts(str(repo))


def test_links_out_of_the_repository_and_fifos_are_refused_unread(tmp_path: Path) -> None:
    repo = _repo(tmp_path / "k")
    outside = tmp_path / "evil.py"
    outside.write_text("raise SystemExit('ran')\n")
    (repo / "benchmarks" / "benchmark_evil.py").symlink_to(outside)
    with pytest.raises(KernelPluginsError, match="benchmark_evil.py"):
        find_scripts(repo)
    (repo / "benchmarks" / "benchmark_evil.py").unlink()
    os.mkfifo(repo / "benchmarks" / "benchmark_fifo.py")  # reading it would block
    with pytest.raises(KernelPluginsError, match="benchmark_fifo.py"):
        find_scripts(repo)
    (repo / "benchmarks" / "benchmark_fifo.py").unlink()
    shutil.move(repo / "benchmarks", tmp_path / "elsewhere")
    (repo / "benchmarks").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(KernelPluginsError, match="not a link"):
        find_scripts(repo)


def test_hub_scripts_need_the_trust_loading_needs_and_match_the_commit(
        hub_env, hf_cache, manager, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.support.hub import make_kernel_repo

    uid = tmp_path.name[-8:].replace("-", "").replace("_", "")
    local = _repo(tmp_path / "src", name=f"addk{uid}")
    files = {p.relative_to(local / "build/torch-cpu").as_posix(): p.read_bytes()
             for p in (local / "build/torch-cpu").rglob("*") if p.is_file()}
    script = SCRIPT.replace('Path("imported").write_text("yes")', "")
    for org in ("kernels-community", "tests-org"):
        make_kernel_repo(hub_env, f"{org}/addk{uid}", variants={"torch-cpu": files},
                         extra_files={"benchmarks/benchmark_add.py": script})
    with pytest.raises(TrustError):  # nothing of an untrusted repository runs
        run_scripts(f"tests-org/addk{uid}", load_options={"version": 1}, iterations=2, warmup=0)
    for repo, trust in ((f"kernels-community/addk{uid}", False), (f"tests-org/addk{uid}", True)):
        report = run_scripts(repo, load_options={"version": 1, "trust_remote_code": trust},
                             iterations=2, warmup=0)
        assert {w.name: w.verified for w in report.workloads} == {
            "Add.broken": None, "Add.right": True, "Add.wrong": False}
        assert report.to_dict()["kernelCommitSha"] == report.kernel["sha"] and report.kernel["sha"]
    # the cached scripts must be the files the Hub lists for that commit
    cached = next(hf_cache.glob(f"*--kernels-community--addk{uid}/snapshots/*/benchmarks"))
    planted = cached / "benchmark_planted.py"
    planted.write_text("raise SystemExit('planted')\n")
    with pytest.raises(KernelPluginsError, match="benchmark_planted.py is not the file the Hub lists"):
        run_scripts(f"kernels-community/addk{uid}", load_options={"version": 1})
    planted.unlink()
    script_file = (cached / "benchmark_add.py").resolve()  # the blob behind the cache's link
    script_file.write_text(script_file.read_text().replace("x + 2", "x + 1"))
    with pytest.raises(KernelPluginsError, match="benchmark_add.py is not the file the Hub lists"):
        run_scripts(f"kernels-community/addk{uid}", load_options={"version": 1})
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    with pytest.raises(KernelPluginsError, match="HF_HUB_OFFLINE=1 forbids"):
        run_scripts(f"kernels-community/addk{uid}", load_options={"version": 1})


def test_help_says_the_scripts_are_the_repositorys_code(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["benchmark", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "--scripts" in text and "--output FILE" in text
    assert "Those scripts are the repository's code" in text and "--trust-remote-code" in text
