"""transformers models (tiny random Llama, Qwen2, Mistral built from configs, no
downloads) kernelized by ``kernel_plugins.kernelize`` after
``kernel_plugins.integrations.transformers.enable()``: all three on the CPU, Llama on every
EMULATED backend (CPU-backed, not real hardware), one fresh interpreter per device, on
device index 1. Every marked layer and the rotary function run kernel code (the bundled
references: the Hub is unreachable here, so each fallback warns); logits, loss and
gradients are bitwise equal to the untouched model's."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from kernel_plugins_testing import run_in_fresh_interpreter

from tests.support.side_by_side import result_for, run_side_by_side

SCENARIO = Path(__file__).with_name("transformers_scenario.py")
MODELS = ("llama", "qwen2", "mistral")
DEVICES = ("cpu", "mlu", "musa", "npu", "neuron", "tpu")


def _run(name: str) -> subprocess.CompletedProcess[str]:
    code = f"import sys, runpy\nsys.argv = ['scenario', {name!r}]\nrunpy.run_path({str(SCENARIO)!r})"
    return run_in_fresh_interpreter(
        code, env={"TORCH_DEVICE_BACKEND_AUTOLOAD": "0", "HF_HUB_OFFLINE": "1"}, timeout=300
    )


@pytest.fixture(scope="module")
def results():
    """Every device's run, the interpreters side by side."""
    pytest.importorskip("transformers")
    return run_side_by_side(_run, DEVICES)


@pytest.mark.parametrize("name", DEVICES)
def test_transformers_models_are_served_by_kernels(name, results):
    r = result_for(results, name)
    assert r["device"] == ("cpu" if name == "cpu" else f"{name}:1")
    assert set(r) == {"device", *(MODELS if name == "cpu" else MODELS[:1])}
    for model in set(MODELS) & set(r):
        m = r[model]
        assert m["logits_equal"] and m["loss_equal"] and m["grads_equal"], model
        for mode, rows in (("INFERENCE", m["inference"]), ("TRAINING", m["training"])):
            names = {row[0] for row in rows}
            assert names == {"RMSNorm", "SiLU", "rotary_pos_emb"}, (model, names)
            for layer, from_kernel, chosen_mode, source, emulated in rows:
                assert from_kernel, (model, layer, mode)
                assert chosen_mode == mode and source == "reference"
                assert emulated is (name != "cpu")
    # the first load of each reference kernel says it is a fallback, naming the layers it
    # serves; once per kernel and process: the next models' kernelize says nothing again
    assert r["llama"]["warnings"] == [
        f"using the portable reference kernel for '{k}' on {r['device']}, serving `{layer}`"
        for k, layer in (("activation", "SiLU"), ("rmsnorm", "RMSNorm"), ("rotary", "rotary_pos_emb"))
    ]
    if name == "cpu":
        assert r["qwen2"]["warnings"] == r["mistral"]["warnings"] == []
