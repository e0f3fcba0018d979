"""The reference activation kernel against the native PyTorch formulas."""

from __future__ import annotations

import inspect
import math

import pytest
import torch
import torch.nn.functional as F

DTYPES = [torch.float32, torch.float16, torch.bfloat16]
SHAPES = [(3, 8), (2, 5, 16)]


def _fatrelu(a: torch.Tensor, threshold: float) -> torch.Tensor:
    return torch.where(a > threshold, a, 0.0)


def _gelu_fast(x: torch.Tensor) -> torch.Tensor:
    return 0.5 * x * (1 + torch.tanh(0.7978845608 * x * (1 + 0.044715 * x * x)))


def _gelu_new(x: torch.Tensor) -> torch.Tensor:
    return 0.5 * x * (1 + torch.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3)))


def _gelu_quick(x: torch.Tensor) -> torch.Tensor:
    return x * torch.sigmoid(1.702 * x)


def _halves(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    d = x.shape[-1] // 2
    return x[..., :d], x[..., d:]


# name -> native formula of x (and threshold for fatrelu)
NATIVE = {
    "silu_and_mul": lambda x: F.silu(_halves(x)[0]) * _halves(x)[1],
    "mul_and_silu": lambda x: _halves(x)[0] * F.silu(_halves(x)[1]),
    "gelu_and_mul": lambda x: F.gelu(_halves(x)[0]) * _halves(x)[1],
    "gelu_tanh_and_mul": lambda x: F.gelu(_halves(x)[0], approximate="tanh") * _halves(x)[1],
    "fatrelu_and_mul": lambda x, t=0.0: _fatrelu(_halves(x)[0], t) * _halves(x)[1],
    "silu": F.silu,
    "gelu": F.gelu,
    "gelu_tanh": lambda x: F.gelu(x, approximate="tanh"),
    "gelu_fast": _gelu_fast,
    "gelu_new": _gelu_new,
    "gelu_quick": _gelu_quick,
}
NAMES = list(NATIVE)
GATED = [n for n in NAMES if "and" in n]

LAYERS = {
    "SiluAndMul": "silu_and_mul",
    "MulAndSilu": "mul_and_silu",
    "GeluAndMul": "gelu_and_mul",
    "GeluTanhAndMul": "gelu_tanh_and_mul",
    "FatreluAndMul": "fatrelu_and_mul",
    "Silu": "silu",
    "Gelu": "gelu",
    "GeluTanh": "gelu_tanh",
    "FastGELU": "gelu_fast",
    "NewGELU": "gelu_new",
    "QuickGELU": "gelu_quick",
}
LAYER_MEMBERS = {
    "__annotations__",  # created on first access (inspect.getmembers does it)
    "__module__",
    "__qualname__",
    "__doc__",
    "__firstlineno__",
    "__static_attributes__",
    "forward",
    "has_backward",
    "can_torch_compile",
}


def _out_for(name: str, x: torch.Tensor) -> torch.Tensor:
    shape = (*x.shape[:-1], x.shape[-1] // 2) if name in GATED else x.shape
    return torch.full(shape, float("nan"), dtype=x.dtype, device=x.device)


def _input(shape, dtype=torch.float32, seed=0, requires_grad=False) -> torch.Tensor:
    gen = torch.Generator().manual_seed(seed)
    x = (torch.randn(shape, generator=gen) * 3).to(dtype)
    return x.requires_grad_(requires_grad)


def _layer(activation, cls_name: str, threshold: float = 0.25) -> torch.nn.Module:
    layer = getattr(activation.layers, cls_name)()
    if cls_name == "FatreluAndMul":
        layer.threshold = threshold  # the attribute of the layer it replaces
    return layer


def _native_for_layer(cls_name: str, x: torch.Tensor, threshold: float = 0.25) -> torch.Tensor:
    name = LAYERS[cls_name]
    return NATIVE[name](x, threshold) if name == "fatrelu_and_mul" else NATIVE[name](x)


def test_api_is_complete(activation) -> None:
    assert set(NAMES) <= set(activation.__all__)
    assert set(activation.__kernel_properties__) == set(NAMES)
    assert set(LAYERS) == set(activation.layers.__all__)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("name", NAMES)
def test_function_is_bitwise_native(activation, name: str, shape, dtype) -> None:
    x = _input(shape, dtype)
    out = _out_for(name, x)
    result = getattr(activation, name)(out, x)
    assert result is out
    expected = NATIVE[name](x)
    assert result.dtype == dtype and result.shape == expected.shape
    torch.testing.assert_close(result, expected, atol=0, rtol=0)
    functional = getattr(activation.ops, f"{name}_functional")(x)
    torch.testing.assert_close(functional, expected, atol=0, rtol=0)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("threshold", [0.0, 0.5, -1.25])
def test_fatrelu_threshold(activation, threshold: float, dtype) -> None:
    x = _input((4, 10), dtype)
    expected = NATIVE["fatrelu_and_mul"](x, threshold)
    out = activation.fatrelu_and_mul(_out_for("fatrelu_and_mul", x), x, threshold)
    torch.testing.assert_close(out, expected, atol=0, rtol=0)
    by_keyword = _out_for("fatrelu_and_mul", x)
    activation.ops.fatrelu_and_mul(by_keyword, x, threshold=threshold)
    torch.testing.assert_close(by_keyword, expected, atol=0, rtol=0)
    if threshold != 0.0:
        assert not torch.equal(out, NATIVE["fatrelu_and_mul"](x, 0.0))


def test_fatrelu_maps_nan_to_zero(activation) -> None:
    x = torch.tensor([[float("nan"), 2.0, 3.0, 4.0]])
    out = activation.fatrelu_and_mul(torch.empty(1, 2), x, 0.0)
    assert out.tolist() == [[0.0, 8.0]]


@pytest.mark.parametrize("name", GATED)
def test_gated_rejects_odd_last_dimension(activation, name: str) -> None:
    x = _input((2, 7))
    with pytest.raises(RuntimeError, match="must be even"):
        getattr(activation, name)(torch.empty(2, 3), x)


def test_out_with_wrong_shape_is_rejected(activation) -> None:
    x = _input((2, 8))
    with pytest.raises(RuntimeError, match="`out` has shape"):
        activation.silu_and_mul(torch.empty(2, 8), x)
    with pytest.raises(RuntimeError, match="`out` has shape"):
        activation.gelu(torch.empty(2, 4), x)


# The full opcheck of the out-variant also runs the functional op (and, through its
# autograd formula, the backward op) under AOTAutograd with dynamic shapes; the other two
# skip that slow step.
FAST_OPCHECK = ("test_schema", "test_autograd_registration", "test_faketensor")


@pytest.mark.parametrize("name", NAMES)
def test_opcheck(activation, name: str) -> None:
    x = _input((2, 3, 8), requires_grad=True)
    extra = (0.5,) if name == "fatrelu_and_mul" else ()
    torch.library.opcheck(getattr(activation.ops, name), (_out_for(name, x).detach(), x, *extra))
    functional = getattr(activation.ops, f"{name}_functional")
    torch.library.opcheck(functional, (x, *extra), test_utils=FAST_OPCHECK)
    grad = torch.randn(_out_for(name, x).shape)
    backward = getattr(activation.ops, f"{name}_backward")
    torch.library.opcheck(backward, (grad, x.detach(), *extra), test_utils=FAST_OPCHECK)


@pytest.mark.parametrize("name", NAMES)
def test_gradcheck_float64(activation, name: str) -> None:
    # Keep values away from the fatrelu threshold, where the derivative jumps.
    x = _input((2, 6), torch.float64, seed=1)
    x = torch.where(x.abs() < 0.05, x + 0.1, x).requires_grad_(True)
    functional = getattr(activation.ops, f"{name}_functional")
    assert torch.autograd.gradcheck(functional, (x,))


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("name", NAMES)
def test_gradients_match_native_autograd(activation, name: str, dtype) -> None:
    x = _input((3, 8), dtype, seed=2, requires_grad=True)
    ref = x.detach().clone().requires_grad_(True)
    grad = _input(_out_for(name, x).shape, dtype, seed=3)
    out = getattr(activation, name)(_out_for(name, x), x)
    (got,) = torch.autograd.grad(out, x, grad)
    (expected,) = torch.autograd.grad(NATIVE[name](ref), ref, grad)
    assert got.dtype == dtype
    tol = {torch.float32: 1e-5, torch.float16: 2e-2, torch.bfloat16: 1e-1}[dtype]
    torch.testing.assert_close(got, expected, atol=tol, rtol=tol)


@pytest.mark.parametrize("cls_name", list(LAYERS))
def test_layer_is_a_valid_kernel_layer(activation, cls_name: str) -> None:
    cls = getattr(activation.layers, cls_name)
    assert issubclass(cls, torch.nn.Module)
    assert "__init__" not in vars(cls)
    assert set(vars(cls)) <= LAYER_MEMBERS
    assert list(inspect.signature(cls.forward).parameters) == ["self", "x"]
    assert cls.has_backward is True
    assert cls.can_torch_compile is True
    assert not hasattr(cls, "kernel_properties")  # HF kernels refuses extra members
    declared = activation.layers.__kernel_properties__[cls_name]
    assert declared == activation.__kernel_properties__[LAYERS[cls_name]]


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("cls_name", list(LAYERS))
def test_layer_is_bitwise_native(activation, cls_name: str, dtype) -> None:
    x = _input((2, 5, 16), dtype)
    result = _layer(activation, cls_name)(x)
    torch.testing.assert_close(result, _native_for_layer(cls_name, x), atol=0, rtol=0)


def test_fatrelu_layer_uses_the_threshold_attribute(activation) -> None:
    x = _input((3, 8))
    low = _layer(activation, "FatreluAndMul", threshold=-10.0)(x)
    high = _layer(activation, "FatreluAndMul", threshold=1.0)(x)
    torch.testing.assert_close(low, NATIVE["fatrelu_and_mul"](x, -10.0), atol=0, rtol=0)
    torch.testing.assert_close(high, NATIVE["fatrelu_and_mul"](x, 1.0), atol=0, rtol=0)
    assert not torch.equal(low, high)


@pytest.mark.parametrize("cls_name", list(LAYERS))
def test_layer_backward(activation, cls_name: str) -> None:
    x = _input((4, 8), seed=4, requires_grad=True)
    ref = x.detach().clone().requires_grad_(True)
    _layer(activation, cls_name)(x).square().sum().backward()
    _native_for_layer(cls_name, ref).square().sum().backward()
    torch.testing.assert_close(x.grad, ref.grad, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("cls_name", list(LAYERS))
def test_layer_runs_on_meta_device(activation, cls_name: str) -> None:
    x = torch.empty(2, 3, 8, device="meta", requires_grad=True)
    y = _layer(activation, cls_name)(x)
    assert y.device.type == "meta"
    assert y.shape == _native_for_layer(cls_name, torch.empty(2, 3, 8)).shape
    y.sum().backward()
    assert x.grad.shape == x.shape and x.grad.device.type == "meta"


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
@pytest.mark.parametrize("cls_name", list(LAYERS))
def test_layer_compiles_fullgraph(activation, cls_name: str, backend: str) -> None:
    torch._dynamo.reset()
    layer = _layer(activation, cls_name)
    compiled = torch.compile(layer, fullgraph=True, backend=backend)
    x = _input((3, 8), seed=5, requires_grad=True)
    ref = x.detach().clone().requires_grad_(True)
    y = compiled(x)
    torch.testing.assert_close(y, _native_for_layer(cls_name, ref), atol=0, rtol=0)
    y.sum().backward()
    layer(ref).sum().backward()
    torch.testing.assert_close(x.grad, ref.grad, atol=0, rtol=0)


def test_function_compiles_fullgraph(activation) -> None:
    torch._dynamo.reset()

    def f(x: torch.Tensor) -> torch.Tensor:
        out = torch.empty((*x.shape[:-1], x.shape[-1] // 2), dtype=x.dtype, device=x.device)
        return activation.gelu_tanh_and_mul(out, x) * 2

    x = _input((3, 8))
    compiled = torch.compile(f, fullgraph=True, backend="aot_eager")
    torch.testing.assert_close(compiled(x), NATIVE["gelu_tanh_and_mul"](x) * 2, atol=0, rtol=0)


def test_layer_compiles_with_inductor(activation, inductor: str) -> None:
    torch._dynamo.reset()
    compiled = torch.compile(_layer(activation, "SiluAndMul"), fullgraph=True, backend=inductor)
    x = _input((3, 8), seed=6)
    torch.testing.assert_close(compiled(x), NATIVE["silu_and_mul"](x))


@pytest.mark.parametrize("name", NAMES)
def test_declared_properties_hold(activation, name: str) -> None:
    props = activation.__kernel_properties__[name]
    fn = getattr(activation, name)
    x = _input((33, 18), seed=7)
    first = fn(_out_for(name, x), x)
    assert "deterministic" in props
    torch.testing.assert_close(fn(_out_for(name, x), x), first, atol=0, rtol=0)
    if "batch_invariant" in props:
        for rows in (1, 2, 5, 17):
            part = x[:rows].clone()
            torch.testing.assert_close(fn(_out_for(name, part), part), first[:rows], atol=0, rtol=0)
