"""``kernel-plugins benchmark`` on the CPU: table, JSON schema, failing loudly on wrong output."""

from __future__ import annotations

import importlib.util
import json

import pytest
from kernel_plugins_benchmark import SCHEMA

from kernel_plugins.cli import main

from .conftest import ACTIVATION_REFERENCE, make_kernel

FAST = ["--iterations", "3", "--warmup", "1", "--min-sample-ms", "0.05", "--no-progress"]
STATS = {"samples", "inner", "median_us", "mean_us", "std_us", "min_us", "iqr_us"}
CHECK = {
    "status",
    "rtol",
    "atol",
    "max_abs_error",
    "max_rel_error",
    "mismatched",
    "elements",
    "message",
}


def _json(capsys) -> dict:
    return json.loads(capsys.readouterr().out)


def test_json_report_follows_the_documented_schema(manager, capsys):
    args = [
        "benchmark",
        str(ACTIVATION_REFERENCE),
        "--functions",
        "silu_and_mul,gelu",
        "--shapes",
        "4x64",
        "2x3x16",
        "--dtype",
        "float32,bfloat16",
        "--json",
        *FAST,
    ]
    assert main(args) == 0
    data = _json(capsys)
    assert set(data) == {
        "schema",
        "ok",
        "emulated",
        "note",
        "kernel",
        "reference",
        "device",
        "settings",
        "environment",
        "results",
        "skipped",
    }
    assert data["schema"] == SCHEMA and data["ok"] is True
    assert data["emulated"] is False and data["note"] is None
    assert data["kernel"]["variant"] == "torch-cpu"
    # the bundled reference is not timed against itself but against the plain formulas
    assert data["reference"]["module"] == data["kernel"]["module_name"] + "._plain"
    assert data["reference"]["path"].endswith("_plain.py")
    device = data["device"]
    assert device["torch_device"] == "cpu" and device["backend"] == "cpu"
    assert "plugin 'cpu'" in device["synchronize"]
    # two syncs per timed sample, 3 samples per function, kernel and reference, 8 cases
    assert device["sync_calls"] >= 2 * 3 * 2 * 8
    assert data["settings"]["dtypes"] == ["float32", "bfloat16"]
    assert data["settings"]["iterations"] == 3 and data["settings"]["warmup"] == 1
    cases = {(r["function"], tuple(r["shape"]), r["dtype"]) for r in data["results"]}
    assert cases == {
        (f, s, d)
        for f in ("gelu", "silu_and_mul")
        for s in ((4, 64), (2, 3, 16))
        for d in ("float32", "bfloat16")
    }
    for r in data["results"]:
        assert set(r) == {"function", "shape", "dtype", "kernel", "reference", "speedup", "speedup_noise", "check"}
        assert set(r["kernel"]) == STATS and set(r["reference"]) == STATS
        assert r["kernel"]["samples"] == 3 and r["kernel"]["inner"] >= 1
        k = r["kernel"]
        assert 0 < k["min_us"] <= k["median_us"] and k["iqr_us"] >= 0 and k["std_us"] >= 0
        assert r["speedup"] == pytest.approx(r["reference"]["median_us"] / k["median_us"], rel=1e-2)
        assert set(r["check"]) == CHECK and r["check"]["status"] == "pass"
        expected = (1.3e-5, 1e-5) if r["dtype"] == "float32" else (1.6e-2, 1e-2)
        assert (r["check"]["rtol"], r["check"]["atol"]) == expected
        assert r["check"]["elements"] > 0 and r["check"]["mismatched"] == 0


def test_human_table_has_one_row_per_case_and_states_the_tolerance(manager, capsys):
    args = [
        "benchmark",
        str(ACTIVATION_REFERENCE),
        "--functions",
        "silu_and_mul",
        "--shapes",
        "4x64,8x32",
        *FAST,
    ]
    assert main(args) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith("function"))
    for column in ("median", "min", "IQR", "ref median", "speed-up", "check"):
        assert column in lines[header]
    assert "mean" not in lines[header] and max(map(len, lines)) <= 100  # --wide has them
    rows = [line for line in lines[header + 2 :] if line.startswith("silu_and_mul")]
    assert [r.split()[1] for r in rows] == ["4x64", "8x32"]
    assert all("pass" in r for r in rows)
    assert "tolerance  float32: rtol=1.3e-05 atol=1e-05" in out
    assert "synchronised by the synchronize hook of plugin 'cpu'" in out
    assert "EMULATED" not in out


def test_wrong_kernel_fails_loudly_naming_function_shape_error_and_tolerance(
    manager, capsys, wrong_kernel
):
    code = main(["benchmark", str(wrong_kernel), "--shapes", "4x64", *FAST])
    captured = capsys.readouterr()
    assert code == 1
    err = captured.err
    assert "silu_and_mul, shape (4, 64), float32" in err
    assert "max abs error 0.01" in err
    assert "rtol=1.3e-05, atol=1e-05" in err
    assert "256 of 256 elements outside the tolerance" not in err  # out is (4, 32)
    assert "128 of 128 elements outside the tolerance" in err
    assert "gelu" not in err.split("do not match")[1]  # the right function is not blamed
    row = next(line for line in captured.out.splitlines() if line.startswith("silu_and_mul"))
    assert "fail (0.01)" in row


def test_wrong_kernel_json_still_printed_and_marks_the_failure(manager, capsys, wrong_kernel):
    code = main(["benchmark", str(wrong_kernel), "--shapes", "4x64", "--json", *FAST])
    assert code == 1
    data = _json(capsys)
    assert data["ok"] is False
    status = {r["function"]: r["check"] for r in data["results"]}
    assert status["gelu"]["status"] == "pass"
    assert status["silu_and_mul"]["status"] == "fail"
    assert status["silu_and_mul"]["max_abs_error"] == pytest.approx(0.01, rel=1e-3)
    assert status["silu_and_mul"]["mismatched"] == 128


def test_a_looser_tolerance_accepts_the_difference(manager, capsys, wrong_kernel):
    code = main(["benchmark", str(wrong_kernel), "--shapes", "4x64", "--atol", "0.02", *FAST])
    assert code == 0
    assert "atol=0.02" in capsys.readouterr().out


def test_kernel_that_raises_is_an_error_naming_it(manager, capsys, tmp_path):
    source = "def silu_and_mul(out, x):\n    raise RuntimeError('boom on purpose')\n"
    repo = make_kernel(tmp_path / "raises", source)
    assert main(["benchmark", str(repo), "--shapes", "4x64", *FAST]) == 1
    err = capsys.readouterr().err
    assert (
        "silu_and_mul, shape (4, 64), float32: the kernel raised RuntimeError: boom on purpose"
        in err
    )


def test_benchmark_convention_builder_reference_and_skipped_functions(manager, capsys, tmp_path):
    source = """
import torch
from kernel_plugins_benchmark import BenchmarkInputs, randn


def scale(x, factor):
    return x * factor


def helper(a, b, c):
    return a


def _inputs(shape, dtype, device):
    return BenchmarkInputs((randn(shape, dtype, device),), {"factor": 3.0})


__benchmark__ = {
    "reference": None,
    "functions": {
        "scale": {"inputs": _inputs, "shapes": [(5, 7)], "reference": lambda x, factor: 3 * x},
    },
}
"""
    repo = make_kernel(tmp_path / "custom", source, name="custom-kernel")
    assert main(["benchmark", str(repo), "--json", *FAST]) == 0
    data = _json(capsys)
    assert data["reference"] is None
    (result,) = data["results"]
    assert result["function"] == "scale" and result["shape"] == [5, 7]
    assert result["check"]["status"] == "pass" and result["check"]["elements"] == 35


def test_functions_without_builder_are_reported_as_skipped(manager, capsys, tmp_path):
    source = (
        "def silu(out, x):\n    out.copy_(x * x.sigmoid())\n    return out\n\n"
        "def helper(a, b, c):\n    return a\n"
    )
    repo = make_kernel(tmp_path / "partial", source)
    assert main(["benchmark", str(repo), "--shapes", "8x8", "--json", *FAST]) == 0
    data = _json(capsys)
    assert [r["function"] for r in data["results"]] == ["silu"]
    assert data["skipped"] == [
        {
            "function": "helper",
            "reason": "no argument builder: describe it in the kernel's __benchmark__",
        }
    ]


def test_unknown_function_lists_the_ones_that_can_be_benchmarked(manager, capsys):
    code = main(["benchmark", str(ACTIVATION_REFERENCE), "--functions", "nope", *FAST])
    assert code == 1
    err = capsys.readouterr().err
    assert "cannot benchmark nope" in err and "silu_and_mul" in err


def test_bad_shape_and_dtype_are_usage_errors(manager, capsys):
    assert main(["benchmark", str(ACTIVATION_REFERENCE), "--shapes", "4xa", *FAST]) == 2
    assert "16x1024" in capsys.readouterr().err
    assert main(["benchmark", str(ACTIVATION_REFERENCE), "--dtype", "int8", *FAST]) == 1
    assert "unknown floating-point dtype 'int8'" in capsys.readouterr().err
    args = [
        "benchmark",
        str(ACTIVATION_REFERENCE),
        "--functions",
        "silu_and_mul",
        "--shapes",
        "4x63",
        *FAST,
    ]
    assert main(args) == 1
    assert "even last one" in capsys.readouterr().err


@pytest.mark.skipif(
    importlib.util.find_spec("matplotlib") is not None, reason="matplotlib is installed"
)
def test_plot_without_matplotlib_says_how_to_install_it(manager, capsys, tmp_path):
    args = ["benchmark", str(ACTIVATION_REFERENCE), "--plot", str(tmp_path / "c.png"), *FAST]
    assert main(args) == 2
    assert "pip install matplotlib" in capsys.readouterr().err
    assert not (tmp_path / "c.png").exists()
