"""A speed-up whose spread swamps it is labelled noise in the table and the JSON report,
never printed as a plain result (the demo once showed "180.68x" with an IQR 81x the median)."""

from __future__ import annotations

from kernel_plugins_benchmark.measure import Check, Stats
from kernel_plugins_benchmark.report import NOISY_IQR, BenchmarkReport, CaseResult


def stats(median: float, iqr: float) -> Stats:
    return Stats(samples=20, inner=1, median=median, mean=median, std=iqr, min=median / 2, iqr=iqr)


def report(*results: CaseResult) -> BenchmarkReport:
    return BenchmarkReport(kernel={"repo_id": "k", "variant": "torch-cpu", "source": "local"},
                           reference=None, device={"summary": "cpu", "synchronize": "none"},
                           settings={"warmup": 1, "iterations": 20, "min_sample_s": 2e-4,
                                     "dtypes": ["float32"]}, results=list(results))


def case(kernel: Stats, ref: Stats) -> CaseResult:
    return CaseResult("relu", (4, 8), "float32", kernel, ref, Check("pass", 1e-5, 1e-5, 0.0))


def test_a_steady_speed_up_is_reported_plainly() -> None:
    steady = case(stats(1e-5, 1e-6), stats(2e-5, 2e-6))
    assert steady.noise is None and steady.to_dict()["speedup_noise"] is None
    text = report(steady).format_table()
    assert "2.00x" in text and "noise" not in text


def test_a_spread_above_the_limit_on_either_side_marks_the_speed_up_as_noise() -> None:
    edge = NOISY_IQR * 1e-5
    assert case(stats(1e-5, edge), stats(2e-5, 0.0)).noise is None  # at the limit: kept
    for noisy in (case(stats(1e-5, 81e-5), stats(2e-3, 1e-6)), case(stats(1e-5, 0.0), stats(2e-5, 3e-5))):
        side = "kernel" if noisy.kernel.iqr > noisy.kernel.median else "reference"  # type: ignore[union-attr]
        assert noisy.noise is not None and f"the {side}'s spread" in noisy.noise
        assert noisy.to_dict()["speedup_noise"] == noisy.noise
        text = report(noisy).format_table(wide=True)
        assert f"{noisy.speedup:.2f}x (noise)" in text
        assert "noise      relu 4x8 float32: " in text and "rerun on an idle machine" in text
