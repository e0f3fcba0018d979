"""The usage examples of HF ``kernels``' documentation run on the compat module with only the
import changed: the examples of the installed release's docstrings (18 in kernels 0.19.1:
basic usage, layers, mappings, devices, kernelize; read from the installed package, so a new
release's examples are tried too), those of its README and of its layers guide (``GUIDES``),
and those of its locking guide (lock files need the Hub: ``tests/compat/test_compat_kernels_hub.py``).

This machine has no GPU: in the examples that place tensors or models on ``"cuda"`` or key a
mapping by it, ``"cuda"`` becomes ``"cpu"``; the examples that only describe CUDA and ROCm
devices (``Device``, ``CUDAProperties``, ``ROCMProperties``) run unchanged. Hub kernels come
from where kernel-plugins takes them offline: ``kernels-community/activation`` from the
bundled reference kernel (with its warning), ``kernels-community/relu`` from the example
kernel folder ``examples/relu`` through ``LOCAL_KERNELS``.
"""

from __future__ import annotations

import inspect
import re
import textwrap
import warnings
from contextlib import nullcontext
from pathlib import Path
from typing import Any

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from kernel_plugins.errors import LayerError
from kernel_plugins.layers import kernel_choice, mapping
from tests.support.pins import kernels_pin

kernels = pytest.importorskip("kernels", reason=f"needs HF kernels=={kernels_pin()} (the test extra)")

EXAMPLE_RELU = Path(__file__).resolve().parents[2] / "examples" / "relu"
DEVICE_ONLY = ("CUDAProperties", "ROCMProperties", "Device")  # describe devices; need none


def docstring_examples() -> dict[str, str]:
    """``name -> code`` of every ```python block in the docstrings of kernels' public names
    (and their public members); one name per block (the first that shows it)."""
    out: dict[str, str] = {}
    for name in kernels.__all__:
        obj = getattr(kernels, name)
        members = [v for k, v in vars(obj).items() if not k.startswith("_")] if isinstance(obj, type) else []
        for i, code in enumerate(c for o in (obj, *members)
                                 for c in re.findall(r"```python\n(.*?)```", inspect.getdoc(o) or "", re.S)):
            if code not in out.values():
                out[name if i == 0 else f"{name}[{i}]"] = code
    return out


EXAMPLES = docstring_examples()


# kernels' README ("Quickstart", also docs/source/basic-usage.md) and its layers guide
# (docs/source/layers.md), as written; the guide's fragments that use a placeholder model
# (``MyModel(...)``) run on the model of ``LAYERS_SETUP``.
GUIDES = {
    "README": """
import torch

from kernels import get_kernel

# Download optimized kernels from the Hugging Face hub
activation = get_kernel("kernels-community/activation", version=1)

# Random tensor
x = torch.randn((10, 10), dtype=torch.float16, device="cuda")

# Run the kernel
y = torch.empty_like(x)
activation.gelu_fast(y, x)

print(y)
""",
    "basic-usage: has_kernel": """
from kernels import has_kernel

# Check if kernel is available for current environment
is_available = has_kernel("kernels-community/activation", version=1)
print(f"Kernel available: {is_available}")
""",
    "layers: modes": """
kernel_layer_mapping = {
    "SiluAndMul": {
        "cuda": {
            Mode.FALLBACK: LayerRepository(
                repo_id="kernels-community/activation",
                layer_name="SiluAndMul",
                version=1,
            ),
            Mode.INFERENCE: LayerRepository(
                repo_id="kernels-community/activation-inference-optimized",
                layer_name="SiluAndMul",
                version=1,
            ),
        }
    }
}

register_kernel_mapping(kernel_layer_mapping)
model = MyModel(...)
model = kernelize(model, mode=Mode.INFERENCE | Mode.TORCH_COMPILE)
""",
    "layers: functions": """
kernel_layer_mapping = {
    "SiluAndMul": {
        "cuda": FuncRepository(
            repo_id="kernels-community/activation",
            func_name="silu_and_mul",
            version=1,
        ),
    }
}

with use_kernel_mapping(kernel_layer_mapping):
    model = MyModel(...)
    model = kernelize(model, device="cuda", mode=Mode.INFERENCE)
""",
}
LAYERS_SETUP = """
import torch
import torch.nn.functional as F
from torch import nn
from kernels import *

@use_kernel_forward_from_hub("SiluAndMul")
class SiluAndMul(nn.Module):
    def forward(self, input: torch.Tensor) -> torch.Tensor:
        d = input.shape[-1] // 2
        return F.silu(input[..., :d]) * input[..., d:]

MyModel = lambda *_: nn.Sequential(nn.Linear(8, 8), SiluAndMul())
"""


def as_written_for_compat(name: str, code: str) -> str:
    code = textwrap.dedent(code).replace("from kernels import", "from kernel_plugins.compat.kernels import")
    return code if name in DEVICE_ONLY else code.replace('"cuda"', '"cpu"')


@pytest.fixture(autouse=True)
def isolated(manager, hf_cache, monkeypatch):
    """No Hub (offline, an empty cache), ``kernels-community/relu`` from ``examples/relu``, and
    the mapping and ``nn.LayerNorm`` (which one example marks) as they were."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("LOCAL_KERNELS", f"kernels-community/relu={EXAMPLE_RELU}")
    monkeypatch.delenv("DISABLE_KERNEL_MAPPING", raising=False)
    layer_norm = dict(vars(nn.LayerNorm))
    mapping.register_kernel_mapping({}, inherit_mapping=False)
    yield
    mapping.register_kernel_mapping({}, inherit_mapping=False)
    for key in set(vars(nn.LayerNorm)) - set(layer_norm):
        delattr(nn.LayerNorm, key)


def _uses_kernel(module: nn.Module) -> bool:
    choice = kernel_choice(module)
    return choice is not None and choice.uses_kernel


# What each example left behind, beyond running without an error (an example of a later
# release that is not named here must still run).
CHECKS: dict[str, Any] = {
    "CUDAProperties": lambda ns: ns["device"].properties.capability_range().min == (7, 5),
    "ROCMProperties": lambda ns: ns["device"].type == "rocm",
    "Device": lambda ns: [d.type for d in (ns["cuda_device"], ns["mps_device"], ns["npu_device"])]
    == ["cuda", "mps", "npu"],
    "LayerRepository": lambda ns: ns["layer_repo"].version == 1,
    "FuncRepository": lambda ns: ns["layer_repo"].revision == "main",
    "LocalLayerRepository": lambda ns: ns["layer_repo"].layer_name == "SiluAndMul",
    "LocalFuncRepository": lambda ns: ns["layer_repo"].func_name == "silu_and_mul",
    "get_kernel": lambda ns: torch.equal(ns["result"], torch.relu(ns["x"]))
    and ns["activation"].__kernel_provenance__.source == "local-kernels",
    "get_kernel_variants": lambda ns: ns["name"].startswith("torch"),
    "get_loaded_kernels": lambda ns: "activation" in {k.metadata.name for k in ns["get_loaded_kernels"]()},
    "get_kernelized_layers": lambda ns: set(ns["kernelized"].layers) == {"act_fn"}
    and ns["kernelized"].funcs == {} and _uses_kernel(ns["model"].act_fn),
    "kernelize": lambda ns: ns["kernelized_model"] is ns["model"],
    "use_kernel_mapping": lambda ns: isinstance(ns["model"], nn.Module),
    "register_kernel_mapping": lambda ns: {"LlamaRMSNorm", "MultiHeadAttention"}
    <= set(mapping.current_mapping().layer_names()),
    "replace_kernel_forward_from_hub": lambda ns: nn.LayerNorm.kernel_layer_name == "LayerNorm",
    "use_kernel_forward_from_hub": lambda ns: ns["MyCustomLayer"].kernel_layer_name == "MyCustomLayer",
    "use_kernel_func_from_hub": lambda ns: isinstance(ns["model"].fn, nn.Module),
    "use_kernelized_func": lambda ns: set(ns["model"]._kernel_funcs) == {"identity"},
    "README": lambda ns: ns["y"].dtype == torch.float16
    and torch.allclose(ns["y"].float(), F.gelu(ns["x"].float(), approximate="tanh"), atol=1e-2),
    "basic-usage: has_kernel": lambda ns: ns["is_available"] is True,
    # the inference-optimized repository does not exist: it is skipped, FALLBACK serves
    "layers: modes": lambda ns: _uses_kernel(ns["model"][1]),
}
# The guide maps activation's ``silu_and_mul(out, x)`` onto a layer whose forward takes
# ``(input)``: kernelize refuses it, naming both signatures (kernels 0.19.1: a TypeError).
RAISES = {"layers: functions": r"forward signature \(out: 'Tensor', x: 'Tensor'\) does not match"}


def test_kernels_has_the_examples_this_file_checks():
    assert set(CHECKS) - set(GUIDES) <= set(EXAMPLES), "an example checked here is gone from kernels' docstrings"


@pytest.mark.parametrize("name", sorted(EXAMPLES) + sorted(GUIDES))
def test_a_documented_example_runs_on_the_compat_module(name):
    code = as_written_for_compat(name, EXAMPLES.get(name) or LAYERS_SETUP * name.startswith("layers") + GUIDES[name])
    namespace: dict[str, Any] = {"__name__": f"kernels_example_{name}"}
    with warnings.catch_warnings(), pytest.raises(LayerError, match=RAISES[name]) if name in RAISES else nullcontext():
        warnings.simplefilter("ignore")  # reference kernels stand in, with a warning
        exec(compile(code, f"<kernels docstring example of {name}>", "exec"), namespace)  # noqa: S102
    if name in CHECKS:
        assert CHECKS[name](namespace), name
