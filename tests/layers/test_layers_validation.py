"""Kernel layer and kernel function validation rules (table-driven)."""

from __future__ import annotations

import types

import pytest
import torch
from torch import nn

from kernel_plugins.errors import ContractError, LayerError
from kernel_plugins.layers import Mode
from kernel_plugins.layers.validation import (
    KernelTraits,
    check_registered_mode,
    missing_for,
    validate_function,
    validate_layer,
)


class Original(nn.Module):
    def __init__(self):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(4))

    def forward(self, x, scale=1.0, *, eps=1e-6):
        return x * self.weight * scale + eps


def kernel_class(forward=None, **attrs):
    def default_forward(self, x, scale=1.0, *, eps=1e-6):
        return x * self.weight * scale + eps

    ns = {"forward": forward or default_forward, **attrs}
    return type("K", (nn.Module,), ns)


def test_valid_layer_gets_defaults():
    traits = validate_layer(kernel_class(), Original, where="K")
    assert traits == KernelTraits(
        has_backward=True, can_torch_compile=False, properties=frozenset()
    )


def test_declared_attributes_are_read():
    cls = kernel_class(
        has_backward=False,
        can_torch_compile=True,
        kernel_properties=frozenset({"deterministic"}),
    )
    traits = validate_layer(cls, Original, where="K")
    assert traits == KernelTraits(False, True, frozenset({"deterministic"}))


def _init(self):
    super(nn.Module, self).__init__()


@pytest.mark.parametrize(
    ("make", "error", "message"),
    [
        (lambda: object, LayerError, "is not a torch.nn.Module subclass"),
        (lambda: lambda x: x, LayerError, "is not a torch.nn.Module subclass"),
        (lambda: kernel_class(__init__=_init), LayerError, "defines __init__"),
        (lambda: kernel_class(helper=lambda self: 1), LayerError, "adds members helper"),
        (lambda: kernel_class(EPS=1e-5), LayerError, "adds members EPS"),
        (
            lambda: kernel_class(has_backward="yes"),
            LayerError,
            "has_backward must be True or False",
        ),
        (lambda: kernel_class(can_torch_compile=1), LayerError, "can_torch_compile must be"),
        (lambda: kernel_class(kernel_properties="deterministic"), ContractError, "must be a set"),
        (
            lambda: kernel_class(forward=lambda self, x: x),
            LayerError,
            r"2 parameters instead of 4",
        ),
        (
            lambda: kernel_class(forward=lambda self, x, scale=1.0, eps=1e-6: x),
            LayerError,
            "parameter `eps` is positional or keyword, `eps` is keyword-only",
        ),
        (
            lambda: kernel_class(forward=lambda self, x, scale=1.0, *, epsilon=1e-6: x),
            LayerError,
            "keyword-only parameter `epsilon` should be `eps`",
        ),
        (
            lambda: kernel_class(forward=lambda self, *args, eps=1e-6: x),  # noqa: F821
            LayerError,
            "3 parameters instead of 4",
        ),
    ],
)
def test_invalid_layers(make, error, message):
    with pytest.raises(error, match=message):
        validate_layer(make(), Original, where="layer `K`")


def test_positional_names_may_differ():
    cls = kernel_class(forward=lambda self, hidden, s=2.0, *, eps=0.0: hidden)
    assert validate_layer(cls, Original, where="K").has_backward


def test_inherited_forward_counts_as_the_layers_forward():
    base = kernel_class()
    sub = type("Sub", (base,), {"can_torch_compile": True})
    assert validate_layer(sub, Original, where="K").can_torch_compile


def original_fn(out, x, threshold=0.0):
    return out


def test_function_validation_reads_function_attrs_and_module_table():
    def kernel_fn(out, x, threshold=0.0):
        return out

    kernel_fn.can_torch_compile = True
    mod = types.ModuleType("kmod")
    mod.__kernel_properties__ = {"fatrelu": frozenset({"deterministic", "batch_invariant"})}
    traits = validate_function(kernel_fn, original_fn, where="f", module=mod, name="fatrelu")
    assert traits == KernelTraits(True, True, frozenset({"deterministic", "batch_invariant"}))


@pytest.mark.parametrize(
    ("func", "message"),
    [
        (lambda out, x: out, "2 parameters instead of 3"),
        (int, "is not a function"),
        (3, "is not a function"),
    ],
)
def test_invalid_functions(func, message):
    mod = types.ModuleType("kmod")
    with pytest.raises(LayerError, match=message):
        validate_function(func, original_fn, where="function `f`", module=mod, name="f")


INF, TRN, TC, FB = Mode.INFERENCE, Mode.TRAINING, Mode.TORCH_COMPILE, Mode.FALLBACK
FULL = KernelTraits(True, True, frozenset({"deterministic", "batch_invariant"}))
NO_BW = KernelTraits(False, True, frozenset())
NO_COMPILE = KernelTraits(True, False, frozenset({"deterministic"}))


@pytest.mark.parametrize(
    ("traits", "mode", "require", "lacks"),
    [
        (FULL, TRN | TC, {"deterministic", "batch_invariant"}, []),
        (NO_BW, INF | TC, set(), []),
        (NO_BW, TRN, set(), ["backward support"]),
        (NO_COMPILE, TRN | TC, set(), ["torch.compile support"]),
        (NO_COMPILE, INF, {"batch_invariant"}, ["required property batch_invariant"]),
        (
            NO_BW,
            TRN | TC,
            {"deterministic"},
            ["backward support", "required property deterministic"],
        ),
    ],
)
def test_missing_for_mode_and_requirements(traits, mode, require, lacks):
    got = missing_for(traits, mode, frozenset(require))
    assert len(got) == len(lacks)
    for text, prefix in zip(got, lacks, strict=True):
        assert text.startswith(prefix)


@pytest.mark.parametrize(
    ("traits", "registered", "message"),
    [
        (NO_BW, TRN, "has no backward"),
        (NO_BW, TRN | TC, "has no backward"),
        (NO_COMPILE, INF | TC, "does not support torch.compile"),
        (NO_COMPILE, TRN | TC, "does not support torch.compile"),
    ],
)
def test_entries_registered_for_a_mode_their_kernel_cannot_serve(traits, registered, message):
    with pytest.raises(LayerError, match=message):
        check_registered_mode(traits, registered, where="K")


@pytest.mark.parametrize(
    ("traits", "registered"), [(NO_BW, INF), (NO_BW, FB), (NO_COMPILE, TRN), (NO_COMPILE, FB)]
)
def test_entries_that_promise_nothing_more_are_accepted(traits, registered):
    check_registered_mode(traits, registered, where="K")
