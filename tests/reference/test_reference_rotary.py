"""The reference rotary kernel against the native formulas."""

from __future__ import annotations

import pytest
import torch

DTYPES = [torch.float32, torch.float16, torch.bfloat16]


def _input(shape, dtype=torch.float32, seed=0, requires_grad=False) -> torch.Tensor:
    gen = torch.Generator().manual_seed(seed)
    return torch.randn(shape, generator=gen).to(dtype).requires_grad_(requires_grad)


def _angles(seq: int, half: int, dtype=torch.float32) -> tuple[torch.Tensor, torch.Tensor]:
    freqs = torch.outer(torch.arange(seq, dtype=torch.float32), torch.linspace(0.1, 1.0, half))
    return freqs.cos().to(dtype), freqs.sin().to(dtype)


def _native_rotary(x1, x2, cos, sin, conj):
    s = -sin if conj else sin
    return x1 * cos - x2 * s, x2 * cos + x1 * s


def _rotate_half(x):
    x1 = x[..., : x.shape[-1] // 2]
    x2 = x[..., x.shape[-1] // 2 :]
    return torch.cat((-x2, x1), dim=-1)


def _native_transformers(q, k, cos, sin, unsqueeze_dim=1):
    cos = cos.unsqueeze(unsqueeze_dim)
    sin = sin.unsqueeze(unsqueeze_dim)
    return (q * cos) + (_rotate_half(q) * sin), (k * cos) + (_rotate_half(k) * sin)


def _rotary_case(dtype=torch.float32, seed=0, requires_grad=False):
    """x1, x2 of shape (batch, seq, heads, half) and cos, sin of shape (seq, 1, half)."""
    x1 = _input((2, 5, 3, 4), dtype, seed, requires_grad)
    x2 = _input((2, 5, 3, 4), dtype, seed + 1, requires_grad)
    cos, sin = _angles(5, 4, dtype)
    return x1, x2, cos[:, None, :], sin[:, None, :]


def _apply(rotary, x1, x2, cos, sin, conj):
    out1 = torch.full_like(x1, float("nan"))
    out2 = torch.full_like(x2, float("nan"))
    assert rotary.apply_rotary(x1, x2, cos, sin, out1, out2, conj) is None
    return out1, out2


@pytest.mark.parametrize("conj", [False, True])
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_apply_rotary_is_bitwise_native(rotary, dtype, conj: bool) -> None:
    x1, x2, cos, sin = _rotary_case(dtype)
    out1, out2 = _apply(rotary, x1, x2, cos, sin, conj)
    exp1, exp2 = _native_rotary(x1, x2, cos, sin, conj)
    torch.testing.assert_close(out1, exp1, atol=0, rtol=0)
    torch.testing.assert_close(out2, exp2, atol=0, rtol=0)


def test_conj_is_the_inverse_rotation(rotary) -> None:
    x1, x2, cos, sin = _rotary_case(torch.float64)
    y1, y2 = _apply(rotary, x1, x2, cos, sin, False)
    z1, z2 = _apply(rotary, y1, y2, cos, sin, True)
    torch.testing.assert_close(z1, x1)
    torch.testing.assert_close(z2, x2)
    assert not torch.allclose(y1, x1)


def test_apply_rotary_in_place(rotary) -> None:
    x1, x2, cos, sin = _rotary_case()
    exp1, exp2 = _native_rotary(x1, x2, cos, sin, False)
    rotary.apply_rotary(x1, x2, cos, sin, x1, x2, False)
    torch.testing.assert_close(x1, exp1, atol=0, rtol=0)
    torch.testing.assert_close(x2, exp2, atol=0, rtol=0)


def test_apply_rotary_rejects_wrong_out_shape(rotary) -> None:
    x1, x2, cos, sin = _rotary_case()
    with pytest.raises(RuntimeError, match="`out2` has shape"):
        rotary.apply_rotary(x1, x2, cos, sin, torch.empty_like(x1), torch.empty(5, 3, 4), False)


@pytest.mark.parametrize("unsqueeze_dim", [1, 2])
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_apply_rotary_transformers_is_bitwise_native(rotary, dtype, unsqueeze_dim: int) -> None:
    # (batch, heads, seq, dim) with unsqueeze_dim=1, (batch, seq, heads, dim) with 2
    shape = (2, 3, 5, 8) if unsqueeze_dim == 1 else (2, 5, 3, 8)
    q, k = _input(shape, dtype, 0), _input(shape, dtype, 1)
    cos, sin = _angles(5, 4, dtype)
    cos, sin = torch.cat((cos, cos), -1).expand(2, 5, 8), torch.cat((sin, sin), -1).expand(2, 5, 8)
    q_embed, k_embed = rotary.apply_rotary_transformers(q, k, cos, sin, unsqueeze_dim)
    exp_q, exp_k = _native_transformers(q, k, cos, sin, unsqueeze_dim)
    torch.testing.assert_close(q_embed, exp_q, atol=0, rtol=0)
    torch.testing.assert_close(k_embed, exp_k, atol=0, rtol=0)


def test_apply_rotary_transformers_default_unsqueeze_dim(rotary) -> None:
    q, k = _input((1, 2, 5, 8)), _input((1, 2, 5, 8), seed=1)
    cos, sin = _input((1, 5, 8), seed=2), _input((1, 5, 8), seed=3)
    got = rotary.apply_rotary_transformers(q, k, cos, sin)
    expected = _native_transformers(q, k, cos, sin, 1)
    torch.testing.assert_close(got, expected, atol=0, rtol=0)


def test_opcheck(rotary) -> None:
    x1, x2, cos, sin = _rotary_case(requires_grad=True)
    outs = (torch.empty_like(x1).detach(), torch.empty_like(x2).detach())
    torch.library.opcheck(rotary.ops.apply_rotary, (x1, x2, cos, sin, *outs, True))
    q, k = _input((2, 3, 5, 8), requires_grad=True), _input((2, 3, 5, 8), seed=1)
    cos2, sin2 = _input((2, 5, 8), seed=2), _input((2, 5, 8), seed=3)
    torch.library.opcheck(rotary.ops.apply_rotary_transformers, (q, k, cos2, sin2, 1))


def test_gradcheck_float64(rotary) -> None:
    x1, x2, cos, sin = _rotary_case(torch.float64, requires_grad=True)
    cos.requires_grad_(True)

    def rotate(a, b, c):
        out1, out2 = torch.empty_like(a), torch.empty_like(b)
        rotary.apply_rotary(a, b, c, sin, out1, out2, False)
        return out1, out2

    assert torch.autograd.gradcheck(rotate, (x1, x2, cos))
    q = _input((1, 2, 3, 4), torch.float64, requires_grad=True)
    k = _input((1, 2, 3, 4), torch.float64, seed=1, requires_grad=True)
    c, s = _input((1, 3, 4), torch.float64, seed=2), _input((1, 3, 4), torch.float64, seed=3)
    assert torch.autograd.gradcheck(
        lambda a, b: rotary.apply_rotary_transformers(a, b, c, s), (q, k)
    )


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_compiles_fullgraph(rotary, backend: str) -> None:
    torch._dynamo.reset()

    def f(x1, x2, cos, sin, q, k):
        out1, out2 = torch.empty_like(x1), torch.empty_like(x2)
        rotary.apply_rotary(x1, x2, cos, sin, out1, out2, False)
        q_embed, k_embed = rotary.apply_rotary_transformers(q, k, cos2, sin2)
        return out1, out2, q_embed, k_embed

    x1, x2, cos, sin = _rotary_case(requires_grad=True)
    q, k = _input((2, 3, 5, 8), requires_grad=True), _input((2, 3, 5, 8), seed=1)
    cos2, sin2 = _input((2, 5, 8), seed=2), _input((2, 5, 8), seed=3)
    got = torch.compile(f, fullgraph=True, backend=backend)(x1, x2, cos, sin, q, k)
    expected = (*_native_rotary(x1, x2, cos, sin, False), *_native_transformers(q, k, cos2, sin2))
    for g, e in zip(got, expected, strict=True):
        torch.testing.assert_close(g, e, atol=0, rtol=0)
    grads = torch.autograd.grad(sum(g.sum() for g in got), (x1, x2, q))
    ref_grads = torch.autograd.grad(sum(e.sum() for e in expected), (x1, x2, q))
    for g, e in zip(grads, ref_grads, strict=True):
        torch.testing.assert_close(g, e, atol=0, rtol=0)


def test_compiles_with_inductor(rotary, inductor: str) -> None:
    torch._dynamo.reset()
    q, k = _input((2, 3, 5, 8)), _input((2, 3, 5, 8), seed=1)
    cos, sin = _input((2, 5, 8), seed=2), _input((2, 5, 8), seed=3)
    compiled = torch.compile(rotary.apply_rotary_transformers, fullgraph=True, backend=inductor)
    torch.testing.assert_close(compiled(q, k, cos, sin), _native_transformers(q, k, cos, sin))


def test_runs_on_meta_device(rotary) -> None:
    x1 = torch.empty(2, 5, 3, 4, device="meta")
    cos = torch.empty(5, 1, 4, device="meta")
    out1, out2 = torch.empty_like(x1), torch.empty_like(x1)
    rotary.apply_rotary(x1, x1, cos, cos, out1, out2, True)
    assert out1.device.type == "meta" and out2.shape == x1.shape
    q = torch.empty(2, 3, 5, 8, device="meta")
    angles = torch.empty(2, 5, 8, device="meta")
    q_embed, k_embed = rotary.apply_rotary_transformers(q, q, angles, angles)
    assert q_embed.device.type == "meta" and k_embed.shape == q.shape


@pytest.mark.parametrize("name", ["apply_rotary", "apply_rotary_transformers"])
def test_declared_properties_hold(rotary, name: str) -> None:
    props = rotary.__kernel_properties__[name]
    assert props == frozenset({"deterministic", "batch_invariant"})
    q, k = _input((9, 5, 3, 8), seed=4), _input((9, 5, 3, 8), seed=5)
    cos, sin = _input((9, 5, 8), seed=6), _input((9, 5, 8), seed=7)

    def run(n: int) -> torch.Tensor:
        if name == "apply_rotary_transformers":
            return torch.cat(rotary.apply_rotary_transformers(q[:n], k[:n], cos[:n], sin[:n], 2))
        x1, x2 = q[:n, ..., :4], q[:n, ..., 4:]
        c, s = cos[:n, :, None, :4], sin[:n, :, None, :4]
        return torch.cat(_apply(rotary, x1, x2, c, s, False))

    full = run(9)
    torch.testing.assert_close(run(9), full, atol=0, rtol=0)
    for n in (1, 2, 4):
        part = run(n)
        half = part.shape[0] // 2
        torch.testing.assert_close(part[:half], full[:n], atol=0, rtol=0)
        torch.testing.assert_close(part[half:], full[9 : 9 + n], atol=0, rtol=0)
