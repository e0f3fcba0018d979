"""Full emulation of an ``mlu`` device: tensors, models, training, errors.

The PrivateUse1 rename is once per process, so the whole scenario runs in one fresh
interpreter (module-scoped fixture) and each test asserts on what it printed.
Emulation proves device bookkeeping, not vendor kernels.
"""

from __future__ import annotations

import pytest

from .scenario import error_of, run_scenario

SCENARIO = """
import copy, io
import torch
from kernel_plugins import emulation_registry as _emulation
from kernel_plugins_testing import EmulationError, emulate, emulated_devices

dev = emulate("mlu", devices=2, device_name="Test Accel 9000", capability=(5, 0),
              total_memory=1024)
check("backend_name", lambda: torch._C._get_privateuse1_backend_name())

# factories, device index, device type
x = torch.ones(3, device="mlu:1")
check("ones", lambda: [str(x.device), x.device.type, x.device.index, x.tolist()])
check("zeros_default_index", lambda: str(torch.zeros(2, 3, device="mlu").device))
check("arange_shape", lambda: list(torch.arange(4, device="mlu").shape))
check("tensor_literal", lambda: [str(torch.tensor([1, 2], device="mlu:1").device),
                                 torch.tensor([1, 2], device="mlu:1").tolist()])
check("full", lambda: torch.full((2,), 3.5, device="mlu:1").tolist())
check("randn_device", lambda: str(torch.randn(2, 2, device="mlu:1").device))
check("bad_ordinal", lambda: torch.ones(1, device="mlu:2"))
check("is_mlu", lambda: [x.is_mlu, str(torch.ones(1).mlu().device)])
check("repr", lambda: repr(torch.arange(2, dtype=torch.int32, device="mlu:1")))

# indexing and views compute on the right elements
a = torch.arange(6.0).reshape(2, 3).to("mlu:1")
check("t_row", lambda: [a.t()[1].tolist(), str(a.t()[1].device)])
def setitem():
    b = a.clone()
    b[1] = 7.0
    v = b.view(-1)
    v.add_(1)
    return b.tolist()
check("setitem_view", setitem)
check("bool_mask", lambda: a[a > 2].tolist())
check("cpu_index", lambda: a[torch.tensor([1, 0])].tolist())

# in-place and out= hand back the caller's tensor
def identities():
    y = torch.zeros(3, device="mlu:1")
    out = torch.empty(0, device="mlu:1")
    r = torch.add(x, x, out=out)
    return [y.add_(1) is y, r is out, list(out.shape), out.tolist()]
check("identities", identities)

# mixed devices raise like real hardware; CPU scalars and copies do not
check("mixed_cpu", lambda: x + torch.ones(3))
check("mixed_index", lambda: x + torch.ones(3, device="mlu:0"))
check("cpu_scalar", lambda: (x + torch.tensor(2.0)).tolist())
check("copies", lambda: [x.cpu().tolist(), str(x.to("mlu:0").device), str(x.cpu().device)])
check("numpy", lambda: x.numpy())

# a model: forward, backward and optimizer steps equal the CPU reference
torch.manual_seed(0)
ref = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))
model = copy.deepcopy(ref).to("mlu")
inp = torch.randn(5, 4)
def close(dev_tensors, cpu_tensors):
    return all(torch.allclose(d.cpu(), c, atol=1e-6) for d, c in zip(dev_tensors, cpu_tensors))
def params():
    return [[str(p.device), isinstance(p, torch.nn.Parameter), p.requires_grad]
            for p in model.parameters()]
check("params", params)
out_dev = model(inp.to("mlu"))
out_ref = ref(inp)
check("forward", lambda: [str(out_dev.device), close([out_dev], [out_ref])])
out_dev.square().sum().backward()
out_ref.square().sum().backward()
check("backward", lambda: [close([p.grad for p in model.parameters()],
                                 [p.grad for p in ref.parameters()]),
                           str(model[0].weight.grad.device)])
def backward_on_index_1():
    x = torch.ones(3, device="mlu:1", requires_grad=True)
    (x * x).sum().backward()
    (g,) = torch.autograd.grad((x * 3).sum(), x)
    return [str(x.grad.device), x.grad.tolist(), g.tolist()]
check("backward_index_1", backward_on_index_1)
def silu_grad_bits():
    torch.manual_seed(0)
    xc, gc = torch.randn(4, 33), torch.randn(4, 33)
    xd = xc.to("mlu:1").requires_grad_()
    torch.nn.functional.silu(xd).backward(gc.to("mlu:1"))
    xr = xc.clone().requires_grad_()
    torch.nn.functional.silu(xr).backward(gc)
    return torch.equal(xd.grad.cpu(), xr.grad)
check("silu_grad_bitwise", silu_grad_bits)
def sgd():
    opt_dev = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    opt_ref = torch.optim.SGD(ref.parameters(), lr=0.1, momentum=0.9)
    for _ in range(2):
        opt_dev.step()
        opt_ref.step()
    return close(list(model.parameters()), list(ref.parameters()))
check("sgd", sgd)
def data_assign():
    p = model[0].bias
    p.data = torch.full((8,), 2.0, device="mlu")
    return [p.tolist() == [2.0] * 8, (p * 1).sum().item(), isinstance(p, torch.nn.Parameter),
            str(p.device)]
check("data_assign", data_assign)
def data_assign_cpu():
    model[0].bias.data = torch.zeros(8)
check("data_assign_cpu", data_assign_cpu)
check("model_back_to_cpu", lambda: str(model.to("cpu")[0].weight.device))

# compile, autocast, save/load
def compiled():
    def f(u, w):
        return (u * 2 + w).relu().sum(0)
    u = torch.randn(3, 4, device="mlu:1")
    w = torch.randn(3, 4, device="mlu:1")
    r = torch.compile(f, backend="eager", fullgraph=True)(u, w)
    return [str(r.device), torch.allclose(r.cpu(), f(u.cpu(), w.cpu()))]
check("compile", compiled)
def amp():
    with torch.autocast("mlu", dtype=torch.bfloat16):
        r = torch.ones(2, 2, device="mlu") @ torch.ones(2, 2, device="mlu")
    return [str(r.dtype), str(r.device)]
check("autocast", amp)
def save_load():
    buf = io.BytesIO()
    torch.save({"w": a}, buf)
    buf.seek(0)
    w = torch.load(buf)["w"]
    return [str(w.device), w.tolist()]
check("save_load", save_load)

# the torch.mlu module and the process-wide records
mod = torch.mlu
def module_facts():
    props = mod.get_device_properties(1)
    return {
        "count": mod.device_count(), "available": mod.is_available(),
        "name": props.name, "total_memory": props.total_memory,
        "capability": list(mod.get_device_capability(1)),
        "device_name": mod.get_device_name(0),
        "emulated": mod.__kernel_plugins_emulated__,
        "accelerator": str(torch.accelerator.current_accelerator()),
    }
check("module", module_facts)
def sync():
    before = mod.synchronize_calls
    mod.synchronize()
    mod.synchronize("mlu:1")
    return mod.synchronize_calls - before
check("synchronize", sync)
def current():
    with mod.device(1):
        inside = [mod.current_device(), str(torch.ones(1, device="mlu").device)]
    return [inside, mod.current_device()]
check("current_device", current)
def seeded():
    mod.manual_seed(7)
    first = torch.randn(3, device="mlu").tolist()
    mod.manual_seed(7)
    return first == torch.randn(3, device="mlu").tolist()
check("manual_seed", seeded)
check("is_emulated", lambda: [_emulation.is_emulated("mlu"), _emulation.emulated_count("mlu")])
check("idempotent", lambda: emulate("mlu", devices=2, device_name="Test Accel 9000",
                                    capability=(5, 0), total_memory=1024) is dev)
check("emulated_devices", lambda: [(d.name, d.devices, dict(d.facts)) for d in emulated_devices()])
check("joins", lambda: emulate("mlu") is dev)
def other_count():
    try:
        emulate("mlu", devices=3)
    except EmulationError as e:
        return str(e)
check("other_count", other_count)
def second_name():
    try:
        emulate("foo")
    except EmulationError as e:
        return ["EmulationError", str(e), torch._C._get_privateuse1_backend_name()]
check("second_name", second_name)
"""


@pytest.fixture(scope="module")
def mlu() -> dict:
    """What the ``mlu`` scenario printed."""
    return run_scenario(SCENARIO)


def test_factories_create_tensors_on_the_requested_device(mlu: dict) -> None:
    assert mlu["backend_name"] == "mlu"
    assert mlu["ones"] == ["mlu:1", "mlu", 1, [1.0, 1.0, 1.0]]
    assert mlu["zeros_default_index"] == "mlu:0"
    assert mlu["arange_shape"] == [4]
    assert mlu["tensor_literal"] == ["mlu:1", [1, 2]]
    assert mlu["full"] == [3.5, 3.5]
    assert mlu["randn_device"] == "mlu:1"
    assert mlu["is_mlu"] == [True, "mlu:0"]
    assert mlu["repr"] == "tensor([0, 1], device='mlu:1', dtype=torch.int32)"


def test_device_index_beyond_count_is_refused(mlu: dict) -> None:
    err = error_of(mlu["bad_ordinal"])
    assert err is not None and err[0] == "RuntimeError"
    assert "invalid device ordinal 2" in err[1]


def test_views_and_indexing_read_the_right_elements(mlu: dict) -> None:
    assert mlu["t_row"] == [[1.0, 4.0], "mlu:1"]
    assert mlu["setitem_view"] == [[1.0, 2.0, 3.0], [8.0, 8.0, 8.0]]
    assert mlu["bool_mask"] == [3.0, 4.0, 5.0]
    assert mlu["cpu_index"] == [[3.0, 4.0, 5.0], [0.0, 1.0, 2.0]]


def test_in_place_and_out_return_the_callers_tensor(mlu: dict) -> None:
    assert mlu["identities"] == [True, True, [3], [2.0, 2.0, 2.0]]


def test_mixing_devices_raises_like_hardware(mlu: dict) -> None:
    for key, other in (("mixed_cpu", "cpu"), ("mixed_index", "mlu:0")):
        err = error_of(mlu[key])
        assert err is not None and err[0] == "RuntimeError", mlu[key]
        assert "Expected all tensors to be on the same device" in err[1]
        assert "mlu:1" in err[1] and other in err[1]
    assert mlu["cpu_scalar"] == [3.0, 3.0, 3.0]
    assert mlu["copies"] == [[1.0, 1.0, 1.0], "mlu:0", "cpu"]


def test_numpy_is_refused_like_hardware(mlu: dict) -> None:
    import importlib.util
    import os

    if importlib.util.find_spec("numpy") is None:  # torch then refuses .numpy() for that
        need = "this test needs numpy (the test extra installs it: pip install -e '.[test]')"
        if os.environ.get("CI"):
            pytest.fail(f"CI is set, so it must not be skipped: {need}", pytrace=False)
        pytest.skip(need)
    err = error_of(mlu["numpy"])
    assert err is not None and err[0] == "TypeError"
    assert "can't convert mlu:1 device type tensor to numpy" in err[1]


def test_model_to_device_and_forward_match_cpu(mlu: dict) -> None:
    assert mlu["params"] == [["mlu:0", True, True]] * 4
    assert mlu["forward"] == ["mlu:0", True]
    assert mlu["model_back_to_cpu"] == "cpu"


def test_backward_and_optimizer_steps_match_cpu(mlu: dict) -> None:
    assert mlu["backward"] == [True, "mlu:0"]
    assert mlu["sgd"] is True


def test_parameter_data_assignment(mlu: dict) -> None:
    assert mlu["data_assign"] == [True, 16.0, True, "mlu:0"]
    err = error_of(mlu["data_assign_cpu"])
    assert err is not None and "incompatible tensor type" in err[1]


def test_compile_autocast_and_save_load(mlu: dict) -> None:
    assert mlu["compile"] == ["mlu:1", True]
    assert mlu["autocast"] == ["torch.bfloat16", "mlu:0"]
    assert mlu["save_load"] == ["mlu:1", [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]]


def test_device_module_reports_the_emulated_facts(mlu: dict) -> None:
    assert mlu["module"] == {
        "count": 2,
        "available": True,
        "name": "Test Accel 9000",
        "total_memory": 1024,
        "capability": [5, 0],
        "device_name": "Test Accel 9000",
        "emulated": True,
        "accelerator": "mlu",
    }
    assert mlu["synchronize"] == 2
    assert mlu["current_device"] == [[1, "mlu:1"], 0]
    assert mlu["manual_seed"] is True


def test_emulation_is_recorded_and_idempotent(mlu: dict) -> None:
    assert mlu["is_emulated"] == [True, 2]
    assert mlu["idempotent"] is True
    assert mlu["joins"] is True  # no count, no facts: join the existing set-up
    facts = {"device_name": "Test Accel 9000", "capability": [5, 0], "total_memory": 1024}
    assert mlu["emulated_devices"] == [["mlu", 2, facts]]
    assert "already emulated" in mlu["other_count"] and "devices=2" in mlu["other_count"]


def test_a_second_device_name_is_refused(mlu: dict) -> None:
    kind, message, backend_name = mlu["second_name"]
    assert kind == "EmulationError"
    assert "'mlu'" in message and "fresh interpreter" in message
    assert backend_name == "mlu"


def test_backward_works_on_every_device_index(mlu: dict) -> None:
    assert mlu["backward_index_1"] == ["mlu:1", [2.0, 2.0, 2.0], [3.0, 3.0, 3.0]]


def test_gradients_match_the_cpu_bit_for_bit(mlu: dict) -> None:
    # silu_backward has a CPU kernel and a decomposition; the CPU kernel is used
    assert mlu["silu_grad_bitwise"] is True
