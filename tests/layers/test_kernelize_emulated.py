"""kernelize a transformer block on EMULATED mlu and musa devices (CPU-backed, not real
hardware), one fresh interpreter per device name: outputs equal the un-kernelized CPU model,
backward works in TRAINING mode, TORCH_COMPILE mode compiles with the eager backend, and a
repo with no variant for the device falls back to the reference kernel, saying so."""

from __future__ import annotations

import importlib.util
import json
import os
from pathlib import Path

import pytest
from kernel_plugins_testing import run_forked

LAYERS_TESTS = Path(__file__).resolve().parent

SCENARIO = r"""
import copy, json, sys, warnings
sys.path.insert(0, LAYERS_TESTS)
from kernel_plugins_testing import emulate
emulate(NAME, devices=2)
import torch
import test_layers_transformer as T
from conftest import write_kernel_repo
import kernel_plugins
from kernel_plugins.layers import LocalLayerRepository, Mode, kernel_choice, kernelize, use_kernel_mapping

repo = write_kernel_repo(Path(TMP) / "block", name="block-kernels", layers_code=T.KERNEL_LAYERS,
                         init_code=T.KERNEL_INIT, backend=NAME, variant=f"torch-{NAME}")
# a second variant for another backend must not be chosen
write_kernel_repo(Path(TMP) / "block", name="block-kernels", layers_code="raise RuntimeError('wrong variant')",
                  init_code="from . import layers\n", backend="cuda", variant="torch-cuda")
mapping = {
    "SiluAndMul": {NAME: LocalLayerRepository(repo, layer_name="SiluAndMul")},
    "RMSNorm": {NAME: LocalLayerRepository(repo, layer_name="RMSNorm")},
}
out = {}
dev = kernel_plugins.get_device(NAME)
out["device"] = {"emulated": dev.emulated, "count": dev.count, "backend": dev.backend}

torch.manual_seed(0)
model = T.Block(); reference = copy.deepcopy(model)
model.to(NAME)
with use_kernel_mapping(mapping):
    kernelize(model, mode=Mode.INFERENCE, device=NAME)
y = model(T.X.to(NAME))
out["out_device"] = y.device.type
out["max_diff"] = (y.cpu() - reference(T.X)).abs().max().item()
choice = kernel_choice(model.norm1)
out["uses_kernel"] = [kernel_choice(m).uses_kernel for m in (model.norm1, model.norm2, model.mlp.act)]
out["variant"] = choice.provenance.variant
out["prov_emulated"] = choice.provenance.emulated

torch.manual_seed(0)
train = T.Block(); train_ref = copy.deepcopy(train)
train.to(NAME)
with use_kernel_mapping(mapping):
    kernelize(train, mode=Mode.TRAINING, device=NAME)
train(T.X.to(NAME)).square().sum().backward()
train_ref(T.X).square().sum().backward()
out["grad_diff"] = max((p.grad.cpu() - q.grad).abs().max().item()
                       for p, q in zip(train.parameters(), train_ref.parameters()))

# (the attention block's SDPA does not trace under fake tensors on the emulated device:
# compile the MLP, which holds the kernelized SiluAndMul)
torch.manual_seed(0)
comp = T.MLP(16, 24); comp_ref = copy.deepcopy(comp)
comp.to(NAME)
with use_kernel_mapping(mapping):
    kernelize(comp, mode=Mode.INFERENCE | Mode.TORCH_COMPILE, device=NAME)
compiled = torch.compile(comp, backend="eager")
out["compile_diff"] = (compiled(T.X.to(NAME)).cpu() - comp_ref(T.X)).abs().max().item()

# no variant for this device on the (local) repo -> reference fallback, with a warning
write_kernel_repo(Path(TMP) / "act", name="activation", layers_code="", backend="cuda", variant="torch-cuda")
import os
os.environ["LOCAL_KERNELS"] = f"kernels-community/activation={Path(TMP) / 'act'}"
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    act = kernel_plugins.load("activation", device=NAME)
out["fallback_source"] = act.__kernel_provenance__.source
out["fallback_emulated"] = act.__kernel_provenance__.emulated
out["fallback_warning"] = [str(w.message) for w in caught if "reference kernel" in str(w.message)]
x = torch.randn(3, 8, device=NAME)
o = torch.empty(3, 4, device=NAME)
act.silu_and_mul(o, x)
xc = x.cpu()
out["fallback_exact"] = bool(torch.equal(o.cpu(), torch.nn.functional.silu(xc[:, :4]) * xc[:, 4:]))
print("RESULT" + json.dumps(out))
"""


@pytest.mark.parametrize("name", ["mlu", "musa"])
def test_kernelize_block_on_emulated_device(name, tmp_path):
    if importlib.util.find_spec(f"kernel_plugins_{name}") is None:
        if os.environ.get("CI"):
            pytest.fail(f"kernel-plugins-{name} must be installed in CI")
        pytest.skip(f"kernel-plugins-{name} is not installed (pip install ./plugins/{name})")
    code = f"NAME = {name!r}\nTMP = {str(tmp_path)!r}\nLAYERS_TESTS = {str(LAYERS_TESTS)!r}\nfrom pathlib import Path\n" + SCENARIO
    proc = run_forked(code, env={"TORCH_DEVICE_BACKEND_AUTOLOAD": "0"}, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    line = next(li for li in proc.stdout.splitlines() if li.startswith("RESULT"))
    r = json.loads(line[len("RESULT"):])
    assert r["device"] == {"emulated": True, "count": 2, "backend": name}
    assert r["out_device"] == name
    assert r["uses_kernel"] == [True, True, True]
    assert r["variant"] == f"torch-{name}" and r["prov_emulated"] is True
    assert r["max_diff"] < 1e-5
    assert r["grad_diff"] < 1e-4
    assert r["compile_diff"] < 1e-5
    assert r["fallback_source"] == "reference" and r["fallback_emulated"] is True
    assert r["fallback_warning"] and f"no variant for {name}" in r["fallback_warning"][0]
    assert r["fallback_exact"] is True
