"""``kernel-plugins benchmark --emulate mlu``: labelled emulated, timed through the mlu hook.

Runs in a fresh interpreter (one PrivateUse1 device name per process). Needs the mlu
plugin (``plugins/mlu``), which the project's setup installs.
"""

from __future__ import annotations

import json

import pytest
from kernel_plugins_testing import run_forked

from .conftest import ACTIVATION_REFERENCE

pytest.importorskip("kernel_plugins_mlu")

SCRIPT = r"""
import contextlib, io, json, sys
import torch
from kernel_plugins.cli import main

fast = ["--iterations", "3", "--warmup", "1", "--min-sample-ms", "0.05", "--no-progress",
        "--shapes", "4x64", "--emulate", "mlu"]
runs = {}
for label, args in (
    ("json", [REFERENCE, "--functions", "silu_and_mul", "--json"]),
    ("table", [REFERENCE, "--functions", "gelu"]),
    ("wrong", [WRONG, "--json"]),
):
    out, err = io.StringIO(), io.StringIO()
    before = getattr(getattr(torch, "mlu", None), "synchronize_calls", 0)
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["benchmark", *args, *fast])
    runs[label] = {"code": code, "out": out.getvalue(), "err": err.getvalue(),
                   "mlu_syncs": torch.mlu.synchronize_calls - before}
print("@@" + json.dumps(runs))
"""


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    from .conftest import WRONG_ACTIVATION, make_kernel

    wrong = make_kernel(tmp_path_factory.mktemp("emu") / "wrong", WRONG_ACTIVATION)
    code = SCRIPT.replace("REFERENCE", repr(str(ACTIVATION_REFERENCE))).replace(
        "WRONG", repr(str(wrong))
    )
    done = run_forked(code, timeout=180)
    line = next((x for x in done.stdout.splitlines() if x.startswith("@@")), None)
    assert line is not None, done.stderr[-3000:]
    return json.loads(line[2:])


def test_json_is_labelled_emulated_and_runs_on_the_mlu_device(runs):
    run = runs["json"]
    assert run["code"] == 0, run["err"]
    data = json.loads(run["out"])
    assert data["emulated"] is True
    assert "EMULATED" in data["note"] and "nothing about any hardware" in data["note"]
    assert data["device"]["backend"] == "mlu" and data["device"]["torch_device"] == "mlu"
    assert data["kernel"]["backend"] == "mlu" and data["kernel"]["emulated"] is True
    assert data["results"][0]["check"]["status"] == "pass"


def test_timing_synchronises_through_the_mlu_plugin_hook(runs):
    run = runs["json"]
    data = json.loads(run["out"])
    assert "kernel-plugins-mlu" in data["device"]["synchronize"]
    # every sync the engine made reached torch.mlu.synchronize through the plugin
    assert run["mlu_syncs"] == data["device"]["sync_calls"] >= 2 * 3 * 2


def test_table_says_emulated_on_stdout(runs):
    run = runs["table"]
    assert run["code"] == 0, run["err"]
    first, *_, last = run["out"].strip().splitlines()
    assert first.startswith("NOTE: device 'mlu' is EMULATED") and last == first
    assert any(line.startswith("gelu ") and "pass" in line for line in run["out"].splitlines())


def test_wrong_kernel_fails_loudly_under_emulation_too(runs):
    run = runs["wrong"]
    assert run["code"] == 1
    assert "silu_and_mul, shape (4, 64), float32: max abs error 0.01" in run["err"]
    data = json.loads(run["out"])
    assert data["ok"] is False and data["emulated"] is True
