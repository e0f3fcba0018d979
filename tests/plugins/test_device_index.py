"""The facts of the device asked for: ``cuda:1`` (and every backend's ``type:N``) gives
device N's name, capability and architecture, through the ``detect_device(index)`` hook, to
variant resolution, the architecture step and kernelize's capability ranges.

Machines whose devices differ are described to the built-in backends (torch's device
queries answer per index; no GPU here) and emulated for a plugin backend (MLU, on the CPU,
in its own interpreter). kernels 0.19.1 reads device N's capability for capability ranges
(``_find_capability(device_index)``); the same machine is given to it as the oracle.
"""

from __future__ import annotations

import json
from types import SimpleNamespace
from typing import Any

import pytest
import torch
from torch import nn

from kernel_plugins.detection import get_device
from kernel_plugins.device import DeviceInfo, SystemInfo
from kernel_plugins.errors import DeviceError
from kernel_plugins.hookspecs import hookimpl
from kernel_plugins.layers import (
    CapabilityRange,
    LayerRepository,
    Mode,
    _session,
    kernel_choice,
    kernelize,
    use_kernel_forward_from_hub,
    use_kernel_mapping,
)
from kernel_plugins.resolving import resolve_variants
from tests.layers.conftest import FakeLoader
from tests.support.fakes import fake_backend

LINUX = SystemInfo(cpu="x86_64", os="linux", torch_version=(2, 13), cxx11_abi=True)
CU, ROCM, XPU = (f"torch213-cxx11-{t}-x86_64-linux" for t in ("cu128", "rocm63", "xpu20253"))


def describe(monkeypatch: pytest.MonkeyPatch, module: Any, devices: list[dict[str, Any]], **versions: str | None) -> None:
    """``torch.<module>`` answers for these devices (each: name, capability, other properties)."""
    for attr, value in versions.items():
        monkeypatch.setattr(torch.version, attr, value, raising=False)

    def at(device: object = None) -> dict[str, Any]:
        i = 0 if device is None else device if isinstance(device, int) else torch.device(device).index or 0
        return devices[i]

    answers = {"is_available": lambda: True, "device_count": lambda: len(devices),
               "get_device_name": lambda device=None: at(device)["name"],
               "get_device_capability": lambda device=None: at(device).get("capability", (0, 0)),
               "get_device_properties": lambda device=None: SimpleNamespace(**at(device))}
    for name, fn in answers.items():
        monkeypatch.setattr(module, name, fn, raising=False)


A100, H100 = {"name": "NVIDIA A100", "capability": (8, 0)}, {"name": "NVIDIA H100", "capability": (9, 0)}


@pytest.fixture
def two_cuda(manager: Any, monkeypatch: pytest.MonkeyPatch) -> Any:
    describe(monkeypatch, torch.cuda, [A100, H100], cuda="12.8", hip=None)
    return manager


def test_cuda_n_reports_device_n(two_cuda: Any) -> None:
    one, zero, default = get_device("cuda:1"), get_device("cuda:0"), get_device("cuda")
    assert (one.name, one.capability, one.index, one.torch_device) == ("NVIDIA H100", (9, 0), 1, "cuda:1")
    assert (zero.name, zero.capability, zero.index) == ("NVIDIA A100", (8, 0), 0)
    assert (default.name, default.capability, default.index) == ("NVIDIA A100", (8, 0), None)
    assert get_device(torch.device("cuda", 1)) == one and one.notes == () == zero.notes
    with pytest.raises(DeviceError, match="cuda:2 requested, but cuda has 2 device"):
        get_device("cuda:2")


def test_resolution_and_the_architecture_step_use_device_n(two_cuda: Any) -> None:
    names, archs = [CU, "torch-cuda"], {CU: ["9.0a"]}  # a Hopper-only build
    assert resolve_variants(names, "cuda:1", LINUX, archs=archs).best == CU
    on_a100 = resolve_variants(names, "cuda:0", LINUX, archs=archs)
    assert on_a100.best == "torch-cuda" and "the device's architecture is 8.0" in on_a100.trace()
    assert resolve_variants(names, "cuda", LINUX, archs=archs).best == "torch-cuda"  # device 0


@use_kernel_forward_from_hub("Scale")
class Scale(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * 2


def _layer(tag: float) -> type:
    return type(f"Tag{tag}", (nn.Module,), {"forward": lambda self, x: x + tag})


#: capability ranges, as kernel-plugins and kernels 0.19.1 (capability as major * 10 + minor) write them
RANGES = {"hopper": ((9, 0), (12, 0)), "ampere": ((8, 0), (8, 9)), "any": ((0, 0), (99, 9))}


def test_kernelize_capability_ranges_use_device_n_as_kernels_does(two_cuda: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    loader = FakeLoader()
    monkeypatch.setattr(_session, "_load_kernel", loader)
    for tag, name in enumerate(RANGES):
        loader.add(f"org/{name}", layers={"Scale": _layer(float(tag))})
    mapping = {"Scale": {"cuda": {CapabilityRange(min=lo, max=hi): LayerRepository(f"org/{n}", layer_name="Scale")
                                  for n, (lo, hi) in RANGES.items()}}}
    ours = {}
    with use_kernel_mapping(mapping, inherit_mapping=False):
        for device in ("cuda:0", "cuda:1", torch.device("cuda", 1), "cuda"):
            choice = kernel_choice(kernelize(nn.Sequential(Scale()), mode=Mode.INFERENCE, device=device)[0])
            ours[str(device)] = choice.candidate.repo.repo_id.split("/")[1]
    assert ours == {"cuda:0": "ampere", "cuda:1": "hopper", "cuda": "ampere"}
    kernels_repos = pytest.importorskip("kernels._internals.layer.repos", reason="the pinned kernels is not installed")
    from kernels import CUDAProperties, Device

    theirs = kernels_repos._CUDARepos()
    for name, (lo, hi) in RANGES.items():
        props = CUDAProperties(min_capability=lo[0] * 10 + lo[1], max_capability=hi[0] * 10 + hi[1])
        theirs.insert(Device(type="cuda", properties=props), {Mode.INFERENCE: name})
    assert {f"cuda:{i}": theirs.repos_for_device(i)[Mode.INFERENCE] for i in (0, 1)} == \
        {k: v for k, v in ours.items() if ":" in k}


def test_rocm_and_xpu_n_report_device_n_architecture(manager: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    describe(monkeypatch, torch.cuda, [{"name": "MI210", "capability": (9, 0), "gcnArchName": "gfx90a:sramecc+:xnack-"},
                                       {"name": "MI300X", "capability": (9, 4), "gcnArchName": "gfx942:sramecc+:xnack-"}],
             cuda=None, hip="6.3.42131")
    assert [get_device(f"rocm:{i}").arch for i in (0, 1)] == ["gfx90a", "gfx942"]
    assert get_device("rocm").arch == "gfx90a"
    assert resolve_variants([ROCM, "torch-rocm"], "rocm:1", LINUX, archs={ROCM: ["gfx942"]}).best == ROCM
    assert resolve_variants([ROCM, "torch-rocm"], "rocm:0", LINUX, archs={ROCM: ["gfx942"]}).best == "torch-rocm"
    describe(monkeypatch, torch.xpu, [{"name": "Arc B580", "device_id": 0xE20B}, {"name": "Max 1550", "device_id": 0x0BD5}],
             xpu="20250300")
    assert [(get_device(f"xpu:{i}").arch, get_device(f"xpu:{i}").name) for i in (0, 1)] == [
        ("bmg", "Arc B580"), ("pvc", "Max 1550")]
    assert resolve_variants([XPU, "torch-xpu"], "xpu:1", LINUX, archs={XPU: ["pvc"]}).best == XPU
    assert resolve_variants([XPU, "torch-xpu"], "xpu:0", LINUX, archs={XPU: ["pvc"]}).best == "torch-xpu"


def test_a_plugin_that_knows_no_index_is_noted_and_a_wrong_answer_refused(manager: Any) -> None:
    manager.register(fake_backend("old", count=2), name="old")  # detect_device() without index
    one = get_device("old:1")
    assert one.index == 1 and one.notes == (
        "name, capability and architecture are device 0's: plugin 'old' (unknown distribution ?) "
        "reports no other device's",)
    assert get_device("old:0").notes == () and get_device("old").index is None

    def wrong(index: int | None = None) -> DeviceInfo:
        return DeviceInfo(backend="bad", device_type="bad", count=2, index=0 if index is not None else None)

    mod = fake_backend("bad")
    mod.detect_device = hookimpl(wrong)  # takes the index, answers device 0
    manager.register(mod, name="bad")
    assert get_device("bad:0").index == 0
    with pytest.raises(DeviceError, match=r"the facts of device bad:1 could not be read .*asked for device 1 and "
                                          r"returned device 0"):
        get_device("bad:1")


MLU_SCRIPT = r"""
import json, torch, kernel_plugins
from kernel_plugins_testing import configure_device_module, emulate
from kernel_plugins.layers import CapabilityRange, LayerRepository, Mode
from kernel_plugins.layers.mapping import KernelMapping
from kernel_plugins.plugins import get_manager

emulate("mlu", devices=2)
configure_device_module(torch.mlu, properties=[{"name": "MLU370-X8", "major": 3, "minor": 0},
                                               {"name": "MLU590-H8", "major": 5, "minor": 0}])
get_manager().clear_detection()
from kernel_plugins.detection import system_info
system = system_info()
mapping = KernelMapping().merged({"Scale": {"mlu": {
    CapabilityRange(min=(5, 0)): LayerRepository("org/mlu590", layer_name="Scale"),
    CapabilityRange(max=(4, 9)): LayerRepository("org/mlu370", layer_name="Scale")}}})
out = {}
for asked in ("mlu", "mlu:0", "mlu:1"):
    dev = kernel_plugins.get_device(asked)
    arch = get_manager().list_variants(dev, system)[0]
    names = [arch, "torch-mlu"]
    out[asked] = {"name": dev.name, "capability": list(dev.capability), "arch": dev.arch, "index": dev.index,
                  "emulated": dev.emulated,
                  "best": kernel_plugins.resolve_variants(names, dev, system, archs={arch: ["mtp_592"]}).best == arch,
                  "kernel": mapping.candidates("Scale", dev, Mode.INFERENCE)[0].repo.repo_id}
print(json.dumps(out))
"""


def test_an_emulated_plugin_backend_reports_device_n() -> None:
    """MLU devices of two generations emulated on the CPU: ``mlu:1`` is the MLU590 everywhere."""
    pytest.importorskip("kernel_plugins_mlu", reason="needs pip install ./plugins/mlu")
    pytest.importorskip("kernel_plugins_testing")
    from kernel_plugins_testing import run_forked

    done = run_forked(MLU_SCRIPT, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    mlu370 = {"name": "MLU370-X8", "capability": [3, 0], "arch": "mtp_372", "emulated": True, "best": False,
              "kernel": "org/mlu370"}
    assert out == {"mlu": {**mlu370, "index": None}, "mlu:0": {**mlu370, "index": 0},
                   "mlu:1": {"name": "MLU590-H8", "capability": [5, 0], "arch": "mtp_592", "index": 1,
                             "emulated": True, "best": True, "kernel": "org/mlu590"}}
