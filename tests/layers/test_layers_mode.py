"""Mode combination rules, kernelize mode validation and the mode fallback order."""

from __future__ import annotations

import subprocess
import sys

import pytest
from kernel_plugins_testing import run_forked

from kernel_plugins.errors import LayerError
from kernel_plugins.layers import Mode, ModeError
from kernel_plugins.layers.mode import (
    candidate_modes,
    check_kernelize_mode,
    check_mapping_mode,
    describe_mode,
)

INF, TRN, TC, FB = Mode.INFERENCE, Mode.TRAINING, Mode.TORCH_COMPILE, Mode.FALLBACK


@pytest.mark.parametrize(
    ("a", "b", "message"),
    [
        (INF, TRN, "mutually exclusive"),
        (TRN, INF, "mutually exclusive"),
        (FB, INF, "cannot be combined"),
        (TRN, FB, "cannot be combined"),
        (FB, TC, "cannot be combined"),
    ],
)
def test_forbidden_combinations_raise_on_or(a, b, message):
    with pytest.raises(ModeError, match=message) as info:
        a | b
    assert isinstance(info.value, ValueError)  # like the kernels package
    assert isinstance(info.value, LayerError)


@pytest.mark.parametrize(
    ("mode", "text"),
    [
        (INF | TC, "INFERENCE | TORCH_COMPILE"),
        (TRN | TC, "TRAINING | TORCH_COMPILE"),
        (FB, "FALLBACK"),
    ],
)
def test_allowed_combinations(mode, text):
    assert describe_mode(mode) == text
    assert check_mapping_mode(mode) is mode


@pytest.mark.parametrize(
    ("mode", "message"),
    [
        (FB, "only be used to register"),
        (TC, "must contain Mode.INFERENCE or Mode.TRAINING"),
        (Mode(INF.value | TRN.value), "mutually exclusive"),  # built without `|`
        ("inference", "must be a kernel_plugins.layers.Mode"),
        (None, "must be a kernel_plugins.layers.Mode"),
    ],
)
def test_kernelize_mode_rejections(mode, message):
    with pytest.raises(ModeError, match=message):
        check_kernelize_mode(mode)


@pytest.mark.parametrize("mode", [INF, TRN, INF | TC, TRN | TC])
def test_kernelize_modes_accepted(mode):
    assert check_kernelize_mode(mode) is mode


def test_torch_compile_alone_cannot_key_a_mapping():
    with pytest.raises(ModeError, match="cannot key a mapping entry"):
        check_mapping_mode(TC)
    with pytest.raises(ModeError, match="must be Mode values"):
        check_mapping_mode("TRAINING")


@pytest.mark.parametrize(
    ("mode", "order"),
    [
        (INF, [INF, INF | TC, TRN, TRN | TC, FB]),
        (TRN, [TRN, TRN | TC, FB]),
        (INF | TC, [INF | TC, TRN | TC, FB]),
        (TRN | TC, [TRN | TC, FB]),
    ],
)
def test_candidate_mode_order(mode, order):
    assert list(candidate_modes(mode)) == order


def test_training_never_uses_inference_entries():
    for mode in (TRN, TRN | TC):
        assert INF not in candidate_modes(mode)
        assert INF | TC not in candidate_modes(mode)


def test_importing_layers_does_not_import_torch():
    code = (
        "import sys; import kernel_plugins.layers, kernel_plugins.contracts; "
        "print('torch' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_import_and_a_local_kernelize_import_no_validation_library(kernel_repo):
    # metadata.json is validated by hand: neither importing the package nor loading a
    # kernel (here through kernelize) imports pydantic, which costs more than the load
    repo = kernel_repo(
        "lean", "from torch import nn\nclass Twice(nn.Module):\n"
        "    def forward(self, x):\n        return x * 2\n"
    )
    code = (
        "import sys, torch\n"
        "import kernel_plugins, kernel_plugins.metadata, kernel_plugins.contracts\n"
        "from kernel_plugins.layers import LocalLayerRepository as R, Mode, kernelize, "
        "use_kernel_forward_from_hub, use_kernel_mapping\n"
        "print('pydantic' in sys.modules)\n"
        "@use_kernel_forward_from_hub('Twice')\n"
        "class Twice(torch.nn.Module):\n"
        "    def forward(self, x):\n        return x + x\n"
        f"with use_kernel_mapping({{'Twice': {{'cpu': R({str(repo)!r}, layer_name='Twice')}}}}):\n"
        "    m = kernelize(Twice(), mode=Mode.INFERENCE, device='cpu')\n"
        "print(m.forward.__func__ is not Twice.forward, 'pydantic' in sys.modules)\n"
    )
    out = run_forked(code)  # a process that has imported torch, nothing else of note
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == ["False", "True", "False"]
    code = "import sys, kernel_plugins; print(sorted({'torch', 'pydantic'} & set(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
