"""The kernels-community test suites (activation, rmsnorm, rotary), restated for our references.

Each test re-implements a check of the community kernel's own suite, with the same cases
(functions, layers, ops, dtypes, shape families, ``atol=0`` against the native PyTorch
formula for the gated activations, tolerance for the element-wise ones, ``opcheck`` on one
shape per op and dtype), on CPU and with smaller sizes. Only the device and the sizes differ from the originals.
It also pins the community API surface: every public function, op, layer and attribute.
"""

from __future__ import annotations

import math
import random

import pytest
import torch
import torch.nn.functional as F

DTYPES = [torch.half, torch.bfloat16, torch.float]
TOKENS = [7, 83]  # the community suite also runs 2048 on GPUs
HIDDEN = [512, 1000]  # the community suite uses 512 and 13824
OPCHECK_UTILS = ("test_schema", "test_autograd_registration", "test_faketensor", "test_aot_dispatch_dynamic")
#: opcheck checks an op's registration (schema, fake tensor, autograd, AOT dispatch), not its
#: values; on large inputs it costs seconds, so it runs on one odd shape per op and dtype
OPCHECK_SHAPE = (TOKENS[0], HIDDEN[-1])
ATOL = {torch.half: 1e-3, torch.bfloat16: 1e-3, torch.float: 1e-5}
RTOL = {torch.half: 1e-3, torch.bfloat16: 1.6e-2, torch.float: 1.3e-6}

# ---------------------------------------------------------------- the API surface

ACTIVATION_FUNCTIONS = [
    "silu_and_mul", "mul_and_silu", "gelu_and_mul", "gelu_tanh_and_mul", "fatrelu_and_mul",
    "gelu_fast", "gelu_new", "gelu_quick", "gelu_tanh", "silu", "gelu",
]
ACTIVATION_LAYERS = [
    "SiluAndMul", "Silu", "Gelu", "GeluTanh", "MulAndSilu", "GeluAndMul", "GeluTanhAndMul",
    "FatreluAndMul", "FastGELU", "NewGELU", "QuickGELU",
]


def test_activation_has_the_community_api(activation) -> None:
    for name in ACTIVATION_FUNCTIONS:
        assert callable(getattr(activation, name)), name
        assert hasattr(activation.ops, name), f"ops.{name}"
    assert set(ACTIVATION_FUNCTIONS) | {"layers"} <= set(activation.__all__)
    for name in ACTIVATION_LAYERS:
        cls = getattr(activation.layers, name)
        assert issubclass(cls, torch.nn.Module) and cls.can_torch_compile is True
    layer = activation.layers.FatreluAndMul(0.3)
    assert layer.threshold == 0.3
    assert activation.layers.FatreluAndMul().threshold == 0.0
    assert activation.layers.FatreluAndMul(threshold=0.7).threshold == 0.7
    with pytest.raises(TypeError, match="threshold"):
        activation.layers.FatreluAndMul(0.1, 0.2)


def test_rmsnorm_has_the_community_api(rmsnorm) -> None:
    assert callable(rmsnorm.apply_rms_norm) and callable(rmsnorm.apply_rms_norm_backward)
    assert hasattr(rmsnorm.ops, "apply_rms_norm") and hasattr(rmsnorm.ops, "apply_rms_norm_backward")
    assert issubclass(rmsnorm.layers.RMSNorm, torch.nn.Module)
    assert issubclass(rmsnorm.layers.RMSNormFunction, torch.autograd.Function)
    x = torch.randn(5, 16)
    w = torch.randn(16)
    out, rstd = rmsnorm.ops.apply_rms_norm(x, w, 1e-6)
    assert torch.equal(out, rmsnorm.apply_rms_norm(x, w, 1e-6))
    assert rstd.shape == (5,) and rstd.dtype == torch.float32
    torch.testing.assert_close(rstd, torch.rsqrt(x.pow(2).mean(-1) + 1e-6))


def test_rotary_has_the_community_api(rotary) -> None:
    assert callable(rotary.apply_rotary) and callable(rotary.apply_rotary_transformers)
    assert rotary.apply_rotary_transformers.can_torch_compile is True
    assert {"apply_rotary", "apply_rotary_transformers", "layers"} <= set(rotary.__all__)
    assert hasattr(rotary.ops, "apply_rotary")
    layer_cls = rotary.layers.apply_rotary_transformers
    assert issubclass(layer_cls, torch.nn.Module) and layer_cls.can_torch_compile is True
    q, k = torch.randn(2, 4, 3, 8), torch.randn(2, 4, 3, 8)
    cos, sin = torch.randn(2, 3, 8), torch.randn(2, 3, 8)
    by_layer = layer_cls()(q, k, cos, sin)
    by_function = rotary.apply_rotary_transformers(q, k, cos, sin)
    assert all(torch.equal(a, b) for a, b in zip(by_layer, by_function, strict=True))


@pytest.mark.parametrize("kernel", ["activation", "rmsnorm", "rotary"])
def test_layers_pass_the_hf_kernels_layer_rule(load, kernel: str) -> None:
    """HF kernels refuses a layer with its own __init__ or members beyond the two flags."""
    import inspect

    module = load(kernel)
    base = {n for n, _ in inspect.getmembers(torch.nn.Module)}
    for name in module.layers.__all__:
        cls = getattr(module.layers, name)
        assert cls.__init__ is torch.nn.Module.__init__, name
        extra = {n for n, _ in inspect.getmembers(cls)} - base
        assert extra <= {"can_torch_compile", "has_backward"}, (name, extra)
        assert name in module.layers.__kernel_properties__


# ---------------------------------------------------------------- activation suite


def _swiglu(x: torch.Tensor) -> torch.Tensor:
    half = x.shape[-1] // 2
    return F.silu(x[..., :half]) * x[..., half:]


def _mul_silu(x: torch.Tensor) -> torch.Tensor:
    half = x.shape[-1] // 2
    return x[..., :half] * F.silu(x[..., half:])


def _geglu(approximate: str):
    def fn(x: torch.Tensor) -> torch.Tensor:
        half = x.shape[-1] // 2
        return F.gelu(x[..., :half], approximate=approximate) * x[..., half:]

    return fn


def _fatrelu(threshold: float):
    def fn(x: torch.Tensor) -> torch.Tensor:
        half = x.shape[-1] // 2
        return F.threshold(x[..., :half], threshold, 0.0) * x[..., half:]

    return fn


def _gated_case(activation, which: str, threshold: float):
    """(native formula, function, op, layer) for one gated activation of the suite."""
    if which == "fatrelu":
        return (
            _fatrelu(threshold),
            lambda out, x: activation.fatrelu_and_mul(out, x, threshold),
            activation.ops.fatrelu_and_mul,
            activation.layers.FatreluAndMul(threshold),
        )
    fn_name, layer_name, native = {
        "silu_and_mul": ("silu_and_mul", "SiluAndMul", _swiglu),
        "mul_and_silu": ("mul_and_silu", "MulAndSilu", _mul_silu),
        "gelu": ("gelu_and_mul", "GeluAndMul", _geglu("none")),
        "gelu_tanh": ("gelu_tanh_and_mul", "GeluTanhAndMul", _geglu("tanh")),
    }[which]
    return (
        native,
        getattr(activation, fn_name),
        getattr(activation.ops, fn_name),
        getattr(activation.layers, layer_name)(),
    )


@pytest.mark.parametrize("which", ["silu_and_mul", "mul_and_silu", "gelu", "gelu_tanh", "fatrelu"])
@pytest.mark.parametrize("tokens", TOKENS)
@pytest.mark.parametrize("hidden", HIDDEN)
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@torch.inference_mode()
def test_gated_activation_is_exactly_the_native_formula(activation, which, tokens, hidden, dtype):
    random.seed(0)
    torch.manual_seed(0)
    threshold = random.uniform(0, 1)
    native, fn, op, layer = _gated_case(activation, which, threshold)
    x = torch.randn(tokens, 2 * hidden, dtype=dtype)
    out = fn(torch.empty(tokens, hidden, dtype=dtype), x)
    expected = native(x)
    torch.testing.assert_close(out, expected, atol=0.0, rtol=0.0)
    torch.testing.assert_close(layer(x), expected, atol=0.0, rtol=0.0)
    args = (torch.empty(tokens, hidden, dtype=dtype), x)
    if (tokens, hidden) == OPCHECK_SHAPE:
        torch.library.opcheck(op, (*args, threshold) if which == "fatrelu" else args, test_utils=OPCHECK_UTILS)


def _gelu_fast(x):
    return 0.5 * x * (1.0 + torch.tanh(x * 0.7978845608 * (1.0 + 0.044715 * x * x)))


def _gelu_new(x):
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))


ELEMENTWISE = {
    "gelu_fast": (_gelu_fast, "FastGELU"),
    "gelu_new": (_gelu_new, "NewGELU"),
    "gelu_quick": (lambda x: x * torch.sigmoid(1.702 * x), "QuickGELU"),
    "gelu_tanh": (lambda x: F.gelu(x, approximate="tanh"), "GeluTanh"),
    "silu": (F.silu, "Silu"),
    "gelu": (F.gelu, "Gelu"),
}


@pytest.mark.parametrize("name", list(ELEMENTWISE))
@pytest.mark.parametrize("tokens", TOKENS)
@pytest.mark.parametrize("hidden", HIDDEN)
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@torch.inference_mode()
def test_elementwise_activation_matches_the_formula(activation, name, tokens, hidden, dtype):
    torch.manual_seed(0)
    native, layer_name = ELEMENTWISE[name]
    x = torch.randn(tokens, hidden, dtype=dtype)
    out = getattr(activation, name)(torch.empty_like(x), x)
    by_layer = getattr(activation.layers, layer_name)()(x)
    tol = {"atol": ATOL[dtype], "rtol": RTOL[dtype]}
    torch.testing.assert_close(out, native(x), **tol)
    torch.testing.assert_close(out, by_layer, **tol)
    if (tokens, hidden) == OPCHECK_SHAPE:
        torch.library.opcheck(getattr(activation.ops, name), (torch.empty_like(x), x), test_utils=OPCHECK_UTILS)


# ---------------------------------------------------------------- rmsnorm suite

ROWS = 256  # the community suite uses 1024 x 1024


def _rms_reference(x, weight, eps):
    x = x.to(torch.float32)
    return weight * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps))


def _rms_layer(rmsnorm, weight, eps=1e-6):
    layer = rmsnorm.layers.RMSNorm()
    layer.weight = weight
    layer.variance_epsilon = eps
    return layer


def test_rmsnorm_forward_bf16(rmsnorm):
    x = torch.randn(ROWS, ROWS, dtype=torch.bfloat16)
    layer = _rms_layer(rmsnorm, torch.randn(ROWS, dtype=torch.bfloat16))
    expected = _rms_reference(x, layer.weight, layer.variance_epsilon).to(torch.bfloat16)
    torch.testing.assert_close(layer(x), expected)


def _check_backward(layer_or_fn, weight, eps, compile_it: bool):
    x = torch.randn(ROWS, ROWS, requires_grad=True)
    grad_out = torch.randn(ROWS, ROWS)
    run = torch.compile(layer_or_fn, backend="inductor", fullgraph=True) if compile_it else layer_or_fn
    out = run(x)
    out.backward(grad_out)
    x_ref = x.detach().requires_grad_()
    w_ref = weight.detach().requires_grad_()
    expected = w_ref * (x_ref * torch.rsqrt(x_ref.pow(2).mean(-1, keepdim=True) + eps))
    expected.backward(grad_out)
    tol = 1e-4 if compile_it else 1e-2
    if compile_it:
        torch.testing.assert_close(out, expected, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(x.grad, x_ref.grad, atol=tol, rtol=tol)
    torch.testing.assert_close(weight.grad, w_ref.grad, atol=tol, rtol=tol)


def test_rmsnorm_backward(rmsnorm):
    weight = torch.randn(ROWS, requires_grad=True)
    _check_backward(_rms_layer(rmsnorm, weight), weight, 1e-6, compile_it=False)


def test_rmsnorm_function_backward(rmsnorm):
    """The community autograd function (ops.apply_rms_norm + ops.apply_rms_norm_backward)."""
    weight = torch.randn(ROWS, requires_grad=True)
    fn = lambda x: rmsnorm.layers.RMSNormFunction.apply(x, weight, 1e-6)  # noqa: E731
    _check_backward(fn, weight, 1e-6, compile_it=False)


def test_rmsnorm_compile_fullgraph(rmsnorm, inductor):
    weight = torch.randn(ROWS, requires_grad=True)
    _check_backward(_rms_layer(rmsnorm, weight), weight, 1e-6, compile_it=True)


# ---------------------------------------------------------------- rotary suite


def _rotate_pair(x1, x2, cos, sin, conj):
    if conj:
        return x1 * cos + x2 * sin, -x1 * sin + x2 * cos
    return x1 * cos - x2 * sin, x1 * sin + x2 * cos


def _rotate_torch(t, cos, sin, conj):
    r = cos.shape[-1]
    o1, o2 = _rotate_pair(t[..., :r], t[..., r : 2 * r], cos, sin, conj)
    return torch.cat([o1, o2, t[..., 2 * r :]], dim=-1)


def _rotate_kernel_in_place(rotary, t, cos, sin, conj):
    r = cos.shape[-1]
    a, b = t[..., :r], t[..., r : 2 * r]
    rotary.apply_rotary(a, b, cos, sin, a, b, conj)


@pytest.mark.parametrize("batch", [1, 2])
@pytest.mark.parametrize("heads", [8])
@pytest.mark.parametrize("seqlen", [32, 64])  # the community suite uses 128 and 256
@pytest.mark.parametrize("headdim, rotary_dim", [(64, 32), (128, 64), (64, 30)])
@pytest.mark.parametrize("qk_dim", [3, 4])
@pytest.mark.parametrize("dtype, atol, rtol", [(torch.float32, 1e-5, 1e-5), (torch.bfloat16, 1e-1, 1e-5)])
@pytest.mark.parametrize("conj", [False, True])
def test_rotary_matches_torch(rotary, batch, heads, seqlen, headdim, rotary_dim, qk_dim, dtype, atol, rtol, conj):
    if qk_dim == 4:
        shape, angles = (batch, seqlen, heads, headdim), (seqlen, 1, rotary_dim)
    else:
        shape, angles = (batch * seqlen, heads, headdim), (batch * seqlen, 1, rotary_dim)
    q0, k0 = torch.randn(shape, dtype=dtype), torch.randn(shape, dtype=dtype)
    cos, sin = torch.randn(angles, dtype=dtype), torch.randn(angles, dtype=dtype)
    q, k = q0.clone(), k0.clone()
    _rotate_kernel_in_place(rotary, q, cos, sin, conj)
    _rotate_kernel_in_place(rotary, k, cos, sin, conj)
    assert torch.allclose(_rotate_torch(q0, cos, sin, conj), q, atol=atol, rtol=rtol)
    assert torch.allclose(_rotate_torch(k0, cos, sin, conj), k, atol=atol, rtol=rtol)
    if 2 * rotary_dim < headdim:  # the rest of the head is untouched
        assert torch.equal(q[..., 2 * rotary_dim :], q0[..., 2 * rotary_dim :])
        assert torch.equal(k[..., 2 * rotary_dim :], k0[..., 2 * rotary_dim :])


def test_rotary_transformers_accepts_half_width_angles(rotary):
    """The community wrapper takes cos/sin over half the head; equal to the full-width form."""
    q, k = torch.randn(2, 4, 6, 16), torch.randn(2, 4, 6, 16)
    c, s = torch.randn(2, 6, 8), torch.randn(2, 6, 8)
    half = rotary.apply_rotary_transformers(q, k, c, s)
    full = rotary.apply_rotary_transformers(q, k, torch.cat([c, c], -1), torch.cat([s, s], -1))
    assert all(torch.equal(a, b) for a, b in zip(half, full, strict=True))
    expected = torch.cat(_rotate_pair(q[..., :8], q[..., 8:], c.unsqueeze(1), s.unsqueeze(1), False), -1)
    torch.testing.assert_close(half[0], expected, atol=0, rtol=0)


def test_layer_properties_in_the_layers_table_are_what_kernelize_sees(load) -> None:
    from kernel_plugins.contracts import check_module, declared_properties
    from kernel_plugins.errors import ContractError

    activation, rmsnorm = load("activation"), load("rmsnorm")
    assert declared_properties(activation.layers.SiluAndMul) == {"deterministic"}
    assert declared_properties(activation.layers.FatreluAndMul) == {"deterministic", "batch_invariant"}
    assert declared_properties(rmsnorm.layers.RMSNorm) == {"deterministic"}
    check_module(rmsnorm, {"deterministic"}, where="rmsnorm")  # every function and layer declares it
    with pytest.raises(ContractError, match="layer `RMSNorm` does not declare batch_invariant"):
        check_module(rmsnorm, {"batch_invariant"}, where="rmsnorm")
