"""The benchmarks/ suite: its harness runs in quick mode (timings are never asserted)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from kernel_plugins.variants import parse_variant

from .conftest import REPO_ROOT

BENCHMARKS = REPO_ROOT / "benchmarks"
sys.path.insert(0, str(BENCHMARKS))

from harness import figures, inputs, report  # noqa: E402

EXPECTED = {
    "import",
    "first local load",
    "kernelize (kernel loaded)",
    "kernelize again",
    "kernelize first call",
    "call overhead",
    "resolution",
    "resolution again",
    "list-backends",
}
HUB = {"cold load", "cold load requests", "warm load"}
DEPENDS = {"first local load, one dependency", "cold load, one dependency",
           "warm load, one dependency (pinned by version)"}


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("suite")
    done = subprocess.run(
        [sys.executable, str(BENCHMARKS / "run.py"), "--quick", "--no-kernels", "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=REPO_ROOT,
    )
    return done, out


def test_quick_mode_runs_every_measurement_and_writes_results(quick_run):
    done, out = quick_run
    assert done.returncode == 0, done.stderr[-3000:]
    (results,) = out.glob("*.json")
    data = json.loads(results.read_text())
    assert data["schema"] == report.SCHEMA and data["mode"] == "quick" and data["runs"] == 1
    names = {f["name"] for f in data["figures"]}
    skipped = {s["name"]: s["reason"] for s in data["skipped"]}
    assert EXPECTED <= names
    if "loads (cold, warm)" in skipped:  # no olah here
        assert "olah" in skipped["loads (cold, warm)"]
    else:
        assert HUB <= names
        cold = next(f for f in data["figures"] if f["name"] == "cold load requests")
        assert cold["kernel_plugins"]["median"] >= 1  # the proxy counted real requests
        warm = next(f for f in data["figures"] if f["name"] == "warm load")
        assert warm["extra"]["requests"]["kernel_plugins"] == [0]  # sha cached: no request
        assert DEPENDS <= names
        figs = {f["name"]: f for f in data["figures"]}
        pinned = figs["warm load, one dependency (pinned by version)"]
        assert pinned["extra"]["requests"]["kernel_plugins"] >= 1  # where is branch v1?
        # the dependency's own files and lookups come on top of a plain cold load's requests
        assert figs["cold load, one dependency"]["extra"]["requests"]["kernel_plugins"] > cold["kernel_plugins"]["median"]
        assert "warm load, one dependency (pinned by commit)" not in names  # full mode only
    for f in data["figures"]:
        assert f["kernels"] is None and f["kernel_plugins"]["n"] >= 1
        assert f["kernel_plugins"]["min"] <= f["kernel_plugins"]["median"]
    # what pip install kernel-plugins installs, in lines of Python (the budget: 16,000)
    lines = sum(p.read_bytes().count(b"\n") for p in (REPO_ROOT / "src" / "kernel_plugins").rglob("*.py"))
    assert data["environment"]["kernel_plugins_python_lines"] == lines <= 16_000
    kernelize = next(f for f in data["figures"] if f["name"] == "kernelize first call")
    assert kernelize["extra"]["replaced"] == {"kernel_plugins": 1000}
    for name in ("kernelize (kernel loaded)", "kernelize again"):
        fig = next(f for f in data["figures"] if f["name"] == name)
        assert fig["target"]["max"] == 0.5 and fig["extra"]["cpu_median_s"]["kernel_plugins"] > 0
    local = next(f for f in data["figures"] if f["name"] == "first local load")
    assert local["target"]["max"] == 0.4
    # the first load validates metadata.json without pydantic and needs no Hub client
    assert local["extra"]["heavy_modules"] == {"kernel_plugins": []}
    res = next(f for f in data["figures"] if f["name"] == "resolution")
    assert res["extra"]["best"]["kernel_plugins"] is not None
    md = results.with_suffix(".md").read_text()
    assert "| figure | kernel-plugins median | kernels median |" in md
    assert "figure" in done.stdout and "written:" in done.stdout


def test_quick_mode_never_fails_on_a_missed_target(quick_run):
    done, out = quick_run
    data = json.loads(next(out.glob("*.json")).read_text())
    assert done.returncode == 0
    assert any(f["met"] is not None for f in data["figures"])


def test_generated_inputs_are_well_formed():
    names = inputs.many_variant_names(500)
    assert len(names) == len(set(names)) == 500
    for name in names + inputs.variant_names():
        parse_variant(name)
    files = inputs.variant_files("torch213-cxx11-cpu-x86_64-linux")
    meta = json.loads(files["metadata.json"])
    assert meta["name"] == inputs.KERNEL_NAME and meta["backend"] == {"type": "cpu"}
    assert meta["id"] == "_bench_activation_torch213_cxx11_cpu_x86_64_linux"


def test_figure_ratio_target_and_summary():
    f = figures.figure(
        "x",
        "what",
        "s",
        [3.0, 1.0, 2.0],
        [4.0, 4.0],
        target={"text": "<= 0.5x", "kind": "ratio", "max": 0.5},
    )
    assert f["kernel_plugins"]["median"] == 2.0 and f["kernel_plugins"]["iqr"] == 1.0
    assert f["ratio"] == 0.5 and f["target_value"] == 0.5 and f["met"] is True
    f = figures.figure(
        "y", "what", "s", [2e-3], None, target={"text": "< 1 ms", "kind": "absolute", "max": 1e-3}
    )
    assert f["ratio"] is None and f["met"] is False
    f = figures.figure(
        "z", "what", "s", [1.0], None, target={"text": "<= 1x", "kind": "ratio", "max": 1.0}
    )
    assert f["met"] is None  # nothing to compare with


def test_markdown_and_text_table_show_each_figure(tmp_path: Path):
    data = {
        "date": "2000-01-01",
        "mode": "quick",
        "runs": 1,
        "environment": {"kernels": None},
        "inputs": {},
        "skipped": [{"name": "loads", "reason": "olah missing"}],
        "notes": [],
        "figures": [
            figures.figure(
                "import",
                "w",
                "s",
                [0.05],
                [0.5],
                target={"text": "<= 0.3x", "kind": "ratio", "max": 0.3},
            )
        ],
    }
    table = report.text_table(data)
    assert "import" in table and "50 ms" in table and "0.100x" in table and "yes" in table
    md = report.markdown(data)
    assert "| import | 50 ms (IQR 0 ns) | 500 ms (IQR 0 ns) | 0.100x | <= 0.3x |" in md
    assert "skipped loads: olah missing" in md
    written = report.write_results(data, tmp_path, None)
    assert [p.name for p in written] == ["2000-01-01.json", "2000-01-01.md"]
    assert "pip install matplotlib" in json.loads(written[0].read_text())["notes"][0]
