"""Marks placed by the real HF ``kernels`` 0.17.2 (what transformers places when it uses
``kernels``) are honoured by kernel_plugins.kernelize: a tiny Llama whose RMSNorm,
activation and rotary function were marked by ``kernels``' own decorators is served by
kernel code, with bitwise-equal logits.

``kernels`` is not a dependency of kernel-plugins: it is installed (no dependencies, it
imports without them) into a cache folder and put on the child interpreter's path.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from kernel_plugins_testing import run_in_fresh_interpreter

KERNELS_PIN = "0.17.2"

CODE = r"""
import json, warnings
warnings.simplefilter("ignore")
import torch, kernels
import transformers.integrations as integrations
import transformers.integrations.hub_kernels as hub_kernels

# What transformers' decorators are when it uses kernels.
def use_kernelized_func(funcs):
    return kernels.use_kernelized_func(*(funcs if isinstance(funcs, list) else [funcs]))
for name, fn in {"use_kernel_forward_from_hub": kernels.use_kernel_forward_from_hub,
                 "use_kernelized_func": use_kernelized_func}.items():
    setattr(hub_kernels, name, fn)
    setattr(integrations, name, fn)

from transformers import LlamaConfig, LlamaForCausalLM
import kernel_plugins
from kernel_plugins.integrations import transformers as kp_transformers
from kernel_plugins.layers import kernel_choice, register_kernel_mapping

register_kernel_mapping(kp_transformers.default_mapping())
torch.manual_seed(0)
model = LlamaForCausalLM(LlamaConfig(
    vocab_size=64, hidden_size=32, intermediate_size=48, num_hidden_layers=1,
    num_attention_heads=4, num_key_value_heads=2)).eval()
ids = torch.randint(0, 64, (2, 7))
with torch.no_grad():
    expected = model(ids).logits
kernel_plugins.kernelize(model)
attn = model.model.layers[0].self_attn
rotary = next(iter(attn._kernel_funcs.values()))
with torch.no_grad():
    got = model(ids).logits
print("RESULT" + json.dumps({
    "version": kernels.__version__,
    "rotary_class": type(rotary).__module__,
    "served": [kernel_choice(m).uses_kernel for m in
               (rotary, model.model.norm, model.model.layers[0].mlp.act_fn)],
    "equal": bool(torch.equal(expected, got)),
}))
"""


@pytest.fixture(scope="module")
def kernels_path() -> Path:
    target = Path(tempfile.gettempdir()) / f"kernel-plugins-tests-kernels-{KERNELS_PIN}"
    if not (target / "kernels" / "__init__.py").is_file():
        proc = subprocess.run(
            [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target",
             str(target), f"kernels=={KERNELS_PIN}"],
            capture_output=True, text=True, timeout=300, check=False,
        )  # fmt: skip
        if proc.returncode != 0:
            message = f"cannot install kernels=={KERNELS_PIN}: {proc.stderr[-500:]}"
            if os.environ.get("CI"):
                pytest.fail(message)
            pytest.skip(message)
    return target


def test_kernelize_honours_the_marks_hf_kernels_places(kernels_path):
    pytest.importorskip("transformers")
    proc = run_in_fresh_interpreter(
        CODE, env={"PYTHONPATH": str(kernels_path), "HF_HUB_OFFLINE": "1"}
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    line = next(li for li in proc.stdout.splitlines() if li.startswith("RESULT"))
    r = json.loads(line[len("RESULT") :])
    assert r["version"] == KERNELS_PIN
    assert r["rotary_class"].startswith("kernels.")  # the function module kernels built
    assert r["served"] == [True, True, True]
    assert r["equal"] is True
