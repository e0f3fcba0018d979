"""Code written for HF ``kernels`` runs unchanged on EMULATED mlu, musa, npu, neuron and tpu
devices (CPU-backed, not real hardware), one fresh interpreter per device."""

from __future__ import annotations

import subprocess

import pytest
from kernel_plugins_testing import run_forked

from tests.support.side_by_side import result_for, run_side_by_side

DEVICES = ("mlu", "musa", "npu", "neuron", "tpu")

# Written as for `kernels`; only the import line differs.
KERNELS_CODE = """
import json, warnings
import torch
from torch import nn
import kernel_plugins.compat.kernels as kernels

@kernels.use_kernel_forward_from_hub("SiluAndMul")
class SiluAndMul(nn.Module):
    def forward(self, x):
        d = x.shape[-1] // 2
        return nn.functional.silu(x[..., :d]) * x[..., d:]

repo = kernels.LayerRepository("kernels-community/activation", layer_name="SiluAndMul", version=1)
kernels.register_kernel_mapping({"SiluAndMul": {kernels.Device(type=NAME): repo, "cpu": repo}})
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(16, 32), SiluAndMul()).to(NAME + ":1")
x = torch.randn(4, 16, device=NAME + ":1")
expected = model(x)
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    kernels.kernelize(model, mode=kernels.Mode.TRAINING)
y = model(x)
y.sum().backward()
act = kernels.get_kernel("kernels-community/activation", version=1, backend=NAME)
prov = act.__kernel_provenance__
# a CPU model on this (emulated) machine gets CPU kernels: the device is the model's
import kernel_plugins
from kernel_plugins.layers import kernel_choice
cpu_model = nn.Sequential(nn.Linear(16, 32), SiluAndMul())
kernels.kernelize(cpu_model, mode=kernels.Mode.INFERENCE)
cpu_choice = kernel_choice(cpu_model[1])
print("RESULT" + json.dumps({
    "equal": bool(torch.equal(y, expected)), "out_device": str(y.device),
    "grad_device": str(model[0].weight.grad.device),
    "forward_module": type(model[1]).forward is not model[1].forward.__func__,
    "source": prov.source, "backend": prov.backend, "emulated": prov.emulated,
    "warned": any("reference kernel" in str(w.message) for w in caught),
    "preferred": kernel_plugins.get_device().backend,
    "cpu_model": [cpu_choice.device.split()[0], cpu_choice.provenance.backend],
}))
"""


def _run(name: str) -> subprocess.CompletedProcess[str]:
    code = f"from kernel_plugins_testing import emulate\nemulate({name!r}, devices=2)\nNAME = {name!r}\n"
    return run_forked(
        code + KERNELS_CODE,
        env={"TORCH_DEVICE_BACKEND_AUTOLOAD": "0", "HF_HUB_OFFLINE": "1"},
        timeout=300,
    )


@pytest.fixture(scope="module")
def results():
    """Every device's run, the interpreters side by side."""
    return run_side_by_side(_run, DEVICES)


@pytest.mark.parametrize("name", DEVICES)
def test_kernels_code_runs_unchanged(name, results):
    r = result_for(results, name)
    assert r == {
        "equal": True, "out_device": f"{name}:1", "grad_device": f"{name}:1",
        "forward_module": True, "source": "reference", "backend": name, "emulated": True,
        "warned": True, "preferred": name, "cpu_model": ["cpu", "cpu"],
    }  # fmt: skip
