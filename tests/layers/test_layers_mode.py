"""Mode combination rules, kernelize mode validation and the mode fallback order."""

from __future__ import annotations

import subprocess
import sys

import pytest

from kernel_plugins.errors import LayerError
from kernel_plugins.layers import Mode, ModeError
from kernel_plugins.layers.mode import (
    candidate_modes,
    check_kernelize_mode,
    check_mapping_mode,
    describe_mode,
)

I, T, C, F = Mode.INFERENCE, Mode.TRAINING, Mode.TORCH_COMPILE, Mode.FALLBACK


@pytest.mark.parametrize(
    ("a", "b", "message"),
    [
        (I, T, "mutually exclusive"),
        (T, I, "mutually exclusive"),
        (F, I, "cannot be combined"),
        (T, F, "cannot be combined"),
        (F, C, "cannot be combined"),
    ],
)
def test_forbidden_combinations_raise_on_or(a, b, message):
    with pytest.raises(ModeError, match=message) as info:
        a | b
    assert isinstance(info.value, ValueError)  # like the kernels package
    assert isinstance(info.value, LayerError)


@pytest.mark.parametrize(
    ("mode", "text"),
    [(I | C, "INFERENCE | TORCH_COMPILE"), (T | C, "TRAINING | TORCH_COMPILE"), (F, "FALLBACK")],
)
def test_allowed_combinations(mode, text):
    assert describe_mode(mode) == text
    assert check_mapping_mode(mode) is mode


@pytest.mark.parametrize(
    ("mode", "message"),
    [
        (F, "only be used to register"),
        (C, "must contain Mode.INFERENCE or Mode.TRAINING"),
        (Mode(I.value | T.value), "mutually exclusive"),  # built without `|`
        ("inference", "must be a kernel_plugins.layers.Mode"),
        (None, "must be a kernel_plugins.layers.Mode"),
    ],
)
def test_kernelize_mode_rejections(mode, message):
    with pytest.raises(ModeError, match=message):
        check_kernelize_mode(mode)


@pytest.mark.parametrize("mode", [I, T, I | C, T | C])
def test_kernelize_modes_accepted(mode):
    assert check_kernelize_mode(mode) is mode


def test_torch_compile_alone_cannot_key_a_mapping():
    with pytest.raises(ModeError, match="cannot key a mapping entry"):
        check_mapping_mode(C)
    with pytest.raises(ModeError, match="must be Mode values"):
        check_mapping_mode("TRAINING")


@pytest.mark.parametrize(
    ("mode", "order"),
    [
        (I, [I, I | C, T, T | C, F]),
        (T, [T, T | C, F]),
        (I | C, [I | C, T | C, F]),
        (T | C, [T | C, F]),
    ],
)
def test_candidate_mode_order(mode, order):
    assert list(candidate_modes(mode)) == order


def test_training_never_uses_inference_entries():
    for mode in (T, T | C):
        assert I not in candidate_modes(mode)
        assert I | C not in candidate_modes(mode)


def test_importing_layers_does_not_import_torch():
    code = (
        "import sys; import kernel_plugins.layers, kernel_plugins.contracts; "
        "print('torch' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
