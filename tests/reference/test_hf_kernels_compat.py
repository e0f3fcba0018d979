"""The bundled reference repositories load and kernelize with HF ``kernels`` 0.17.2 on CPU.

Runs in the ``benchmarks/.work/venv-kernels`` environment (torch and ``kernels`` from
PyPI, no kernel-plugins), created the way the benchmark suite creates it when missing.
The script gets the materialised repositories' paths, so it needs nothing of ours.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from kernel_plugins.reference import reference_repo

ROOT = Path(__file__).resolve().parents[2]

SCRIPT = r'''
import json, sys, warnings
from pathlib import Path
import torch, torch.nn as nn, torch.nn.functional as F
import kernels

repos = {k: Path(v) for k, v in json.loads(sys.argv[1]).items()}
report = {"version": kernels.__version__}
warnings.simplefilter("error", DeprecationWarning)

act = kernels.get_local_kernel(repos["activation"])
rms = kernels.get_local_kernel(repos["rmsnorm"])
rot = kernels.get_local_kernel(repos["rotary"])
report["modules"] = [m.__name__ for m in (act, rms, rot)]
x = torch.randn(6, 32)
report["silu_and_mul_exact"] = torch.equal(
    act.silu_and_mul(torch.empty(6, 16), x), F.silu(x[:, :16]) * x[:, 16:])

@kernels.use_kernel_forward_from_hub("SiluAndMul")
class SiluAndMul(nn.Module):
    def forward(self, x):
        return F.silu(x[..., : x.shape[-1] // 2]) * x[..., x.shape[-1] // 2 :]

@kernels.use_kernel_forward_from_hub("FatreluAndMul")
class FatreluAndMul(nn.Module):
    def __init__(self, threshold):
        super().__init__()
        self.threshold = threshold
    def forward(self, x):
        d = x.shape[-1] // 2
        return F.threshold(x[..., :d], self.threshold, 0.0) * x[..., d:]

@kernels.use_kernel_forward_from_hub("RMSNorm")
class RMSNorm(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(n))
        self.variance_epsilon = 1e-6
    def forward(self, x):
        h = x.float()
        h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + self.variance_epsilon)
        return self.weight * h.to(x.dtype)

model = nn.Sequential(RMSNorm(32), SiluAndMul(), FatreluAndMul(0.2))
expected = model(x)
local = lambda repo, layer: {"cpu": kernels.LocalLayerRepository(repo_path=repos[repo], layer_name=layer)}
mapping = {
    "SiluAndMul": local("activation", "SiluAndMul"),
    "FatreluAndMul": local("activation", "FatreluAndMul"),
    "RMSNorm": local("rmsnorm", "RMSNorm"),
}
with kernels.use_kernel_mapping(mapping, inherit_mapping=False):
    kernels.kernelize(model, mode=kernels.Mode.TRAINING, device="cpu")
report["kernelized"] = [type(m).__name__ for m in model if m.forward.__func__.__module__.startswith("_")]
report["kernelized_exact"] = torch.equal(model(x), expected)
print(json.dumps(report))
'''


@pytest.fixture(scope="module")
def kernels_python() -> Path:
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        from harness.envs import ensure_kernels_env
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    try:
        env = ensure_kernels_env(say=lambda _msg: None)
    except RuntimeError as e:  # no package index reachable: nothing to test against
        pytest.skip(f"cannot create the kernels environment: {e}")
    return env.python


def test_reference_repos_load_and_kernelize_with_hf_kernels(kernels_python: Path) -> None:
    repos = {n: str(reference_repo(n)) for n in ("activation", "rmsnorm", "rotary")}
    done = subprocess.run(
        [str(kernels_python), "-c", SCRIPT, json.dumps(repos)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["version"] == "0.17.2"
    assert all(m.endswith("_cpu") for m in report["modules"])  # the torch-cpu noarch variant
    assert report["silu_and_mul_exact"] is True
    assert report["kernelized"] == ["RMSNorm", "SiluAndMul", "FatreluAndMul"]
    assert report["kernelized_exact"] is True
