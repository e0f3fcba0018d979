"""transformers models (tiny random Llama, Qwen2, Mistral built from configs, no downloads)
kernelized by ``kernel_plugins.kernelize`` after ``kernel_plugins.integrations.transformers.enable()``,
on the CPU and on two EMULATED backends (CPU-backed, not real hardware, device index 1): mlu, a
vendor module's device, and tpu, found through ``torch.accelerator`` (each backend's routing of
the same kernels is tests/reference/test_reference_fast.py's, kernels' code on each is
tests/compat/test_compat_kernels_emulated.py's; the models add nothing per backend). In two
releases: the installed transformers (5.25) with the HF ``kernels`` it requires, whose decorators
place the marks (per-model function wrappers that read ``forward.__func__``), and transformers
5.24 with ``kernels`` blocked, marked by kernel-plugins. One fresh interpreter per device runs
both (see transformers_scenario.py). Every marked layer and the rotary function run kernel code
(the bundled references: the Hub is unreachable here, so each fallback warns); logits, loss and
gradients are bitwise equal to the untouched model's; kernel_choice and get_kernelized_layers
(ours, the compat module's and HF kernels' own) name the same modules and repositories."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from kernel_plugins_testing import run_forked

from tests.support.releases import release
from tests.support.side_by_side import result_for, run_side_by_side

SCENARIO = Path(__file__).with_name("transformers_scenario.py")
MODELS = ("Llama", "Qwen2", "Mistral")
DEVICES = ("cpu", "mlu", "tpu")
OLDER = "5.24.0"  # the last transformers release before kernels became a requirement


def _run(name: str, older: Path) -> subprocess.CompletedProcess[str]:
    argv = ["scenario", name, str(older)]
    code = f"import sys, runpy\nsys.argv = {argv!r}\nrunpy.run_path({str(SCENARIO)!r})"
    return run_forked(
        code, env={"TORCH_DEVICE_BACKEND_AUTOLOAD": "0", "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1"},
        timeout=600,  # about 7 s of CPU each (two transformers imports), side by side
    )


def test_transformers_models_are_served_by_kernels():
    """One test, so that the three interpreters run once (a module fixture shared by one test
    per device would run again on each xdist worker that draws one of them)."""
    pytest.importorskip("transformers")
    pytest.importorskip("kernels")
    older = release("transformers", OLDER)
    results = run_side_by_side(lambda name: _run(name, older), DEVICES)
    for name in DEVICES:
        _check(name, result_for(results, name))


def _check(name: str, r: dict) -> None:
    import transformers

    assert r["device"] == ("cpu" if name == "cpu" else f"{name}:1")
    releases = {"installed": (transformers.__version__, True, "kernels"), "older": (OLDER, False, "kernel_plugins")}
    for release_name, (version, hf_kernels, marks_from) in releases.items():
        run = r[release_name]
        assert (run["transformers"], run["hf_kernels"], run["marks_from"]) == (version, hf_kernels, marks_from)
        for model in MODELS:
            m, where = run[model], (name, release_name, model)
            assert m["logits_equal"] and m["loss_equal"] and m["grads_equal"], where
            # a forward reaches each kernel: 2 norms per layer + the final one, 1 activation, 1 rotary
            assert m["calls"] == {"RMSNorm": 3, "SiLU": 1, "rotary_pos_emb": 1}, where
            assert m["report"] == dict.fromkeys(("layers", "funcs", "repos", "same_everywhere"), True), where
            for mode, rows in (("INFERENCE", m["inference"]), ("TRAINING", m["training"])):
                assert {row[0] for row in rows} == {"RMSNorm", "SiLU", "rotary_pos_emb"}, where
                for layer, from_kernel, chosen_mode, source, emulated in rows:
                    assert from_kernel, (*where, layer, mode)
                    assert chosen_mode == mode and source == "reference"
                    assert emulated is (name != "cpu")
    # the first load of each reference kernel says it is a fallback, naming the layers it
    # serves; once per kernel and process: the next models' kernelize says nothing again
    assert r["installed"]["Llama"]["warnings"] == [
        f"using the portable reference kernel for '{k}' on {r['device']}, serving `{layer}`"
        for k, layer in (("activation", "SiLU"), ("rmsnorm", "RMSNorm"), ("rotary", "rotary_pos_emb"))
    ]
    later = [r["installed"]["Qwen2"], r["installed"]["Mistral"], *(r["older"][m] for m in MODELS)]
    assert all(m["warnings"] == [] for m in later)
