"""Operator contracts: the vocabulary, declarations, check_module, and the deterministic-GEMM
example (a contract must never be served by an implementation that breaks it)."""

from __future__ import annotations

import types

import pytest
import torch
from torch import nn

import kernel_plugins
from kernel_plugins import contracts
from kernel_plugins.contracts import (
    check_module,
    declared_properties,
    normalize_require,
    public_members,
    register_property,
    validate_properties,
)
from kernel_plugins.errors import ContractError
from kernel_plugins.layers import (
    LocalLayerRepository,
    Mode,
    kernel_choice,
    kernelize,
    use_kernel_forward_from_hub,
    use_kernel_mapping,
)

# ------------------------------------------------------------------ vocabulary


def test_vocabulary_has_the_documented_properties():
    assert {"deterministic", "batch_invariant"} <= contracts.known_properties()
    assert "bitwise identical" in contracts.PROPERTIES["deterministic"]


@pytest.mark.parametrize(
    ("require", "expected"),
    [
        (None, frozenset()),
        ((), frozenset()),
        ("deterministic", frozenset({"deterministic"})),
        (["batch_invariant", "deterministic"], frozenset({"batch_invariant", "deterministic"})),
    ],
)
def test_normalize_require(require, expected):
    assert normalize_require(require) == expected


@pytest.mark.parametrize(
    ("require", "message"),
    [
        ({"determinstic"}, "unknown kernel property 'determinstic'.*known properties: "),
        ({"a", "b"}, "unknown kernel properties 'a', 'b'"),
        ({1}, "must be strings"),
    ],
)
def test_unknown_requirements_list_known_ones(require, message):
    with pytest.raises(ContractError, match=message) as info:
        normalize_require(require)
    if "known" in message:
        assert "batch_invariant, deterministic" in str(info.value)


def test_validate_properties_refuses_a_bare_string():
    with pytest.raises(ContractError, match="write {'deterministic'}"):
        validate_properties("deterministic")


def test_register_property(monkeypatch):
    monkeypatch.setattr(contracts, "PROPERTIES", dict(contracts.PROPERTIES))
    register_property("fp32_accumulate", "accumulates in float32")
    register_property("fp32_accumulate", "accumulates in float32")  # idempotent
    assert normalize_require({"fp32_accumulate"}) == {"fp32_accumulate"}
    with pytest.raises(ContractError, match="already registered"):
        register_property("fp32_accumulate", "something else")
    with pytest.raises(ContractError, match="lowercase identifier"):
        register_property("Bad-Name", "x")


# ---------------------------------------------------------------- declarations
def make_module(name: str, code: str, layers_code: str | None = None) -> types.ModuleType:
    mod = types.ModuleType(name)
    exec(code, mod.__dict__)
    if layers_code is not None:
        lmod = types.ModuleType(f"{name}.layers")
        exec(layers_code, lmod.__dict__)
        mod.layers = lmod
    return mod


def test_declared_properties_of_classes_and_functions():
    mod = make_module(
        "kdecl",
        "__kernel_properties__ = {'f': {'deterministic'}, 'alias': ['batch_invariant']}\n"
        "def f(x): return x\n"
        "def g(x): return x\n",
    )
    assert declared_properties(mod.f, module=mod) == {"deterministic"}
    assert declared_properties(mod.g, module=mod) == frozenset()
    assert declared_properties(mod.f, module=mod, name="alias") == {"batch_invariant"}
    cls = type("L", (), {"kernel_properties": frozenset({"deterministic", "future_prop"})})
    assert declared_properties(cls) == {"deterministic", "future_prop"}
    assert declared_properties(type("N", (), {})) == frozenset()


@pytest.mark.parametrize(
    ("code", "message"),
    [
        ("__kernel_properties__ = ['f']\ndef f(): pass\n", "must be a dict"),
        ("__kernel_properties__ = {'f': 'deterministic'}\ndef f(): pass\n", "must be a set"),
        ("__kernel_properties__ = {'f': {3}}\ndef f(): pass\n", "non-string entries"),
    ],
)
def test_malformed_declarations(code, message):
    mod = make_module("kbad", code)
    with pytest.raises(ContractError, match=message):
        declared_properties(mod.f, module=mod)


DET = "frozenset({'deterministic'})"

CHECK_CASES = [
    # (id, module code, layers code, require, passes, message parts)
    (
        "all-declared",
        f"__kernel_properties__ = {{'f': {DET}, 'g': {DET}}}\ndef f(): pass\ndef g(): pass\n",
        None,
        {"deterministic"},
        True,
        [],
    ),
    (
        "one-lacks",
        f"__kernel_properties__ = {{'f': {DET}}}\ndef f(): pass\ndef g(): pass\n",
        None,
        {"deterministic"},
        False,
        ["function `g` does not declare deterministic (declares: none)"],
    ),
    ("empty", "", None, {"deterministic"}, False, ["declares nothing"]),
    ("empty-no-require", "", None, set(), True, []),
    (
        "imported-helpers-ignored",
        f"from os.path import join\nimport math\n__kernel_properties__ = {{'f': {DET}}}\n"
        "def f(): pass\ndef _private(): pass\n",
        None,
        {"deterministic"},
        True,
        [],
    ),
    (
        "__all__-limits",
        f"__all__ = ['f']\n__kernel_properties__ = {{'f': {DET}}}\ndef f(): pass\n"
        "def undeclared(): pass\n",
        None,
        {"deterministic"},
        True,
        [],
    ),
    (
        "layer-lacks",
        f"__kernel_properties__ = {{'f': {DET}}}\ndef f(): pass\n",
        "class Good:\n    kernel_properties = frozenset({'deterministic', 'batch_invariant'})\n"
        "class Plain:\n    pass\n",
        {"deterministic", "batch_invariant"},
        False,
        [
            "function `f` does not declare batch_invariant (declares: deterministic)",
            "layer `Plain` does not declare batch_invariant, deterministic",
        ],
    ),
    (
        "layers-only",
        "",
        "class Good:\n    kernel_properties = frozenset({'deterministic'})\n",
        {"deterministic"},
        True,
        [],
    ),
]


@pytest.mark.parametrize(
    ("code", "layers", "require", "passes", "parts"),
    [c[1:] for c in CHECK_CASES],
    ids=[c[0] for c in CHECK_CASES],
)
def test_check_module(code, layers, require, passes, parts):
    mod = make_module("kcheck", code, layers)
    if passes:
        check_module(mod, require, where="org/kcheck (torch-cpu)")
        return
    with pytest.raises(ContractError) as info:
        check_module(mod, require, where="org/kcheck (torch-cpu)")
    text = str(info.value)
    assert "org/kcheck (torch-cpu)" in text
    for part in parts:
        assert part in text


def test_public_members_order_and_kinds():
    mod = make_module(
        "kmembers", "def b(): pass\ndef a(): pass\n", "class Z:\n    pass\nclass Y:\n    pass\n"
    )
    kinds = [(k, n) for k, n, _ in public_members(mod)]
    assert kinds == [("function", "a"), ("function", "b"), ("layer", "Y"), ("layer", "Z")]


# -------------------------------------------------- the deterministic-GEMM example
DET_GEMM = """
import torch
from torch import nn


class DetGemm(nn.Module):
    \"\"\"Fixed reduction order per row: bitwise reproducible and batch invariant.\"\"\"

    kernel_properties = frozenset({"deterministic", "batch_invariant"})
    can_torch_compile = True

    def forward(self, x):
        rows = [(row.unsqueeze(0) * self.weight.t()).sum(-1) for row in x.unbind(0)]
        return torch.stack(rows)
"""

PLAIN_GEMM = """
from torch import nn


class PlainMatmul(nn.Module):
    \"\"\"Whatever the BLAS does: no promise about reduction order.\"\"\"

    can_torch_compile = True

    def forward(self, x):
        return x @ self.weight
"""


@use_kernel_forward_from_hub("Gemm")
class Gemm(nn.Module):
    def __init__(self, k: int = 8, n: int = 4):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(k, n, generator=torch.Generator().manual_seed(0)))

    def forward(self, x):
        return x @ self.weight


@pytest.fixture
def gemm_repos(kernel_repo):
    det = kernel_repo("det-gemm", DET_GEMM)
    plain = kernel_repo("plain-gemm", PLAIN_GEMM)
    return (
        LocalLayerRepository(det, layer_name="DetGemm"),
        LocalLayerRepository(plain, layer_name="PlainMatmul"),
    )


X = torch.randn(6, 8, generator=torch.Generator().manual_seed(2))


def test_det_gemm_kernel_keeps_its_promises(gemm_repos):
    det, _ = gemm_repos
    gemm = Gemm()
    with use_kernel_mapping({"Gemm": {"cpu": det}}):
        kernelize(gemm, mode=Mode.INFERENCE, device="cpu", require={"deterministic"})
    assert kernel_choice(gemm).candidate.repo == det
    assert torch.equal(gemm(X), gemm(X))
    assert torch.equal(gemm(X)[2:3], gemm(X[2:3]))  # batch invariant, bitwise
    torch.testing.assert_close(gemm(X), X @ gemm.weight)


@pytest.mark.parametrize(
    "mode", [Mode.INFERENCE, Mode.TRAINING, Mode.INFERENCE | Mode.TORCH_COMPILE]
)
def test_required_determinism_never_picks_the_plain_matmul(gemm_repos, mode):
    det, plain = gemm_repos
    # the plain kernel is preferred by mode order, and is tried first...
    table = {"Gemm": {"cpu": {Mode.INFERENCE: plain, Mode.TRAINING: plain, Mode.FALLBACK: det}}}
    with use_kernel_mapping(table):
        gemm = kernelize(Gemm(), mode=mode, device="cpu")
        assert mode == Mode.INFERENCE | Mode.TORCH_COMPILE or (
            kernel_choice(gemm).candidate.repo == plain
        )
        # ...but with the contract it is never chosen
        gemm = kernelize(Gemm(), mode=mode, device="cpu", require={"deterministic"})
    assert kernel_choice(gemm).candidate.repo == det
    assert gemm.forward.__func__.__qualname__ == "DetGemm.forward"


@pytest.mark.parametrize("use_fallback", [True, False])
def test_only_plain_matmul_mapped_fails_instead_of_falling_back(gemm_repos, use_fallback):
    _, plain = gemm_repos
    gemm = Gemm()
    with use_kernel_mapping({"Gemm": {"cpu": plain}}):
        with pytest.raises(ContractError) as info:
            kernelize(
                gemm,
                mode=Mode.INFERENCE,
                device="cpu",
                require={"deterministic"},
                use_fallback=use_fallback,
            )
    text = str(info.value)
    assert "layer `Gemm` (Gemm) on cpu (no capability reported) in mode INFERENCE" in text
    assert "requires deterministic" in text
    assert "layer `PlainMatmul` of `" in text
    assert "lacks required property deterministic (declares: none)" in text
    assert "original forward of `Gemm` declares no properties" in text
    # and the module was not silently left on the original, non-deterministic path
    assert "forward" not in gemm.__dict__ and kernel_choice(gemm) is None


def test_load_require_uses_the_same_contract(gemm_repos):
    det, plain = gemm_repos
    mod = kernel_plugins.load(str(det.repo_path), device="cpu", require={"deterministic"})
    assert mod.layers.DetGemm.kernel_properties == {"deterministic", "batch_invariant"}
    with pytest.raises(ContractError, match="layer `PlainMatmul` does not declare deterministic"):
        kernel_plugins.load(str(plain.repo_path), device="cpu", require={"deterministic"})
