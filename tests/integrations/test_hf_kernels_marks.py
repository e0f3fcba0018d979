"""Marks placed by the real HF ``kernels`` 0.17.2 (what transformers places when it uses
``kernels``) are honoured by kernel_plugins.kernelize: a tiny Llama whose RMSNorm,
activation and rotary function were marked by ``kernels``' own decorators is served by
kernel code, with bitwise-equal logits.

``kernels`` is not a dependency of kernel-plugins: the child interpreter gets only its
package, from the second environment the test script builds (``$KERNEL_PLUGINS_TEST_HF_KERNELS_PYTHON``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from kernel_plugins_testing import run_in_fresh_interpreter

KERNELS_PIN = "0.17.2"
PYTHON_ENV = "KERNEL_PLUGINS_TEST_HF_KERNELS_PYTHON"

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
def kernels_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder holding only the ``kernels`` package of the second environment (the one
    ``$KERNEL_PLUGINS_TEST_HF_KERNELS_PYTHON`` names, which scripts/test.sh builds), for the
    child interpreter's path: nothing is installed while the tests run."""
    python = os.environ.get(PYTHON_ENV)
    problem = f"this test needs {PYTHON_ENV} (scripts/test.sh sets it to a Python with HF kernels {KERNELS_PIN})"
    if python:
        probe = ("import importlib.util as u, sys; s = u.find_spec('kernels'); "
                 "print('%d.%d' % sys.version_info[:2]); print(s.submodule_search_locations[0] if s else '')")
        proc = subprocess.run([python, "-c", probe], capture_output=True, text=True, timeout=60, check=False)
        version, package = (proc.stdout.splitlines() + ["", ""])[:2]
        ours = f"{sys.version_info[0]}.{sys.version_info[1]}"
        problem = (f"{python} has no kernels package ({proc.stderr[-300:]})" if not package else
                   f"{python} is Python {version}, this one {ours}: the package cannot be shared" if version != ours
                   else "")
    if problem:
        if os.environ.get("CI"):
            pytest.fail(problem)
        pytest.skip(problem)
    target = tmp_path_factory.mktemp("hf-kernels")
    for found in (Path(package), *Path(package).parent.glob("kernels-*.dist-info")):  # its metadata too
        (target / found.name).symlink_to(found, target_is_directory=True)
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
