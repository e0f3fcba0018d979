"""Which device a machine with several accelerators prefers, in kernels' order.

kernels checks TPU (0.17.2: ``torch.backends.tpu``; 0.19: ``torch.accelerator``) before Neuron
(``torch.neuron``) and Neuron before CUDA (``torch.version.cuda``); kernel-plugins says the same through the
backend priorities (tpu 120 > neuron 110 > cuda 100). Detection-level stand-ins show all
three stacks at once in this process (a real process has one PrivateUse1 backend, but a
TPU or Neuron extension can load into a CUDA build of torch). The same facts are then
given to the pinned kernels release, in this process.
"""

from __future__ import annotations

import sys
from types import SimpleNamespace

import pytest
import torch

from kernel_plugins.detection import detect_devices, get_device
from kernel_plugins.device import DeviceInfo, SystemInfo
from kernel_plugins.resolving import resolve_variants

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


def test_the_order_is_the_pinned_kernels_releases(three_stacks, monkeypatch) -> None:
    """The real release (in this process) picks the same backend for the same facts, and
    resolves TPU alike: kernels 0.19 asks ``torch.accelerator`` for TPU, then ``torch.neuron``,
    then ``torch.version.cuda``."""
    kernels = pytest.importorskip("kernels._internals.backends", reason="the pinned kernels is not installed")
    from kernels._internals import python_deps, variants
    from packaging.version import Version

    monkeypatch.setattr(torch.accelerator, "current_accelerator", lambda *a, **k: SimpleNamespace(type="tpu"))
    order = [kernels._backend().name]
    monkeypatch.setattr(torch.accelerator, "current_accelerator", lambda *a, **k: None)
    order.append(kernels._backend().name)
    monkeypatch.delattr(torch, "neuron")
    order.append(kernels._backend().name)
    assert order == ["tpu", "neuron", "cuda"]
    monkeypatch.setattr(torch, "neuron", stand_ins.build_declared(neuron.NEURON, 1).device_module, raising=False)
    three_stacks.clear_detection()
    assert [d.backend for d in detect_devices()][:3] == order
    parsed = [variants.parse_variant(n) for n in NAMES]
    theirs, _ = variants._resolve_variant_for_system(parsed, kernels.TPU(), "x86_64", "linux", Version("2.13"), True, None)
    device = DeviceInfo(backend="tpu", device_type="tpu", count=1, runtime_version="0.0.51")
    ours = list(resolve_variants(NAMES, device, LINUX).accepted)
    # the same noarch variants in the same order; kernels would also take an arch variant
    # whose token is "tpu", which no builder makes (TPU kernels ship noarch)
    assert ours == ["torch-tpu", "torch-universal"]
    assert [v.variant_str for v in theirs] == ["torch213-cxx11-tpu-x86_64-linux", *ours]
    # kernels has no python-depends section for tpu; kernel-plugins knows jax and libtpu
    assert python_deps._DEPENDENCY_DATA.backends.get("tpu", {}) == {}
    with pytest.raises(ValueError, match="unsupported kernel dependency: jax"):
        python_deps.validate_dependencies("k", ["jax"], kernels.TPU())
    assert sorted(tpu.TPU.backend_spec().python_depends) == ["jax", "libtpu"]
