"""The fast path's compiled and table tiers: taken where promised, refused where not right.

The tiers build code on first use (inductor, a C compiler), so every check here also
asserts which tier ran (``_fast.status()``), and the ways they can be wrong are forced: a
corrupted table, a compiled function that differs, a layout where ATen's own scalar code
rounds differently, no compiler at all. Results are always compared with the plain formula.
"""

from __future__ import annotations

import json
import shutil
import sys

import pytest
import torch
import torch.nn.functional as F
from kernel_plugins_testing import run_in_fresh_interpreter

from tests.reference.samples import bitwise as _bitwise
from tests.reference.samples import sample_input as _input
from tests.reference.samples import spy

ENV = "KERNEL_PLUGINS_REFERENCE_FAST"
GATED = ["silu_and_mul", "mul_and_silu", "gelu_and_mul", "gelu_tanh_and_mul", "fatrelu_and_mul"]
UNARY = ["silu", "gelu", "gelu_tanh", "gelu_fast", "gelu_new", "gelu_quick"]

needs_cc = pytest.mark.skipif(
    shutil.which("cc") is None and shutil.which("gcc") is None, reason="no C compiler here"
)


def _mod(kernel, name: str):
    return sys.modules[f"{kernel.__name__}.{name}"]


def _run(activation, name: str, x: torch.Tensor) -> torch.Tensor:
    gated = name in GATED
    out = torch.full((*x.shape[:-1], x.shape[-1] // 2) if gated else x.shape, 7.0, dtype=x.dtype)
    fn = getattr(activation, name)
    return fn(out, x, 0.3) if name == "fatrelu_and_mul" else fn(out, x)


def _native(activation, name: str, x: torch.Tensor) -> torch.Tensor:
    ops = _mod(activation, "_ops")
    spec = next(s for s in ops.ACTIVATIONS if s.name == name)
    return ops._forward(spec, x, (0.3,) if spec.params else ())


@pytest.fixture
def tier_calls(activation, monkeypatch):
    """Which tier computed each activation call: ``table``, ``compiled`` or ``direct``."""
    tiers = _mod(activation, "_tiers")
    calls: list[str] = []
    spy(monkeypatch, tiers, "_run_table", calls, "table")
    spy(monkeypatch, tiers, "_run_direct", calls, "direct")
    spy(monkeypatch, tiers, "_run_blocked", calls, "blocked", when=bool)
    real_compiled = tiers._compiled_for

    def compiled_for(spec, x):
        fused = real_compiled(spec, x)
        if fused is None:
            return None

        def call(*args):
            ran = fused(*args)
            if ran:
                calls.append("compiled")
            return ran

        return call

    monkeypatch.setattr(tiers, "_compiled_for", compiled_for)
    return calls


def _expected_tier(activation, name: str, dtype: torch.dtype) -> str:
    tiers = _mod(activation, "_tiers")
    if dtype == torch.bfloat16 or (dtype == torch.float16 and name in UNARY):
        return "table"
    if name in tiers.BLOCKED:
        return "blocked"
    return "compiled" if name in tiers.COMPILED and dtype == torch.float32 else "direct"


@needs_cc
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
@pytest.mark.parametrize("name", GATED + UNARY)
def test_each_activation_takes_its_tier_and_keeps_the_formulas_bits(
    activation, tier_calls, name, dtype
):
    # at the shipped thresholds; rows and thread chunks are multiples of the vector step
    x = _input((1024, 4096), dtype)
    got = _run(activation, name, x)
    assert tier_calls == [_expected_tier(activation, name, dtype)]
    assert _bitwise(got, _native(activation, name, x))
    if name in GATED:  # what the community suite compares with, atol=0
        d = x.shape[-1] // 2
        a, b = x[:, :d], x[:, d:]
        expected = {
            "silu_and_mul": lambda: F.silu(a) * b,
            "mul_and_silu": lambda: a * F.silu(b),
            "gelu_and_mul": lambda: F.gelu(a) * b,
            "gelu_tanh_and_mul": lambda: F.gelu(a, approximate="tanh") * b,
        }.get(name)
        if expected is not None:  # fatrelu: the suite's formula maps NaN differently
            assert _bitwise(got, expected())


@needs_cc
@pytest.mark.parametrize("name", ["silu_and_mul", "gelu_tanh_and_mul", "gelu_new"])
def test_float16_tiers_keep_the_bits(activation, tier_calls, low_tier_thresholds, name):
    x = _input((128, 4096), torch.float16)
    assert _bitwise(_run(activation, name, x), _native(activation, name, x))
    assert len(tier_calls) == 1 and (name in GATED or tier_calls == ["table"])


@needs_cc
def test_tiers_work_under_inference_mode(activation, tier_calls, low_tier_thresholds):
    with torch.inference_mode():
        for dtype in (torch.float32, torch.bfloat16):
            x = _input((256, 2048), dtype)
            assert _bitwise(
                _run(activation, "silu_and_mul", x), _native(activation, "silu_and_mul", x)
            )
    assert tier_calls == ["compiled", "table"]


@pytest.mark.parametrize("shape", [(300, 1030), (257, 2176)], ids=str)
def test_a_layout_with_scalar_remainders_stays_on_the_direct_path(
    activation, tier_calls, low_tier_thresholds, monkeypatch, shape
):
    """(300, 1030): rows not a multiple of the vector step; (257, 2176): with two threads
    ATen's loop is split at element 139808, inside a vector step."""
    monkeypatch.setattr(torch, "get_num_threads", lambda: 2)
    for dtype in (torch.float32, torch.bfloat16):
        x = _input(shape, dtype)
        assert _bitwise(_run(activation, "silu_and_mul", x), _native(activation, "silu_and_mul", x))
    assert tier_calls == ["direct", "direct"]


@needs_cc
def test_tiers_start_at_their_thresholds(activation, tier_calls):
    """Below a few million elements handing work to threads or checking compiled code
    costs more than it saves, so the direct ops run; "no slower than before" for those."""
    fast = _mod(activation, "_fast")
    assert fast.MIN_ELEMENTS < fast.LOOPS_MIN_ELEMENTS < fast.COMPILED_MIN_ELEMENTS
    cases = [
        ((512, 2048), torch.bfloat16, "direct"),  # 1048576 elements
        ((1024, 2048), torch.bfloat16, "table"),  # 2097152
        ((1024, 2048), torch.float32, "direct"),  # 2097152: below the compiled tier
        ((2048, 2048), torch.float32, "compiled"),  # 4194304
    ]
    for shape, dtype, _ in cases:
        x = _input(shape, dtype)
        assert _bitwise(_run(activation, "silu_and_mul", x), _native(activation, "silu_and_mul", x))
    assert tier_calls == [tier for _, _, tier in cases]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=str)
@pytest.mark.parametrize("name", ["gelu_fast", "gelu_new"])
def test_blocked_tier_keeps_the_formulas_bits(
    activation, tier_calls, low_tier_thresholds, monkeypatch, name, dtype
):
    """Several blocks; with three threads, a last block that ATen would split inside a
    vector step (32,832 elements: 16,416 = 64 * 256.5 per thread) merged into the block
    before it; blocks of 65,600 elements, which two threads would split inside a vector
    step (32,800 each), so that input goes the direct way."""
    fast = _mod(activation, "_fast")
    cases = [
        ((256, 1024), 20 * 1024, 2, "blocked"),
        ((1113, 64), 38400, 3, "blocked"),
        ((256, 1024), 65536 + 64, 2, "direct"),
    ]
    for shape, block, threads, _ in cases:
        monkeypatch.setattr(torch, "get_num_threads", lambda threads=threads: threads)
        monkeypatch.setattr(fast, "BLOCK_BYTES", block * torch.finfo(dtype).bits // 8)
        x = _input(shape, dtype)
        assert _bitwise(_run(activation, name, x), _native(activation, name, x)), shape
    assert tier_calls == [tier for *_, tier in cases]
    assert fast.status()[f"{name} cpu {str(dtype).removeprefix('torch.')}"]["tier"] == "blocked"


def test_block_spans_keep_every_piece_on_atens_vector_code(activation, monkeypatch):
    tiers = _mod(activation, "_tiers")
    monkeypatch.setattr(torch, "get_num_threads", lambda: 2)
    spans = tiers._block_spans(4 * 65536, 65536)
    assert spans == [(i, i + 65536) for i in range(0, 4 * 65536, 65536)]
    assert tiers._block_spans(1000, 512) is None  # the whole is not a multiple of 64
    assert tiers._block_spans(4 * 65536, 65536 + 64) is None  # 32,800 per thread
    monkeypatch.setattr(torch, "get_num_threads", lambda: 3)
    # a tail of 32,832 would be split 16,416 per thread: it joins the block before it
    assert tiers._block_spans(71232, 38400) == [(0, 71232)]
    assert tiers._block_spans(3 * 38400, 38400) == [(0, 38400), (38400, 76800), (76800, 115200)]


def test_a_blocked_tier_that_differs_is_refused_by_its_probe(
    activation, tier_calls, low_tier_thresholds, monkeypatch
):
    tiers, fast = _mod(activation, "_tiers"), _mod(activation, "_fast")
    monkeypatch.setattr(fast, "_ADMITTED", {})
    spec = next(s for s in _mod(activation, "_native").ACTIVATIONS if s.name == "gelu_new")
    real = tiers.SCRATCH[spec.act]

    def off_by_one_ulp(x, out, params, scratch):
        real(x, out, params, scratch)
        out.view(torch.int32)[-1] += 1

    monkeypatch.setitem(tiers.SCRATCH, spec.act, off_by_one_ulp)
    x = _input((256, 1024), torch.float32)
    assert _bitwise(_run(activation, "gelu_new", x), _native(activation, "gelu_new", x))
    assert tier_calls == ["direct"]
    report = fast.status()["gelu_new cpu float32"]
    assert report["tier"] == "uncompiled" and "probe results differ" in report["reason"]


def test_a_blocked_probe_that_cannot_split_its_input_says_so(
    activation, tier_calls, low_tier_thresholds, monkeypatch
):
    tiers, fast = _mod(activation, "_tiers"), _mod(activation, "_fast")
    monkeypatch.setattr(fast, "_ADMITTED", {})
    monkeypatch.setattr(tiers, "_block_spans", lambda numel, block: None)
    x = _input((256, 1024), torch.float64)
    assert _bitwise(_run(activation, "gelu_fast", x), _native(activation, "gelu_fast", x))
    assert tier_calls == ["direct"]
    report = fast.status()["gelu_fast cpu float64"]
    assert report == {
        "tier": "uncompiled",
        "first_call_s": report["first_call_s"],
        "reason": "the probe input does not split into aligned blocks",
    }


def test_admission_probes_once_per_key_even_under_concurrent_first_calls(activation, monkeypatch):
    import threading
    import time

    fast = _mod(activation, "_fast")
    monkeypatch.setattr(fast, "_ADMITTED", {})
    probes: list[str] = []

    def slow_probe(answer):
        def probe():
            probes.append(answer)
            time.sleep(0.05)  # long enough for the other threads to arrive meanwhile
            return answer

        return probe

    key = ("t-admit", "cpu", "float32")
    results: list[bool] = []
    threads = [
        threading.Thread(target=lambda: results.append(fast.admit(key, "blocked", slow_probe(None))))
        for _ in range(4)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert probes == [None] and results == [True] * 4
    assert fast.status()["t-admit cpu float32"]["tier"] == "blocked"
    refused = ("t-refused-admit", "cpu", "float32")
    assert fast.admit(refused, "blocked", slow_probe("wrong bits")) is False
    assert fast.admit(refused, "blocked", slow_probe(None)) is False  # kept, not probed again
    assert probes == [None, "wrong bits"]
    assert fast.status()["t-refused-admit cpu float32"]["reason"] == "wrong bits"


def test_aten_scalar_remainder_rounds_differently_from_its_vector_code():
    """Why ``vector_aligned`` exists: the same values, computed as a 31-element tail (scalar
    code) and inside long rows (vector code), do not all give the same float32 silu."""
    values = torch.randn(4096, 31, generator=torch.Generator().manual_seed(3)) * 4
    scalar = torch.stack([F.silu(row) for row in values])
    vector = F.silu(torch.cat([values, values], dim=1))[:, :31]
    assert not torch.equal(scalar, vector)


def test_vector_aligned_follows_atens_thread_split(activation, monkeypatch):
    fast = _mod(activation, "_fast")
    monkeypatch.setattr(torch, "get_num_threads", lambda: 2)
    assert fast.vector_aligned(256 * 1024, 1024)
    assert not fast.vector_aligned(300 * 515, 515)  # rows
    assert not fast.vector_aligned(257 * 1088, 1088)  # chunks of 139808 = 64 * 2184.5
    assert fast.vector_aligned(64 * 100, 64 * 100)  # below ATen's grain: one chunk
    monkeypatch.setattr(torch, "get_num_threads", lambda: 3)
    assert not fast.vector_aligned(256 * 1024, 1024)  # 262144 / 3 is not a multiple of 64
    assert fast.vector_aligned(3 * 64 * 1024, 1024)
    monkeypatch.setattr(torch, "get_num_threads", lambda: 1)
    assert fast.vector_aligned(257 * 1088, 1088)  # one thread: rows only


def test_nocompile_setting_builds_nothing(activation, tier_calls, low_tier_thresholds, monkeypatch):
    monkeypatch.setenv(ENV, "nocompile")
    for dtype in (torch.float32, torch.bfloat16):
        x = _input((256, 2048), dtype)
        assert _bitwise(_run(activation, "silu", x), _native(activation, "silu", x))
    assert tier_calls == ["direct", "direct"]


@needs_cc
def test_a_corrupted_table_is_refused_by_its_probe(
    activation, tier_calls, low_tier_thresholds, monkeypatch
):
    tiers, fast = _mod(activation, "_tiers"), _mod(activation, "_fast")
    monkeypatch.setattr(_mod(activation, "_fast"), "_ADMITTED", {})
    real = tiers._table_of

    def corrupted(name, dtype, params):
        table = real(name, dtype, params).clone()
        table[torch.tensor(1.5, dtype=dtype).view(torch.int16).item() & 0xFFFF] += 1
        return table

    monkeypatch.setattr(tiers, "_table_of", corrupted)
    x = _input((256, 2048), torch.bfloat16)
    assert _bitwise(_run(activation, "gelu_tanh", x), _native(activation, "gelu_tanh", x))
    assert tier_calls == ["direct"]
    report = fast.status()["gelu_tanh cpu bfloat16"]
    assert report["tier"] == "uncompiled" and "1 of 65536 probe results differ" in report["reason"]


def test_a_compiled_function_is_used_only_after_its_probe_passes(activation):
    compiled, fast = _mod(activation, "_compiled"), _mod(activation, "_fast")

    def double(out, x):
        out.copy_(x * 2)

    assert (
        compiled.compiled("t-refused", double, "cpu", torch.float32, lambda fn: "wrong bits")
        is None
    )
    assert fast.status()["t-refused cpu float32"]["reason"] == "wrong bits"

    def probe_raises(fn):
        raise RuntimeError("no compiler")

    assert compiled.compiled("t-raises", double, "cpu", torch.float32, probe_raises) is None
    assert (
        "compiling failed: RuntimeError: no compiler"
        in fast.status()["t-raises cpu float32"]["reason"]
    )


def test_a_compiled_call_that_fails_takes_the_key_off_the_tier(activation):
    compiled, fast = _mod(activation, "_compiled"), _mod(activation, "_fast")

    def add(out, x, y):
        out.copy_(x + y)

    def probe(fn):
        x = torch.arange(8.0)
        out = torch.empty(8)
        fn(out, x, x)
        return None if torch.equal(out, x * 2) else "wrong"

    fused = compiled.compiled("t-fails", add, "cpu", torch.float32, probe)
    assert fused is not None and fast.status()["t-fails cpu float32"]["tier"] == "compiled"
    assert fused(torch.empty(3), torch.ones(4), torch.ones(5)) is False  # shapes do not broadcast
    assert fast.status()["t-fails cpu float32"]["tier"] == "uncompiled"
    assert compiled.compiled("t-fails", add, "cpu", torch.float32, probe) is None  # not retried


def test_inductor_backend_names_devices_without_a_code_generator(activation):
    compiled = _mod(activation, "_compiled")
    assert compiled.inductor_backend("cpu") is None
    assert "no code generator" in compiled.inductor_backend("no_such_device")


# ---------------------------------------------------------------- rotary and rmsnorm


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
def test_rotary_c_loop_is_bitwise_for_separate_and_in_place_outputs(
    rotary, low_tier_thresholds, monkeypatch, dtype
):
    cloops = _mod(rotary, "_cloops")
    warm = _input((256, 8, 128), dtype).nan_to_num(0.0, 0.0, 0.0)
    outs = (torch.empty(256, 8, 64, dtype=dtype), torch.empty(256, 8, 64, dtype=dtype))
    rotary.apply_rotary(
        warm[..., :64], warm[..., 64:], warm[:, :1, :64], warm[:, :1, 64:], *outs, False
    )
    key = ("apply_rotary", "cpu", str(dtype).removeprefix("torch."))
    assert _mod(rotary, "_fast")._ADMITTED[key] is True  # its probe passed (on this first use, or earlier)
    ran: list[bool] = []
    real = cloops.rotate
    monkeypatch.setattr(cloops, "rotate", lambda *args: ran.append(real(*args)) or ran[-1])
    q = _input((2, 512, 8, 128), dtype).nan_to_num(0.0, 0.0, 0.0)
    cos, sin = _input((512, 1, 64), dtype, 1), _input((512, 1, 64), dtype, 2)
    for conj in (False, True):
        s = -sin if conj else sin
        x1, x2 = q[..., :64], q[..., 64:]
        e1, e2 = x1 * cos - x2 * s, x2 * cos + x1 * s
        o1, o2 = torch.empty_like(e1), torch.empty_like(e2)
        rotary.apply_rotary(x1, x2, cos, sin, o1, o2, conj)
        assert _bitwise(o1, e1) and _bitwise(o2, e2)
        inplace = q.clone()
        rotary.apply_rotary(
            inplace[..., :64],
            inplace[..., 64:],
            cos,
            sin,
            inplace[..., :64],
            inplace[..., 64:],
            conj,
        )
        assert _bitwise(inplace[..., :64], e1) and _bitwise(inplace[..., 64:], e2)
    assert ran == [True, True, True, True]  # each call by the C loop


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
def test_rotary_c_loop_keeps_infinities_and_nans_where_the_formula_has_them(
    rotary, low_tier_thresholds, monkeypatch, dtype
):
    """Products of infinities and zeros, infinities that cancel, NaN inputs and products
    that overflow, in both halves and in the angles; in place and into separate outputs."""
    cloops = _mod(rotary, "_cloops")
    ran: list[bool] = []
    real = cloops.rotate
    monkeypatch.setattr(cloops, "rotate", lambda *args: ran.append(real(*args)) or ran[-1])
    gen = torch.Generator().manual_seed(5)
    specials = torch.tensor([float("inf"), float("-inf"), float("nan"), 0.0, -0.0, 3e38, -3e38])
    q = _input((2, 512, 8, 128), dtype)
    cos, sin = _input((512, 1, 64), dtype, 1), _input((512, 1, 64), dtype, 2)
    for t in (q, cos, sin):
        flat = t.view(-1)
        where = torch.randint(0, flat.numel(), (flat.numel() // 50,), generator=gen)
        flat[where] = specials[torch.randint(0, 7, where.shape, generator=gen)].to(dtype)
    x1, x2 = q[..., :64], q[..., 64:]
    e1, e2 = x1 * cos - x2 * sin, x2 * cos + x1 * sin
    assert bool(e1.isnan().any()) and bool(e1.isinf().any())
    o1, o2 = torch.empty_like(e1), torch.empty_like(e2)
    rotary.apply_rotary(x1, x2, cos, sin, o1, o2, False)
    assert _bitwise(o1, e1) and _bitwise(o2, e2)
    rotary.apply_rotary(x1, x2, cos, sin, x1, x2, False)
    assert _bitwise(x1, e1) and _bitwise(x2, e2)
    assert ran[-2:] == [True, True]  # both by the C loop (after its probe, on first use)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16], ids=str)
@pytest.mark.parametrize("shape", [(4096, 1024), (256, 8192), (4, 32, 20000)], ids=str)
def test_fused_rmsnorm_keeps_its_documented_bound(
    rmsnorm, low_tier_thresholds, monkeypatch, dtype, shape
):
    ops, fast = _mod(rmsnorm, "_ops"), _mod(rmsnorm, "_fast")
    taken: list[bool] = []
    real = ops._fused

    def fused(*args):
        result = real(*args)
        taken.append(result is not None)
        return result

    monkeypatch.setattr(ops, "_fused", fused)
    big = 4 if dtype == torch.bfloat16 else 2  # float16 overflows beyond 65504
    scale = torch.logspace(-big, big, shape[-2]).unsqueeze(-1)  # rows of very different sizes
    x = (_input(shape, torch.float32).nan_to_num(0.0, 0.0, 0.0) * scale).to(dtype)
    w = _input(shape[-1:], dtype, seed=1).nan_to_num(0.0, 0.0, 0.0)
    out, rstd = rmsnorm.ops.apply_rms_norm(x, w, 1e-6)
    assert taken == [True]  # the compiled tier computed it
    assert fast.status()[f"apply_rms_norm cpu {str(dtype)[6:]}"]["tier"] == "compiled"
    again = rmsnorm.ops.apply_rms_norm(x, w, 1e-6)
    assert _bitwise(again[0], out) and _bitwise(again[1], rstd)  # deterministic
    monkeypatch.setenv(ENV, "0")
    plain_out, plain_rstd = rmsnorm.ops.apply_rms_norm(x, w, 1e-6)
    assert out.dtype == plain_out.dtype and rstd.dtype == plain_rstd.dtype
    assert ops.within_bound(out, rstd, plain_out, plain_rstd, shape[-1])
    # and the bound can fail: three units in the last place is outside it
    off = plain_out.clone()
    off.view(-1)[0] = torch.nextafter(
        torch.nextafter(
            torch.nextafter(off.view(-1)[:1], off.new_full((1,), 1e4)), off.new_full((1,), 1e4)
        ),
        off.new_full((1,), 1e4),
    )[0]
    assert not ops.within_bound(off, plain_rstd, plain_out, plain_rstd, shape[-1])


# ---------------------------------------------------------------- no compiler

NO_COMPILER = r"""
import json, os, sys, tempfile, warnings
os.environ["CC"] = os.environ["CXX"] = "/nonexistent/cc"
os.environ["TORCHINDUCTOR_CACHE_DIR"] = tempfile.mkdtemp()  # nothing built earlier
import torch, torch.nn.functional as F
import kernel_plugins
from kernel_plugins.reference import reference_repo
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    act = kernel_plugins.load(reference_repo("activation"), device="cpu")
fast = sys.modules[act.__name__ + "._fast"]
exact = []
for dtype in (torch.float32, torch.bfloat16):
    x = torch.randn(1024, 4096).to(dtype)  # at the tiers' shipped thresholds
    out = torch.empty(1024, 2048, dtype=dtype)
    act.silu_and_mul(out, x)
    exact.append(torch.equal(out, F.silu(x[:, :2048]) * x[:, 2048:]))
print(json.dumps({"exact": exact, "status": fast.status()}))
"""


def test_without_a_compiler_the_fast_path_keeps_the_bits_and_says_why():
    done = run_in_fresh_interpreter(NO_COMPILER, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["exact"] == [True, True]
    status = report["status"]
    assert status["c-loops host any"]["tier"] == "uncompiled"
    assert "no C compiler found" in status["c-loops host any"]["reason"]
    assert status["silu_and_mul cpu float32"]["tier"] == "uncompiled"
    assert status["silu_and_mul cpu float32"]["reason"].startswith("compiling failed")


def test_fast_path_status_is_public_and_sorted(activation, low_tier_thresholds):
    from kernel_plugins.reference import fast_path_status

    x = _input((256, 2048), torch.float32)
    _run(activation, "silu_and_mul", x)
    status = fast_path_status()
    assert list(status) == sorted(status)
    assert status["silu_and_mul cpu float32"]["tier"] in {"compiled", "uncompiled"}
    assert set(status["silu_and_mul cpu float32"]) == {"tier", "first_call_s", "reason"}


def test_a_disabled_torch_compile_is_a_reason_not_a_slow_tier(activation):
    import torch._dynamo

    compiled = _mod(activation, "_compiled")
    with torch._dynamo.config.patch(disable=True):
        assert "disabled" in compiled.inductor_backend("cpu")
    assert compiled.inductor_backend("cpu") is None


def test_same_bits_tells_signed_zeros_apart_and_matches_any_nan(activation):
    fast = _mod(activation, "_fast")
    assert not fast.same_bits(torch.tensor([0.0]), torch.tensor([-0.0]))
    assert fast.same_bits(torch.tensor([float("nan")]), -torch.tensor([float("nan")]))
    assert fast.bit_mismatches(torch.tensor([1.0, 2.0, 3.0]), torch.tensor([1.0, 2.5, -3.0])) == 2
    assert not fast.same_bits(torch.zeros(2), torch.zeros(2, dtype=torch.float64))


@needs_cc
def test_rotary_c_loop_declines_outputs_that_could_corrupt_its_inputs(rotary):
    cloops = _mod(rotary, "_cloops")
    q = _input((64, 4, 128), torch.float32).nan_to_num(0.0, 0.0, 0.0)
    cos, sin = _input((64, 1, 64), torch.float32, 1), _input((64, 1, 64), torch.float32, 2)
    x1, x2 = q[..., :64], q[..., 64:]
    sep = (torch.empty(64, 4, 64), torch.empty(64, 4, 64))
    assert cloops.rotate(x1, x2, cos, sin, *sep, False)  # separate outputs
    assert cloops.rotate(x1, x2, cos, sin, x1, x2, False)  # in place on the halves
    assert not cloops.rotate(x1, x2, cos, sin, x2, x1, False)  # swapped: out1 is x2
    over1, over2 = q[..., :64], q[..., 32:96]  # halves that overlap
    assert not cloops.rotate(over1, over2, cos, sin, over1, over2, False)
    angles = torch.randn(64, 4, 128)
    c_in_out = angles[..., :64]
    assert not cloops.rotate(
        c_in_out, angles[..., 64:], c_in_out, sin, c_in_out, angles[..., 64:], False
    )
    wide = torch.empty(64, 1, 64).expand(64, 4, 64)  # an output that repeats elements
    assert not cloops.rotate(x1, x2, cos, sin, wide, sep[1], False)
    assert not cloops.rotate(x1, x2, cos, sin, sep[0], sep[0], False)  # outputs overlap
    strided = torch.empty(64, 4, 128)[..., ::2]  # last dimension not contiguous
    assert not cloops.rotate(x1, x2, cos, sin, strided, sep[1], False)
    assert not cloops.rotate(
        x1.double(), x2.double(), cos.double(), sin.double(), *(t.double() for t in sep), False
    )


@needs_cc
@pytest.mark.parametrize("threads", [1, 3])
def test_c_loops_give_the_same_bits_with_any_thread_count(activation, rotary, monkeypatch, threads):
    """The loops split rows between ``torch.get_num_threads()`` workers (none for one)."""
    cloops = _mod(activation, "_cloops")
    tiers = _mod(activation, "_tiers")
    x = _input((300, 2 * 1088), torch.bfloat16)
    spec = next(s for s in _mod(activation, "_ops").ACTIVATIONS if s.name == "gelu_and_mul")
    table = tiers._table_of("gelu_and_mul", torch.bfloat16, ())
    expected = torch.empty(300, 1088, dtype=torch.bfloat16)
    cloops.lookup_mul(expected, x, table, act_first=True)
    q = _input((64, 5, 128), torch.float32).nan_to_num(0.0, 0.0, 0.0)
    cos, sin = _input((64, 1, 64), torch.float32, 1), _input((64, 1, 64), torch.float32, 2)
    want = (torch.empty(64, 5, 64), torch.empty(64, 5, 64))
    assert cloops.rotate(q[..., :64], q[..., 64:], cos, sin, *want, False)
    monkeypatch.setattr(torch, "get_num_threads", lambda: threads)
    got = torch.empty_like(expected)
    cloops.lookup_mul(got, x, table, act_first=True)
    assert spec.kind == "act_and_mul" and torch.equal(
        got.view(torch.int16), expected.view(torch.int16)
    )
    rotated = (torch.empty(64, 5, 64), torch.empty(64, 5, 64))
    assert cloops.rotate(q[..., :64], q[..., 64:], cos, sin, *rotated, False)
    assert _bitwise(rotated[0], want[0]) and _bitwise(rotated[1], want[1])


AFTER_FORK = r"""
import os, sys, warnings
import torch
import kernel_plugins
from kernel_plugins.reference import reference_repo
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    act = kernel_plugins.load(reference_repo("activation"), device="cpu")
x = torch.randn(1024, 4096).bfloat16()
out = torch.empty(1024, 2048, dtype=torch.bfloat16)
act.silu_and_mul(out, x)  # the table tier: its worker threads exist in this process
pid = os.fork()
if pid == 0:  # the child has the pool object but none of its threads
    torch.set_num_threads(1)  # ATen's OpenMP is not fork-safe (DataLoader workers do this)
    torch.get_num_threads = lambda: 2  # yet split the C loops in two: a pool is needed
    again = torch.empty_like(out)
    act.silu_and_mul(again, x)
    os._exit(0 if torch.equal(again, out) else 3)
_, status = os.waitpid(pid, 0)
print("child", os.waitstatus_to_exitcode(status))
"""


@needs_cc
@pytest.mark.skipif(not hasattr(__import__("os"), "fork"), reason="no fork here")
def test_c_loops_work_in_a_forked_child(activation):
    done = run_in_fresh_interpreter(AFTER_FORK, timeout=60)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip().splitlines()[-1] == "child 0"
