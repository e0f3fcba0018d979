"""Which device a machine with several accelerators prefers, in kernels 0.17.2's order.

kernels 0.17.2 checks TPU (``torch.backends.tpu``) before Neuron (``torch.neuron``) and
Neuron before CUDA (``torch.version.cuda``); kernel-plugins says the same through the
backend priorities (tpu 120 > neuron 110 > cuda 100). Detection-level stand-ins show all
three stacks at once in this process (a real process has one PrivateUse1 backend, but a
TPU or Neuron extension can load into a CUDA build of torch). The same facts are then
given to the real kernels 0.17.2 in its own environment (skipped without it, see
``tests/reference/test_hf_kernels_compat.py``).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from kernel_plugins.detection import detect_devices, get_device
from kernel_plugins.device import DeviceInfo, SystemInfo
from kernel_plugins.resolving import resolve_variants
from tests.reference.test_hf_kernels_compat import kernels_python  # noqa: F401 - a fixture

tpu = pytest.importorskip("kernel_plugins_tpu.hooks", reason="needs pip install ./plugins/tpu")
neuron = pytest.importorskip("kernel_plugins_neuron.hooks", reason="needs ./plugins/neuron")
stand_ins = pytest.importorskip("kernel_plugins_testing.stand_ins")

LINUX = SystemInfo(cpu="x86_64", os="linux", torch_version=(2, 13), cxx11_abi=True)
#: Variant names of a repository with something for each of the three backends.
NAMES = ["torch213-cxx11-tpu-x86_64-linux", "torch213-cxx11-cu128-x86_64-linux", "torch-tpu",
         "torch-neuron", "torch-cuda", "torch-universal"]


@pytest.fixture
def three_stacks(manager, monkeypatch: pytest.MonkeyPatch):
    """TPU, Neuron and CUDA stand-ins, with the two plugins registered."""
    monkeypatch.setattr(torch._C, "_get_privateuse1_backend_name", lambda: "privateuseone")
    monkeypatch.setattr(torch.version, "cuda", "12.8")
    for name, value in {"is_available": lambda: True, "device_count": lambda: 1,
                        "get_device_name": lambda i=0: "NVIDIA H100",
                        "get_device_capability": lambda i=0: (9, 0)}.items():
        monkeypatch.setattr(torch.cuda, name, value)
    monkeypatch.delitem(sys.modules, "torch_neuronx", raising=False)
    monkeypatch.setattr(torch, "neuron", stand_ins.build_declared(neuron.NEURON, 1).device_module,
                        raising=False)
    stand = stand_ins.build_declared(tpu.TPU, 1)
    monkeypatch.setitem(sys.modules, "torch_tpu", stand.package)
    monkeypatch.setattr(torch, "tpu", stand.device_module, raising=False)
    monkeypatch.setattr(torch.backends, "tpu", stand.backends["tpu"], raising=False)
    monkeypatch.syspath_prepend(str(stand.site))
    for plugin, name in ((neuron.NEURON, "neuron"), (tpu.TPU, "tpu")):
        assert manager.register(plugin, name=name, distribution=f"kernel-plugins-{name}")
    return manager


def test_tpu_is_preferred_over_neuron_and_cuda(three_stacks, monkeypatch) -> None:
    assert [d.backend for d in detect_devices()][:3] == ["tpu", "neuron", "cuda"]
    assert get_device().backend == "tpu"
    monkeypatch.delattr(torch.backends, "tpu")  # torch_tpu not loaded: Neuron next
    three_stacks.clear_detection()
    assert get_device().backend == "neuron"
    monkeypatch.delattr(torch, "neuron")
    three_stacks.clear_detection()
    assert get_device().backend == "cuda"


def test_the_order_is_kernels_0_17_2s(three_stacks, kernels_python: Path, tmp_path) -> None:  # noqa: F811
    """The real release picks the same backend for the same facts, and resolves TPU alike."""
    done = subprocess.run([str(kernels_python), "-B", "-c", SCRIPT, json.dumps(NAMES)],
                          capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-4000:]
    theirs = json.loads(done.stdout.strip().splitlines()[-1])
    assert theirs["order"] == ["tpu", "neuron", "cuda"]
    assert [d.backend for d in detect_devices()][:3] == theirs["order"]
    device = DeviceInfo(backend="tpu", device_type="tpu", count=1, runtime_version="0.0.51")
    ours = list(resolve_variants(NAMES, device, LINUX).accepted)
    # the same noarch variants in the same order; kernels 0.17.2 would also take an arch
    # variant whose token is "tpu", which no builder makes (TPU kernels ship noarch)
    assert ours == ["torch-tpu", "torch-universal"]
    assert theirs["accepted"] == ["torch213-cxx11-tpu-x86_64-linux", *ours]
    # 0.17.2 has no python-depends section for tpu; kernel-plugins knows jax and libtpu
    assert theirs["tpu_python_depends"] == [] and "jax" in theirs["jax_refused"]
    assert sorted(tpu.TPU.backend_spec().python_depends) == ["jax", "libtpu"]


SCRIPT = r'''
import json, sys, types
import torch
from packaging.version import Version
from kernels import backends, python_deps, variants

order = []
torch.backends.tpu = types.ModuleType("torch.backends.tpu")
torch.neuron = types.ModuleType("torch.neuron")
torch.version.cuda = "12.8"
order.append(backends._backend().name)
del torch.backends.tpu
order.append(backends._backend().name)
del torch.neuron
order.append(backends._backend().name)
parsed = [variants.parse_variant(n) for n in json.loads(sys.argv[1])]
accepted, _ = variants._resolve_variant_for_system(
    parsed, backends.TPU(), "x86_64", "linux", Version("2.13"), True, None)
try:
    python_deps.validate_dependencies("k", ["jax"], backends.TPU())
    refused = ""
except ValueError as e:
    refused = str(e)
print(json.dumps({
    "order": order,
    "accepted": [v.variant_str for v in accepted],
    "tpu_python_depends": sorted(python_deps._DEPENDENCY_DATA.backends.get("tpu", {})),
    "jax_refused": refused,
}))
'''
