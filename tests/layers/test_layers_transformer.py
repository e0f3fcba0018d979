"""kernelize a small transformer block on CPU from kernel repos built in tmp_path, loaded by
the real loader: same outputs, backward in TRAINING mode, torch.compile in TORCH_COMPILE."""

from __future__ import annotations

import copy

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from kernel_plugins.errors import ContractError, LayerError
from kernel_plugins.layers import (
    LocalFuncRepository,
    LocalLayerRepository,
    Mode,
    kernel_choice,
    kernelize,
    use_kernel_forward_from_hub,
    use_kernel_mapping,
)

KERNEL_LAYERS = """
import torch
import torch.nn.functional as F
from torch import nn


class SiluAndMul(nn.Module):
    can_torch_compile = True
    kernel_properties = frozenset({"deterministic"})

    def forward(self, x):
        gate, up = x.chunk(2, dim=-1)
        return F.silu(gate) * up


class RMSNorm(nn.Module):
    can_torch_compile = True

    def forward(self, hidden_states):
        dtype = hidden_states.dtype
        h = hidden_states.to(torch.float32)
        h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + self.variance_epsilon)
        return self.weight * h.to(dtype)


class EagerOnlyRMSNorm(nn.Module):
    def forward(self, hidden_states):
        return RMSNorm.forward(self, hidden_states)
"""

KERNEL_INIT = """
import torch

from . import layers

__kernel_properties__ = {"gelu_tanh": frozenset({"deterministic", "batch_invariant"})}


def gelu_tanh(x):
    return torch.nn.functional.gelu(x, approximate="tanh")
"""


@use_kernel_forward_from_hub("SiluAndMul")
class SiluAndMul(nn.Module):
    def forward(self, x):
        d = x.shape[-1] // 2
        return F.silu(x[..., :d]) * x[..., d:]


@use_kernel_forward_from_hub("RMSNorm")
class RMSNorm(nn.Module):
    def __init__(self, hidden: int, eps: float = 1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.linspace(0.5, 1.5, hidden))
        self.variance_epsilon = eps

    def forward(self, hidden_states):
        dtype = hidden_states.dtype
        h = hidden_states.to(torch.float32)
        variance = h.pow(2).mean(-1, keepdim=True)
        return self.weight * (h / torch.sqrt(variance + self.variance_epsilon)).to(dtype)


@use_kernel_forward_from_hub("gelu_tanh")
def gelu_tanh(x):
    return 0.5 * x * (1 + torch.tanh(0.7978845608028654 * (x + 0.044715 * x**3)))


class Attention(nn.Module):
    def __init__(self, hidden: int, heads: int):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(hidden, 3 * hidden, bias=False)
        self.out = nn.Linear(hidden, hidden, bias=False)

    def forward(self, x):
        b, s, h = x.shape
        q, k, v = self.qkv(x).view(b, s, 3, self.heads, h // self.heads).unbind(2)
        y = F.scaled_dot_product_attention(
            q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), is_causal=True
        )
        return self.out(y.transpose(1, 2).reshape(b, s, h))


class MLP(nn.Module):
    def __init__(self, hidden: int, inner: int):
        super().__init__()
        self.gate_up = nn.Linear(hidden, 2 * inner, bias=False)
        self.act = SiluAndMul()
        self.down = nn.Linear(inner, hidden, bias=False)
        self.post = gelu_tanh

    def forward(self, x):
        return self.post(self.down(self.act(self.gate_up(x))))


class Block(nn.Module):
    def __init__(self, hidden: int = 16, heads: int = 2, inner: int = 24):
        super().__init__()
        self.norm1 = RMSNorm(hidden)
        self.attn = Attention(hidden, heads)
        self.norm2 = RMSNorm(hidden)
        self.mlp = MLP(hidden, inner)

    def forward(self, x):
        x = x + self.attn(self.norm1(x))
        return x + self.mlp(self.norm2(x))


@pytest.fixture
def repo(kernel_repo):
    return kernel_repo("block-kernels", KERNEL_LAYERS, init_code=KERNEL_INIT)


def mapping(repo, norm_layer="RMSNorm"):
    return {
        "SiluAndMul": {"cpu": LocalLayerRepository(repo, layer_name="SiluAndMul")},
        "RMSNorm": {"cpu": LocalLayerRepository(repo, layer_name=norm_layer)},
        "gelu_tanh": {"cpu": LocalFuncRepository(repo, func_name="gelu_tanh")},
    }


def pair():
    torch.manual_seed(0)
    model = Block()
    return model, copy.deepcopy(model)


def marked(model):
    return [model.norm1, model.norm2, model.mlp.act, model.mlp.post]


X = torch.randn(2, 5, 16, generator=torch.Generator().manual_seed(1))


def test_inference_outputs_match_and_kernels_are_used(repo):
    model, reference = pair()
    with use_kernel_mapping(mapping(repo)):
        kernelize(model, mode=Mode.INFERENCE, device="cpu")
    for layer in marked(model):
        choice = kernel_choice(layer)
        assert choice.uses_kernel, choice
        assert choice.provenance.source == "local"
        assert choice.provenance.variant == "torch-cpu"
    kernel_mod = kernel_choice(model.norm1).kernel_module
    assert model.norm1.forward.__func__.__module__ == f"{kernel_mod}.layers"
    assert model.mlp.post.forward.__module__ == kernel_mod
    torch.testing.assert_close(model(X), reference(X), rtol=1e-5, atol=1e-6)


def test_training_backward_matches(repo):
    model, reference = pair()
    with use_kernel_mapping(mapping(repo)):
        kernelize(model, mode=Mode.TRAINING, device="cpu")
    assert all(kernel_choice(layer).uses_kernel for layer in marked(model))
    for m in (model, reference):
        m(X).square().sum().backward()
    for (name, p), q in zip(model.named_parameters(), reference.parameters(), strict=True):
        assert p.grad is not None, name
        torch.testing.assert_close(p.grad, q.grad, rtol=1e-4, atol=1e-5, msg=name)


def test_torch_compile_mode(repo):
    model, reference = pair()
    with use_kernel_mapping(mapping(repo)):
        kernelize(model, mode=Mode.INFERENCE | Mode.TORCH_COMPILE, device="cpu")
    # gelu_tanh does not declare can_torch_compile: the original function stays
    assert [kernel_choice(layer).uses_kernel for layer in marked(model)] == [
        True,
        True,
        True,
        False,
    ]
    compiled = torch.compile(model, backend="eager")
    torch.testing.assert_close(compiled(X), reference(X), rtol=1e-5, atol=1e-6)


def test_torch_compile_mode_keeps_original_for_eager_only_kernel(repo):
    model, reference = pair()
    with use_kernel_mapping(mapping(repo, norm_layer="EagerOnlyRMSNorm")):
        kernelize(model, mode=Mode.TRAINING | Mode.TORCH_COMPILE, device="cpu")
        assert not kernel_choice(model.norm1).uses_kernel
        assert "lacks torch.compile support" in kernel_choice(model.norm1).skipped[0]
        assert kernel_choice(model.mlp.act).uses_kernel
        with pytest.raises(LayerError, match="lacks torch.compile support"):
            kernelize(
                pair()[0], mode=Mode.TRAINING | Mode.TORCH_COMPILE, device="cpu", use_fallback=False
            )
    compiled = torch.compile(model, backend="eager")
    compiled(X).sum().backward()
    torch.testing.assert_close(compiled(X), reference(X), rtol=1e-5, atol=1e-6)


def test_failed_kernelize_changes_nothing(repo):
    model, _ = pair()
    with use_kernel_mapping(mapping(repo)):
        # SiluAndMul declares deterministic, RMSNorm does not: nothing may be changed
        with pytest.raises(ContractError, match="RMSNorm"):
            kernelize(model, mode=Mode.INFERENCE, device="cpu", require={"deterministic"})
    layers = [model.norm1, model.norm2, model.mlp.act]  # (mlp.post is a shared function module)
    assert all("forward" not in layer.__dict__ for layer in layers)
    assert all(kernel_choice(layer) is None for layer in layers)


def test_reference_kernels_serve_the_block(repo):
    from kernel_plugins.reference import reference_repo

    model, reference = pair()
    ref_map = {
        "SiluAndMul": {
            "cpu": LocalLayerRepository(reference_repo("activation"), layer_name="SiluAndMul")
        },
        "RMSNorm": {"cpu": LocalLayerRepository(reference_repo("rmsnorm"), layer_name="RMSNorm")},
    }
    with use_kernel_mapping(ref_map):
        kernelize(model, mode=Mode.TRAINING | Mode.TORCH_COMPILE, device="cpu")
    assert kernel_choice(model.norm1).uses_kernel and kernel_choice(model.mlp.act).uses_kernel
    torch.testing.assert_close(model(X), reference(X), rtol=1e-5, atol=1e-6)
