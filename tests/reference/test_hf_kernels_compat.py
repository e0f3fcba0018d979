"""The bundled reference repositories and ``examples/relu`` load and kernelize with HF
``kernels`` (the release pinned in pyproject.toml's ``test`` extra) on CPU, and the
example's benchmark scripts run there as with us.

Runs in a fresh interpreter: ``.venv``'s own (the test extra installs the pinned ``kernels``)
or the one ``$KERNEL_PLUGINS_TEST_HF_KERNELS_PYTHON`` names. Without the pinned release the
test is skipped, saying so (and fails under ``CI``). The script gets the paths of
repositories materialised in a temporary folder, so it needs nothing of ours and writes
nothing elsewhere (no bytecode either).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from kernel_plugins.reference import reference_repo
from tests.support.forks import python_c
from tests.support.pins import kernels_pin

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "relu"

PYTHON_ENV = "KERNEL_PLUGINS_TEST_HF_KERNELS_PYTHON"
KERNELS_PIN = kernels_pin()
NEEDS = (
    f"this test needs torch and HF kernels=={KERNELS_PIN} (pyproject.toml's test extra): "
    f"pip install -e '.[test]', or set {PYTHON_ENV} to an interpreter that has them"
)

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

# examples/relu: its layer passes kernels' own validation, its benchmarks run with kernels'
@kernels.use_kernel_forward_from_hub("ReLU")
class ReLU(nn.Module):
    def forward(self, x):
        return F.relu(x)

relu = nn.Sequential(ReLU())
with kernels.use_kernel_mapping({"ReLU": local("relu", "ReLU")}, inherit_mapping=False):
    kernels.kernelize(relu, mode=kernels.Mode.INFERENCE, device="cpu")
report["relu_kernelized"] = relu[0].forward.__func__.__module__
report["relu_exact"] = torch.equal(relu(x), F.relu(x))
from kernels._internals.cli.benchmark import run_benchmark_script
res, _ = run_benchmark_script(repos["relu"] / "benchmarks" / "benchmark_relu.py", iterations=3,
                              warmup=1, cwd=repos["relu"], repo_id=str(repos["relu"]),
                              is_local=True, revision="local")
report["relu_benchmarks"] = {k: [v.iterations, v.verified] for k, v in sorted(res.items())}
print(json.dumps(report))
'''


@pytest.fixture(scope="module")
def kernels_python() -> Path:
    """An interpreter with HF ``kernels`` at the pinned release (see the module doc)."""
    value = os.environ.get(PYTHON_ENV)
    python = Path(value) if value else Path(sys.executable)
    done = subprocess.run([str(python), "-I", "-c", "import kernels; print(kernels.__version__)"],
                          capture_output=True, text=True, check=False)
    if done.returncode != 0 or done.stdout.strip() != KERNELS_PIN:
        message = f"{python} has no kernels=={KERNELS_PIN} ({done.stdout.strip() or done.stderr[-300:]}); {NEEDS}"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    return python


def test_reference_repos_load_and_kernelize_with_hf_kernels(
    kernels_python: Path, tmp_path: Path, monkeypatch
) -> None:
    monkeypatch.setenv("KERNEL_PLUGINS_REFERENCE_CACHE", str(tmp_path / "cache"))
    repos = {n: str(reference_repo(n)) for n in ("activation", "rmsnorm", "rotary")}
    repos["relu"] = str(shutil.copytree(EXAMPLE, tmp_path / "relu"))
    done = python_c(SCRIPT, json.dumps(repos), env=dict(os.environ), cwd=tmp_path, timeout=600,
                    python=kernels_python)
    assert done.returncode == 0, done.stderr[-4000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["version"] == KERNELS_PIN
    assert all(m.endswith("_cpu") for m in report["modules"])  # the torch-cpu noarch variant
    assert report["silu_and_mul_exact"] is True
    assert report["kernelized"] == ["RMSNorm", "SiluAndMul", "FatreluAndMul"]
    assert report["kernelized_exact"] is True
    assert report["relu_kernelized"].endswith(".layers") and report["relu_exact"] is True
    # kernel-plugins runs the same benchmark classes and finds the same workloads
    from kernel_plugins_benchmark.scripts import run_scripts

    ours = run_scripts(repos["relu"], iterations=3, warmup=1)
    assert report["relu_benchmarks"] == {
        w.name: [len(w.times_ms), w.verified] for w in sorted(ours.workloads, key=lambda w: w.name)
    } == {"ReluBenchmark.large": [3, True], "ReluBenchmark.small": [3, True]}
    for name in repos:  # the run left the repositories as the package built them
        if name != "relu":
            assert reference_repo(name) == Path(repos[name])
        assert not list(Path(repos[name]).rglob("__pycache__"))
