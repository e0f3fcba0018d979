"""The reference kernels are plain PyTorch: the cases that broke the removed fast-path tiers
now behave like the plain formula (issue 20: a compile that replayed another user's cache,
a crash, wrong results on unusual views, a deadlock after fork, ``CC`` parsing, flush to
zero). Each gives the plain formula's bits, or the plain formula's own error; nothing is
compiled, built or started.
"""

from __future__ import annotations

import ast
import json
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
import torch
from kernel_plugins_testing import run_forked, run_in_fresh_interpreter

import kernel_plugins
from tests.reference.samples import bitwise, sample_input

CORE = Path(kernel_plugins.__file__).resolve().parent
FORBIDDEN_MODULES = {"ctypes", "cffi", "subprocess", "distutils", "setuptools", "torch._inductor"}
ACTIVATIONS = [
    "silu_and_mul", "mul_and_silu", "gelu_and_mul", "gelu_tanh_and_mul", "fatrelu_and_mul",
    "silu", "gelu", "gelu_tanh", "gelu_fast", "gelu_new", "gelu_quick",
]  # fmt: skip


def _forbidden(node: ast.AST) -> str | None:
    """What ``node`` does that the core must not: load native code, start a process or
    compile (``None`` when it does nothing of the kind)."""
    names: list[str] = []
    if isinstance(node, ast.Import):
        names = [alias.name for alias in node.names]
    elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
        names = [node.module, *(f"{node.module}.{a.name}" for a in node.names)]
    for name in names:
        if name.split(".")[0] in FORBIDDEN_MODULES or name.startswith(("torch._dynamo", "torch._inductor")):
            return f"imports {name}"
        if name in ("torch.compile", "os.system", "os.popen", "os.fork"):
            return f"imports {name}"
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
        dotted = f"{node.value.id}.{node.attr}"
        if dotted in ("torch.compile", "os.system", "os.popen", "os.fork", "os.execv", "os.spawnv"):
            return f"uses {dotted}"
    return None


def test_the_core_compiles_loads_native_code_and_starts_processes_nowhere() -> None:
    problems = []
    for path in sorted(CORE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            what = _forbidden(node)
            if what:
                problems.append(f"{path.relative_to(CORE)}:{getattr(node, 'lineno', '?')}: {what}")
    assert problems == []
    assert not [p for p in CORE.rglob("*") if p.suffix in {".c", ".cc", ".cpp", ".h", ".so"}]


def test_the_rule_finds_what_it_forbids() -> None:
    code = "import ctypes\nfrom subprocess import run\nimport torch\ntorch.compile(f)\n"
    found = [w for n in ast.walk(ast.parse(code)) if (w := _forbidden(n))]
    assert found == ["imports ctypes", "imports subprocess", "uses torch.compile"]


EVERY_KERNEL_LARGE = r"""
import json, os, sys, warnings
import torch
compile_calls = []
def refuse(*args, **kwargs):
    compile_calls.append(repr(args)[:200])
    raise RuntimeError("torch.compile was called")
torch.compile = refuse
import kernel_plugins
from kernel_plugins.reference import reference_repo
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    act, rms, rot = (kernel_plugins.load(reference_repo(n), device="cpu")
                     for n in ("activation", "rmsnorm", "rotary"))
exact = {}
for dtype in (torch.float32, torch.bfloat16):
    x = torch.randn(1024, 4096).to(dtype)  # 4M elements: the direct and blocked paths
    for name in act._plain.__all__:
        out = torch.empty(1024, 2048 if "_and_" in name else 4096, dtype=dtype)
        want = getattr(act._plain, name)(torch.empty_like(out), x)
        exact[f"{name} {dtype}"] = torch.equal(getattr(act, name)(out, x), want)
    w = torch.randn(4096).to(dtype)
    exact[f"rms {dtype}"] = torch.equal(rms.apply_rms_norm(x, w, 1e-6), rms._plain.apply_rms_norm(x, w, 1e-6))
    a, b, c, s = x[:, :2048], x[:, 2048:], x[:, :2048] * 0.5, x[:, 2048:] * 0.25
    got = [torch.empty(1024, 2048, dtype=dtype) for _ in range(4)]
    rot.apply_rotary(a, b, c, s, got[0], got[1], True)
    rot._plain.apply_rotary(a, b, c, s, got[2], got[3], True)
    exact[f"rotary {dtype}"] = torch.equal(got[0], got[2]) and torch.equal(got[1], got[3])
counters = {}
if "torch._dynamo.utils" in sys.modules:  # imported by torch.library to switch dynamo off
    counters = {k: dict(v) for k, v in sys.modules["torch._dynamo.utils"].counters.items() if v}
print(json.dumps({
    "exact": exact,
    "compile_calls": compile_calls,
    "dynamo_counters": counters,
    "inductor_cache": sorted(os.listdir(os.environ["TORCHINDUCTOR_CACHE_DIR"])),
}))
"""


def test_large_calls_compile_nothing_and_ignore_cc_and_inductors_cache(tmp_path: Path) -> None:
    """A ``CC`` that would run a command, and an inductor cache another user could have
    planted: neither is read, nothing is compiled, every result is the plain formula's."""
    marker = tmp_path / "cc-ran"
    planted = tmp_path / "inductor-cache"
    planted.mkdir()
    (planted / "planted").write_text("another user's compiled code")
    bogus_cc = f"sh -c 'touch {marker}' #"
    env = {
        "CC": bogus_cc,
        "CXX": bogus_cc,
        "TORCHINDUCTOR_CACHE_DIR": str(planted),
        "KERNEL_PLUGINS_REFERENCE_FAST": "nocompile",  # a value of the removed tiers: no effect
    }
    done = run_forked(EVERY_KERNEL_LARGE, env=env, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["exact"] and all(report["exact"].values()), report["exact"]
    assert len(report["exact"]) == 2 * 13
    assert report["compile_calls"] == []
    assert report["dynamo_counters"] == {}  # nothing was traced or compiled
    assert report["inductor_cache"] == ["planted"]  # neither read into nor written to
    assert not marker.exists()


AFTER_FORK = r"""
import os, warnings
import torch
import kernel_plugins
from kernel_plugins.reference import reference_repo
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    act = kernel_plugins.load(reference_repo("activation"), device="cpu")
    rot = kernel_plugins.load(reference_repo("rotary"), device="cpu")
x = torch.randn(1024, 4096).bfloat16()
out = torch.empty(1024, 2048, dtype=torch.bfloat16)
act.silu_and_mul(out, x)  # large: the direct path, ATen's threads started in this process
o1, o2 = torch.empty_like(out), torch.empty_like(out)
rot.apply_rotary(x[:, :2048], x[:, 2048:], out, out, o1, o2, False)
pid = os.fork()
if pid == 0:
    torch.set_num_threads(1)  # what DataLoader workers do: ATen's OpenMP is not fork-safe
    again = torch.empty_like(out)
    act.silu_and_mul(again, x)
    p1, p2 = torch.empty_like(out), torch.empty_like(out)
    rot.apply_rotary(x[:, :2048], x[:, 2048:], out, out, p1, p2, False)
    ok = torch.equal(again, out) and torch.equal(p1, o1) and torch.equal(p2, o2)
    os._exit(0 if ok else 3)
_, status = os.waitpid(pid, 0)
print("child", os.waitstatus_to_exitcode(status))
"""


@pytest.mark.skipif(not hasattr(__import__("os"), "fork"), reason="no fork here")
def test_a_forked_child_computes_the_same_bits() -> None:
    done = run_in_fresh_interpreter(AFTER_FORK, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip().splitlines()[-1] == "child 0"


def _run_activation(module, name: str, x: torch.Tensor, out: torch.Tensor) -> torch.Tensor:
    fn = getattr(module, name)
    return fn(out, x, 0.3) if name == "fatrelu_and_mul" else fn(out, x)


@pytest.mark.parametrize("flush", [False, True])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16], ids=str)
def test_denormal_inputs_give_the_plain_formulas_bits_with_flush_to_zero_on_or_off(
    activation, rotary, rmsnorm, dtype, flush
) -> None:
    tiny = torch.finfo(dtype).smallest_normal
    x = sample_input((512, 1024), dtype)
    flat = x.view(-1)
    flat[::3] = (torch.linspace(-64, 64, flat[::3].numel()) * tiny).to(dtype)  # subnormals too
    torch.set_flush_denormal(flush)
    try:
        for name in ACTIVATIONS:
            shape = (512, 512) if "_and_" in name else (512, 1024)
            got = _run_activation(activation, name, x, torch.empty(shape, dtype=dtype))
            want = _run_activation(activation._plain, name, x, torch.empty(shape, dtype=dtype))
            assert bitwise(got, want), name
        w = sample_input((1024,), dtype, seed=1)
        assert bitwise(rmsnorm.apply_rms_norm(x, w, 1e-6), rmsnorm._plain.apply_rms_norm(x, w, 1e-6))
        c, s = x[:, 512:] * 0.5, x[:, :512] * 2
        got = (torch.empty(512, 512, dtype=dtype), torch.empty(512, 512, dtype=dtype))
        want = (torch.empty(512, 512, dtype=dtype), torch.empty(512, 512, dtype=dtype))
        rotary.apply_rotary(x[:, :512], x[:, 512:], c, s, *got, False)
        rotary._plain.apply_rotary(x[:, :512], x[:, 512:], c, s, *want, False)
        assert bitwise(got[0], want[0]) and bitwise(got[1], want[1])
    finally:
        torch.set_flush_denormal(False)  # PyTorch's default


def _same_or_same_error(make: Callable[[], tuple], kernel: Callable, plain: Callable) -> None:
    """Run ``kernel`` and ``plain`` on two fresh copies of the same layout (``make`` returns
    the arguments, then the base tensors whose memory they view); compare every base
    bitwise, or require the same error type from both."""
    args_k, bases_k = make()
    args_p, bases_p = make()
    try:
        plain(*args_p)
    except RuntimeError as plain_error:
        with pytest.raises(type(plain_error)):
            kernel(*args_k)
        return
    kernel(*args_k)
    for got, want in zip(bases_k, bases_p, strict=True):
        assert bitwise(got, want)


def _activation_layouts(name: str) -> dict[str, Callable[[], tuple]]:
    gated = "_and_" in name
    half = 512 if gated else 1024

    def base(seed: int = 0, shape=(512, 1024), dtype=torch.float32) -> torch.Tensor:
        return sample_input(shape, dtype, seed)

    def layout(build: Callable[[], tuple[torch.Tensor, torch.Tensor, tuple]]) -> Callable[[], tuple]:
        def make() -> tuple:
            out, x, bases = build()
            return (out, x), bases

        return make

    def transposed_x():
        big = base(shape=(1024, 512))
        out = torch.empty(512, half)
        return out, big.t(), (out, big)

    def stepped_x():
        big = base(shape=(512, 2048))
        out = torch.empty(512, half)
        return out, big[:, ::2], (out, big)

    def transposed_out():
        x = base()
        big = torch.zeros(half, 512)
        return big.t(), x, (big, x)

    def out_inside_a_larger_tensor():
        x = base()
        big = torch.zeros(512, half + 64)
        return big[:, 32 : 32 + half], x, (big, x)

    def out_is_x_or_its_first_half():
        x = base()
        return x[:, :half], x, (x,)

    def out_is_the_second_half_of_x():
        x = base()
        return x[:, 1024 - half :], x, (x,)

    def expanded_x():
        row = base(shape=(1, 1024))
        out = torch.empty(512, half)
        return out, row.expand(512, 1024), (out, row)

    def expanded_out():
        x = base()
        row = torch.zeros(1, half)
        return row.expand(512, half), x, (row, x)

    def wrong_out_shape():
        x = base()
        out = torch.empty(511, half)
        return out, x, (out, x)

    def float64_out():
        x = base()
        out = torch.empty(512, half, dtype=torch.float64)
        return out, x, (out, x)

    return {
        f.__name__: layout(f)
        for f in (
            transposed_x, stepped_x, transposed_out, out_inside_a_larger_tensor,
            out_is_x_or_its_first_half, out_is_the_second_half_of_x, expanded_x, expanded_out,
            wrong_out_shape, float64_out,
        )
    }  # fmt: skip


@pytest.mark.parametrize("name", ACTIVATIONS)
def test_activation_views_and_aliasing_give_the_plain_formulas_bits_or_its_error(activation, name):
    for label, make in _activation_layouts(name).items():
        try:
            _same_or_same_error(
                make,
                lambda out, x: _run_activation(activation, name, x, out),
                lambda out, x: _run_activation(activation._plain, name, x, out),
            )
        except AssertionError as e:
            raise AssertionError(f"{name}, {label}: {e}") from None


def _rotary_layouts() -> dict[str, Callable[[], tuple]]:
    def q(seed: int = 0, shape=(2, 256, 8, 128)) -> torch.Tensor:
        return sample_input(shape, torch.float32, seed).nan_to_num(0.0, 0.0, 0.0)

    def angles(seed: int) -> torch.Tensor:
        return sample_input((256, 1, 64), torch.float32, seed).nan_to_num(0.0, 0.0, 0.0)

    def separate():
        t, c, s = q(), angles(1), angles(2)
        o1, o2 = torch.empty(2, 256, 8, 64), torch.empty(2, 256, 8, 64)
        return (t[..., :64], t[..., 64:], c, s, o1, o2, False), (t, o1, o2)

    def in_place():
        t, c, s = q(), angles(1), angles(2)
        return (t[..., :64], t[..., 64:], c, s, t[..., :64], t[..., 64:], True), (t,)

    def in_place_second_half_first():
        t, c, s = q(), angles(1), angles(2)
        return (t[..., 64:], t[..., :64], c, s, t[..., 64:], t[..., :64], False), (t,)

    def swapped_outputs():
        t, c, s = q(), angles(1), angles(2)
        return (t[..., :64], t[..., 64:], c, s, t[..., 64:], t[..., :64], False), (t,)

    def both_outputs_one_tensor():
        t, c, s = q(), angles(1), angles(2)
        o = torch.zeros(2, 256, 8, 64)
        return (t[..., :64], t[..., 64:], c, s, o, o, False), (t, o)

    def overlapping_halves():
        t, c, s = q(), angles(1), angles(2)
        return (t[..., :64], t[..., 32:96], c, s, t[..., :64], t[..., 32:96], False), (t,)

    def stepped_halves():
        t, c, s = q(), angles(1), angles(2)
        return (t[..., ::2], t[..., 1::2], c, s, t[..., ::2], t[..., 1::2], True), (t,)

    def transposed_heads():
        t = q(shape=(2, 8, 256, 128)).transpose(1, 2)
        c, s = angles(1), angles(2)
        return (t[..., :64], t[..., 64:], c, s, t[..., :64], t[..., 64:], False), (t,)

    def output_is_the_angles():
        t = q()
        c, s = angles(1).expand(256, 8, 64).contiguous(), angles(2)
        x1, x2 = t[0, ..., :64], t[0, ..., 64:]
        return (x1, x2, c, s, c, x2, False), (t, c)

    def expanded_output():
        t, c, s = q(), angles(1), angles(2)
        row = torch.zeros(2, 256, 1, 64)
        return (t[..., :64], t[..., 64:], c, s, row.expand(2, 256, 8, 64), t[..., 64:], False), (t, row)

    def wrong_output_shape():
        t, c, s = q(), angles(1), angles(2)
        o1, o2 = torch.empty(2, 256, 8, 64), torch.empty(2, 255, 8, 64)
        return (t[..., :64], t[..., 64:], c, s, o1, o2, False), (t, o1, o2)

    return {
        f.__name__: f
        for f in (
            separate, in_place, in_place_second_half_first, swapped_outputs,
            both_outputs_one_tensor, overlapping_halves, stepped_halves, transposed_heads,
            output_is_the_angles, expanded_output, wrong_output_shape,
        )
    }  # fmt: skip


@pytest.mark.parametrize("layout", list(_rotary_layouts()))
def test_rotary_views_and_aliasing_give_the_plain_formulas_bits_or_its_error(
    rotary, low_thresholds, monkeypatch, layout
):
    ops = sys.modules[rotary.__name__ + "._ops"]
    taken: list[bool] = []
    real = ops._blocked
    monkeypatch.setattr(ops, "_blocked", lambda *a: taken.append(real(*a)) or taken[-1])
    _same_or_same_error(_rotary_layouts()[layout], rotary.apply_rotary, rotary._plain.apply_rotary)
    if layout in ("separate", "in_place", "in_place_second_half_first", "transposed_heads"):
        assert taken == [True]  # the blocked path itself was checked, not only the plain one
