"""The reference RMSNorm kernel against transformers' LlamaRMSNorm formula."""

from __future__ import annotations

import inspect

import pytest
import torch
from torch import nn

DTYPES = [torch.float32, torch.float16, torch.bfloat16]
SHAPES = [(3, 8), (2, 5, 16)]
EPS = 1e-6


class LlamaRMSNorm(nn.Module):
    """The layer the kernel replaces, as transformers writes it."""

    def __init__(self, hidden_size: int, eps: float = EPS, dtype=torch.float32) -> None:
        super().__init__()
        gen = torch.Generator().manual_seed(11)
        self.weight = nn.Parameter((1 + torch.randn(hidden_size, generator=gen)).to(dtype))
        self.variance_epsilon = eps

    def forward(self, hidden_states: torch.Tensor) -> torch.Tensor:
        input_dtype = hidden_states.dtype
        hidden_states = hidden_states.to(torch.float32)
        variance = hidden_states.pow(2).mean(-1, keepdim=True)
        hidden_states = hidden_states * torch.rsqrt(variance + self.variance_epsilon)
        return self.weight * hidden_states.to(input_dtype)


def _input(shape, dtype=torch.float32, seed=0, requires_grad=False) -> torch.Tensor:
    gen = torch.Generator().manual_seed(seed)
    return (torch.randn(shape, generator=gen) * 2).to(dtype).requires_grad_(requires_grad)


def _kernelized(rmsnorm, original: nn.Module):
    """Call the kernel layer's forward on the original layer, as kernelize does."""
    return lambda x: rmsnorm.layers.RMSNorm.forward(original, x)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_apply_rms_norm_is_bitwise_native(rmsnorm, shape, dtype) -> None:
    x = _input(shape, dtype)
    original = LlamaRMSNorm(shape[-1], dtype=dtype)
    result = rmsnorm.apply_rms_norm(x, original.weight, EPS)
    expected = original(x)
    assert result.dtype == dtype
    torch.testing.assert_close(result, expected, atol=0, rtol=0)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=str)
def test_float32_weight_promotes_like_the_original(rmsnorm, dtype) -> None:
    x = _input((4, 8), dtype)
    original = LlamaRMSNorm(8, dtype=torch.float32)
    result = rmsnorm.apply_rms_norm(x, original.weight, EPS)
    assert result.dtype == torch.float32
    torch.testing.assert_close(result, original(x), atol=0, rtol=0)


def test_eps_is_used(rmsnorm) -> None:
    x = torch.zeros(2, 4)
    x[0, 0] = 1e-3
    w = torch.ones(4)
    small = rmsnorm.apply_rms_norm(x, w, 1e-12)
    large = rmsnorm.apply_rms_norm(x, w, 1.0)
    assert small[0, 0] > 1.0 and large[0, 0] < 1e-2
    assert torch.equal(small[1], torch.zeros(4))


def test_float64_is_normalised_in_float64(rmsnorm) -> None:
    x = _input((3, 8), torch.float64)
    w = torch.ones(8, dtype=torch.float64)
    result = rmsnorm.apply_rms_norm(x, w, EPS)
    expected = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + EPS)
    assert result.dtype == torch.float64
    torch.testing.assert_close(result, expected, atol=1e-15, rtol=1e-15)


def test_opcheck(rmsnorm) -> None:
    x = _input((2, 3, 8), requires_grad=True)
    w = _input((8,), seed=1, requires_grad=True)
    torch.library.opcheck(rmsnorm.ops.rms_norm, (x, w, EPS))


def test_gradcheck_float64(rmsnorm) -> None:
    x = _input((3, 6), torch.float64, requires_grad=True)
    w = _input((6,), torch.float64, seed=1, requires_grad=True)
    assert torch.autograd.gradcheck(lambda a, b: rmsnorm.apply_rms_norm(a, b, EPS), (x, w))


def test_layer_is_a_valid_kernel_layer(rmsnorm) -> None:
    cls = rmsnorm.layers.RMSNorm
    assert issubclass(cls, nn.Module)
    assert "__init__" not in vars(cls)
    assert list(inspect.signature(cls.forward).parameters) == ["self", "hidden_states"]
    assert cls.has_backward is True and cls.can_torch_compile is True
    assert not hasattr(cls, "kernel_properties")  # HF kernels refuses extra members
    declared = rmsnorm.layers.__kernel_properties__["RMSNorm"]
    assert declared == rmsnorm.__kernel_properties__["apply_rms_norm"]
    assert "batch_invariant" not in declared


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_layer_replaces_forward_bitwise(rmsnorm, dtype) -> None:
    original = LlamaRMSNorm(16, eps=1e-5, dtype=dtype)
    x = _input((2, 5, 16), dtype)
    torch.testing.assert_close(_kernelized(rmsnorm, original)(x), original(x), atol=0, rtol=0)


def test_layer_backward_matches_native(rmsnorm) -> None:
    original = LlamaRMSNorm(8)
    reference = LlamaRMSNorm(8)
    x = _input((4, 8), requires_grad=True)
    ref = x.detach().clone().requires_grad_(True)
    _kernelized(rmsnorm, original)(x).square().sum().backward()
    reference(ref).square().sum().backward()
    torch.testing.assert_close(x.grad, ref.grad, atol=0, rtol=0)
    torch.testing.assert_close(original.weight.grad, reference.weight.grad, atol=0, rtol=0)


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_compiles_fullgraph(rmsnorm, backend: str) -> None:
    torch._dynamo.reset()
    original = LlamaRMSNorm(8)
    compiled = torch.compile(_kernelized(rmsnorm, original), fullgraph=True, backend=backend)
    x = _input((3, 8), requires_grad=True)
    ref = x.detach().clone().requires_grad_(True)
    y = compiled(x)
    expected = original(ref)
    torch.testing.assert_close(y, expected, atol=0, rtol=0)
    y.sum().backward()
    expected.sum().backward()
    torch.testing.assert_close(x.grad, ref.grad, atol=0, rtol=0)


def test_compiles_with_inductor(rmsnorm, inductor: str) -> None:
    torch._dynamo.reset()
    original = LlamaRMSNorm(8)
    compiled = torch.compile(_kernelized(rmsnorm, original), fullgraph=True, backend=inductor)
    x = _input((3, 8))
    torch.testing.assert_close(compiled(x), original(x))


def test_runs_on_meta_device(rmsnorm) -> None:
    x = torch.empty(2, 3, 8, device="meta", dtype=torch.bfloat16)
    y = rmsnorm.apply_rms_norm(x, torch.empty(8, device="meta", dtype=torch.bfloat16), EPS)
    assert y.device.type == "meta" and y.shape == x.shape and y.dtype == torch.bfloat16


def test_declared_properties_hold(rmsnorm) -> None:
    props = rmsnorm.__kernel_properties__["apply_rms_norm"]
    assert props == frozenset({"deterministic"})
    x = _input((9, 64))
    w = _input((64,), seed=1)
    first = rmsnorm.apply_rms_norm(x, w, EPS)
    torch.testing.assert_close(rmsnorm.apply_rms_norm(x, w, EPS), first, atol=0, rtol=0)
