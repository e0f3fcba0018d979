"""The reference kernels' direct and blocked paths (``_fast``): taken when they should be,
bitwise the plain formula always.

The paths are checked to be *taken* (not silently skipped) by counting calls into them,
and to be skipped for small inputs, under autograd, on tensor subclasses and for ``out``
tensors they must not write into directly. Routing on emulated devices runs in fresh
interpreters.
"""

from __future__ import annotations

import json
import sys

import pytest
import torch
import torch.nn.functional as F
from kernel_plugins_testing import run_forked

from tests.reference.samples import bitwise as _bitwise
from tests.reference.samples import sample_input as _input
from tests.reference.samples import spy

DTYPES = [torch.float32, torch.bfloat16, torch.float16]
# rows x columns of the input: a wide tail (1030 % 16 != 0), few long rows, many short rows
SHAPES = [(300, 1030), (3, 40000), (4096, 24)]


def _ops_module(kernel) -> object:
    return sys.modules[kernel.__name__ + "._ops"]


@pytest.fixture
def fast_calls(activation, monkeypatch):
    """Counts the activation direct path's calls (it still runs)."""
    ops = _ops_module(activation)
    calls: list[str] = []
    real = ops.act_into

    def counting(spec, out, x, params):
        calls.append(spec.name)
        return real(spec, out, x, params)

    monkeypatch.setattr(ops, "act_into", counting)
    return calls


def _native(activation, name: str, x: torch.Tensor, threshold: float = 0.3) -> torch.Tensor:
    """The plain formula with native ops (the definitions in ``_native``)."""
    ops = _ops_module(activation)
    spec = next(s for s in ops.ACTIVATIONS if s.name == name)
    return ops._forward(spec, x, (threshold,) if spec.params else ())


def _run(activation, name: str, x: torch.Tensor, threshold: float = 0.3) -> torch.Tensor:
    gated = "_and_" in name
    out = torch.full((*x.shape[:-1], x.shape[-1] // 2) if gated else x.shape, 7.0, dtype=x.dtype)
    fn = getattr(activation, name)
    return fn(out, x, threshold) if name == "fatrelu_and_mul" else fn(out, x)


ACTIVATIONS = [
    "silu_and_mul",
    "mul_and_silu",
    "gelu_and_mul",
    "gelu_tanh_and_mul",
    "fatrelu_and_mul",
    "silu",
    "gelu",
    "gelu_tanh",
    "gelu_fast",
    "gelu_new",
    "gelu_quick",
]


@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("name", ACTIVATIONS)
def test_fast_activation_is_bitwise_the_native_formula(activation, fast_calls, name, dtype, shape):
    x = _input(shape, dtype)
    got = _run(activation, name, x)
    # the fast path ran, except for the long 16-bit formulas (bound by conversions there)
    wide_only = name in ("gelu_fast", "gelu_new") and dtype != torch.float32
    assert fast_calls == ([] if wide_only else [name])
    assert _bitwise(got, _native(activation, name, x))


def test_activation_matches_torch_functional_bitwise_on_large_inputs(activation, fast_calls):
    x = _input((512, 2048), torch.bfloat16)
    assert _bitwise(_run(activation, "silu_and_mul", x), F.silu(x[:, :1024]) * x[:, 1024:])
    assert _bitwise(_run(activation, "gelu", x), F.gelu(x))
    assert fast_calls == ["silu_and_mul", "gelu"]


def test_small_inputs_take_the_plain_formula(activation, fast_calls):
    x = _input((7, 512), torch.float32)  # below _fast.MIN_ELEMENTS
    assert _bitwise(_run(activation, "gelu_and_mul", x), _native(activation, "gelu_and_mul", x))
    assert fast_calls == []


def test_autograd_takes_the_plain_formula_and_gradients_are_right(activation, fast_calls):
    x = _input((300, 1030), torch.float32).nan_to_num(0.0, 0.0, 0.0).requires_grad_()
    layer = activation.layers.SiluAndMul()
    y = layer(x)
    y.sum().backward()
    assert fast_calls == []
    xr = x.detach().requires_grad_()
    (F.silu(xr[:, :515]) * xr[:, 515:]).sum().backward()
    assert torch.equal(x.grad, xr.grad)


@pytest.mark.parametrize("case", ["aliased", "strided", "dtype"])
def test_out_that_cannot_be_written_directly_is_handled_by_the_plain_formula(
    activation, fast_calls, case
):
    x = _input((300, 1030), torch.float32)
    expected = _native(activation, "silu_and_mul", x)
    if case == "aliased":  # out is the first half of x itself
        out = x[:, :515]
        activation.silu_and_mul(out, x)
        assert _bitwise(x[:, :515], expected)
    elif case == "strided":
        out = torch.empty(515, 300).t()
        activation.silu_and_mul(out, x)
        assert _bitwise(out, expected)
    else:
        out = torch.empty(300, 515, dtype=torch.float64)
        activation.silu_and_mul(out, x)
        assert _bitwise(out, expected.double())
    assert fast_calls == []


def test_declared_batch_invariance_holds_on_the_fast_path(activation, fast_calls):
    x = _input((512, 2048), torch.float32)
    whole = _run(activation, "fatrelu_and_mul", x)
    for i in (0, 17, 511):
        alone = _run(activation, "fatrelu_and_mul", x[i : i + 1])  # small: plain formula
        assert _bitwise(whole[i : i + 1], alone)
    assert fast_calls == ["fatrelu_and_mul"]


@pytest.mark.parametrize("name", ACTIVATIONS)
def test_fast_activation_is_deterministic(activation, name):
    x = _input((300, 1030), torch.bfloat16)
    assert _bitwise(_run(activation, name, x), _run(activation, name, x))


# ---------------------------------------------------------------- rmsnorm


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_rmsnorm_on_a_large_input_is_the_plain_formula(rmsnorm, dtype):
    """RMSNorm has no fast path (blocks would reduce rows in another order): bitwise."""
    x = _input((2048, 2048), dtype).nan_to_num(0.0, 0.0, 0.0)
    w = _input((2048,), dtype, seed=1).nan_to_num(0.0, 0.0, 0.0)
    out, rstd = rmsnorm.ops.apply_rms_norm(x, w, 1e-6)
    hidden = x.float()
    want_rstd = torch.rsqrt(hidden.pow(2).mean(-1, keepdim=True) + 1e-6)
    assert _bitwise(out, w * (hidden * want_rstd).to(dtype))
    assert _bitwise(rstd, want_rstd.squeeze(-1))
    assert _bitwise(rmsnorm.apply_rms_norm(x, w, 1e-6), rmsnorm._plain.apply_rms_norm(x, w, 1e-6))


# ---------------------------------------------------------------- rotary


@pytest.fixture
def rotary_blocks(rotary, monkeypatch):
    """Whether the blocked path took each call."""
    ops = _ops_module(rotary)
    calls: list[bool] = []
    spy(monkeypatch, ops, "_blocked", calls)
    return calls


def _rotate_in_layout(rotary, layout: str, dtype, conj: bool, half: int) -> None:
    """Rotate the first ``2 * half`` elements of each head of a (2, 256, 8, 128) input
    with angles per position and head or broadcast over heads (``layout``), into new
    outputs or in place; bitwise the plain formula, the rest of the input untouched."""
    q = _input((2, 256, 8, 128), dtype).nan_to_num(0.0, 0.0, 0.0)
    angles = (256, 1, half) if layout == "broadcast_angles" else (2, 256, 8, half)
    cos, sin = _input(angles, dtype, 1), _input(angles, dtype, 2)
    x1, x2 = q[..., :half], q[..., half : 2 * half]
    e1, e2 = _rotate_plain(x1, x2, cos, sin, conj)
    rest = q[..., 2 * half :].clone()
    if layout == "in_place_views":
        rotary.apply_rotary(x1, x2, cos, sin, x1, x2, conj)
        o1, o2 = x1, x2
    else:
        o1, o2 = torch.empty_like(e1), torch.empty_like(e2)
        rotary.apply_rotary(x1, x2, cos, sin, o1, o2, conj)
    assert _bitwise(o1, e1) and _bitwise(o2, e2)
    assert torch.equal(q[..., 2 * half :], rest)


def _rotate_plain(x1, x2, cos, sin, conj):
    s = -sin if conj else sin
    return x1 * cos - x2 * s, x2 * cos + x1 * s


@pytest.mark.parametrize("conj", [False, True])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
@pytest.mark.parametrize("layout", ["contiguous", "in_place_views", "broadcast_angles"])
def test_fast_rotary_is_bitwise_the_formula(
    rotary, rotary_blocks, low_thresholds, layout, dtype, conj
):
    _rotate_in_layout(rotary, layout, dtype, conj, half=60)
    assert rotary_blocks == [True]  # in blocks, in place or not


def test_rotary_swapped_outputs_and_small_inputs(rotary, rotary_blocks, low_thresholds):
    x1, x2 = _input((512, 256), torch.float32), _input((512, 256), torch.float32, 1)
    x1, x2 = x1.nan_to_num(0.0, 0.0, 0.0), x2.nan_to_num(0.0, 0.0, 0.0)
    cos, sin = _input((512, 256), torch.float32, 2), _input((512, 256), torch.float32, 3)
    e1, e2 = _rotate_plain(x1, x2, cos, sin, False)
    rotary.apply_rotary(x1, x2, cos, sin, x2, x1, False)  # out1 is x2, out2 is x1
    assert _bitwise(x2, e1) and _bitwise(x1, e2)
    small = torch.ones(4, 8)
    rotary.apply_rotary(
        small, small.clone(), small, small, torch.empty(4, 8), torch.empty(4, 8), False
    )
    assert rotary_blocks == [True, False]


# ---------------------------------------------------------------- emulated devices

ROUTING = r"""
import json, sys, warnings
import torch
from kernel_plugins_testing import emulate
NAME = sys.argv[1]
emulate(NAME, devices=1)
import kernel_plugins
from kernel_plugins.reference import reference_repo
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    act = kernel_plugins.load(reference_repo("activation"), device=NAME)
    rot = kernel_plugins.load(reference_repo("rotary"), device=NAME)
    rms = kernel_plugins.load(reference_repo("rmsnorm"), device=NAME)
fast = sys.modules[act.__name__ + "._fast"]
ops = sys.modules[act.__name__ + "._ops"]
calls = []
real = ops.act_into
ops.act_into = lambda *a: (calls.append(a[0].name), real(*a))[1]
gen = torch.Generator().manual_seed(0)
x_cpu = torch.randn(256, 1024, generator=gen)
x = x_cpu.to(NAME)
out = torch.empty(256, 512, device=NAME)
act.silu_and_mul(out, x)
d = 512
cos, sin = torch.randn(256, 512, generator=gen).to(NAME), torch.randn(256, 512, generator=gen).to(NAME)
o1, o2 = torch.empty(256, 512, device=NAME), torch.empty(256, 512, device=NAME)
rot.apply_rotary(x[:, :d], x[:, d:], cos, sin, o1, o2, False)
w = torch.randn(1024, generator=gen).to(NAME)
y = rms.apply_rms_norm(x, w, 1e-6)
xb = x_cpu.bfloat16()
yb = rms.apply_rms_norm(xb.to(NAME), w.cpu().bfloat16().to(NAME), 1e-6)
route = fast.route(x)
rms_plain = rms.ops.apply_rms_norm(xb, w.cpu().bfloat16(), 1e-6)[0]
print(json.dumps({
    "rms_bf16_exact": torch.equal(yb.cpu(), rms_plain),
    "variant": act.__kernel_provenance__.variant,
    "emulated": act.__kernel_provenance__.emulated,
    "route": route,
    "may_alias": fast.may_alias(out, x),
    "device": str(out.device),
    "calls": calls,
    "silu_exact": torch.equal(out.cpu(), torch.nn.functional.silu(x_cpu[:, :d]) * x_cpu[:, d:]),
    "rotary_exact": torch.equal(o1.cpu(), x_cpu[:, :d] * cos.cpu() - x_cpu[:, d:] * sin.cpu()),
    "rms_device": str(y.device),
}))
"""


@pytest.mark.parametrize("name", ["mlu", "musa", "npu", "neuron", "tpu"])
def test_routing_on_emulated_devices(name):
    done = run_forked(ROUTING.replace("sys.argv[1]", repr(name)), timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    r = json.loads(done.stdout.strip().splitlines()[-1])
    assert r["variant"] == f"torch-{name}" and r["emulated"] is True
    assert r["device"].startswith(name) and r["rms_device"].startswith(name)
    # an emulated tensor is a tensor subclass whose memory lives in a wrapped CPU tensor, so
    # out/x aliasing cannot be ruled out: the plain formula runs (see emulation.md)
    assert r["route"] == "eager"
    assert r["may_alias"] is True and r["calls"] == []
    assert r["silu_exact"] is True and r["rotary_exact"] is True
    assert r["rms_bf16_exact"] is True


@pytest.mark.parametrize("kernel", ["activation", "rmsnorm", "rotary"])
def test_benchmark_reference_is_the_plain_formula_not_the_kernel(load, kernel):
    module = load(kernel)
    plain = module.__benchmark__["reference"]
    assert plain is module._plain and plain is not module
    for name in plain.__all__:
        assert getattr(plain, name) is not getattr(module, name, None)
    x = _input((256, 1024), torch.float32).nan_to_num(0.0, 0.0, 0.0)
    if kernel == "activation":
        for name in ACTIVATIONS:
            assert _bitwise(_run(plain, name, x), _run(module, name, x)), name
    elif kernel == "rmsnorm":
        w = _input((1024,), torch.float32, 1).nan_to_num(0.0, 0.0, 0.0)
        assert torch.equal(plain.apply_rms_norm(x, w, 1e-6), module.apply_rms_norm(x, w, 1e-6))
    else:
        a, b, c, s = x[:, :512], x[:, 512:], x[:, :512] * 0.5, x[:, 512:] * 0.25
        outs = [torch.empty(256, 512) for _ in range(4)]
        plain.apply_rotary(a, b, c, s, outs[0], outs[1], True)
        module.apply_rotary(a, b, c, s, outs[2], outs[3], True)
        assert torch.equal(outs[0], outs[2]) and torch.equal(outs[1], outs[3])


def test_rotary_batch_invariance_holds_on_the_fast_path(rotary, rotary_blocks, low_thresholds):
    """A row rotated within a large batch (fast path) equals the row rotated alone (plain)."""
    x1, x2 = _input((1024, 128), torch.bfloat16), _input((1024, 128), torch.bfloat16, 1)
    cos, sin = _input((1024, 128), torch.bfloat16, 2), _input((1024, 128), torch.bfloat16, 3)
    o1, o2 = torch.empty_like(x1), torch.empty_like(x2)
    rotary.apply_rotary(x1, x2, cos, sin, o1, o2, False)
    for i in (0, 511, 1023):
        r1, r2 = (
            torch.empty(1, 128, dtype=torch.bfloat16),
            torch.empty(1, 128, dtype=torch.bfloat16),
        )
        rows = slice(i, i + 1)
        rotary.apply_rotary(x1[rows], x2[rows], cos[rows], sin[rows], r1, r2, False)
        assert _bitwise(o1[rows], r1) and _bitwise(o2[rows], r2)
    assert rotary_blocks == [True, False, False, False]  # in blocks, then plain


def test_rotary_calls_below_the_blocked_size_skip_the_routing_checks(rotary, monkeypatch):
    """Rotary has no fast path below a few million elements, so a small call decides that
    from the sizes alone: the tracing and autograd checks of ``route`` cost more than the
    call saves (the benchmark's small sizes measure it)."""
    fast = sys.modules[rotary.__name__ + "._fast"]
    monkeypatch.setattr(fast, "route", lambda *t: pytest.fail("route called"))
    x = _input((64, 1024), torch.float32)
    x1, x2 = x[:, :512], x[:, 512:]
    o1, o2 = torch.empty_like(x1), torch.empty_like(x2)
    rotary.apply_rotary(x1, x2, x1, x2, o1, o2, False)
    assert _bitwise(o1, x1 * x1 - x2 * x2) and _bitwise(o2, x2 * x1 + x1 * x2)


@pytest.mark.parametrize("value", ["0", "nocompile", "anything"])
def test_the_removed_fast_setting_is_not_read(activation, fast_calls, monkeypatch, value):
    """``KERNEL_PLUGINS_REFERENCE_FAST`` chose among tiers that are gone: a value left in an
    environment changes nothing (documented as no longer read)."""
    monkeypatch.setenv("KERNEL_PLUGINS_REFERENCE_FAST", value)
    x = _input((300, 1030), torch.float32)
    assert _bitwise(_run(activation, "silu_and_mul", x), _native(activation, "silu_and_mul", x))
    assert fast_calls == ["silu_and_mul"]
