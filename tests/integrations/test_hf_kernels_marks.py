"""Marks placed by the real HF ``kernels`` are honoured by kernel_plugins.kernelize.

* The pinned release (0.19.1, installed with the test extra), in this process: since 0.18 a
  class holding marked functions gives each instance its own wrapper modules (``_kernel_funcs``)
  and its forward reads ``wrapper.forward.__func__`` on every call; kernelize serves them per
  model, bitwise, and HF kernels' own ``get_kernelized_layers`` reports what it installed.
* kernels 0.17.2 (one wrapper shared by every instance), in a child interpreter whose path has
  that release first (installed once, without dependencies, under ``benchmarks/.work``): a tiny
  Llama whose RMSNorm, activation and rotary function ``kernels`` marked is served by kernel
  code, with bitwise-equal logits.
"""

from __future__ import annotations

import json

import pytest
from kernel_plugins_testing import run_forked

from tests.integrations.rotary import make_norm, make_rotate
from tests.support.releases import release

OLDER_KERNELS = "0.17.2"

CODE = r"""
import json, sys, warnings
warnings.simplefilter("ignore")
import torch, kernels
import transformers.integrations as integrations
import transformers.integrations.hub_kernels as hub_kernels

# What transformers' decorators are when it uses kernels.
def use_kernelized_func(funcs):
    return kernels.use_kernelized_func(*(funcs if isinstance(funcs, list) else [funcs]))
for name, fn in {"use_kernel_forward_from_hub": kernels.use_kernel_forward_from_hub,
                 "use_kernelized_func": use_kernelized_func}.items():
    setattr(hub_kernels, name, fn)
    setattr(integrations, name, fn)

from transformers import LlamaConfig, LlamaForCausalLM
import kernel_plugins
from kernel_plugins.integrations import transformers as kp_transformers
from kernel_plugins.layers import kernel_choice, register_kernel_mapping

register_kernel_mapping(kp_transformers.default_mapping())
torch.manual_seed(0)
model = LlamaForCausalLM(LlamaConfig(
    vocab_size=64, hidden_size=32, intermediate_size=48, num_hidden_layers=1,
    num_attention_heads=4, num_key_value_heads=2)).eval()
ids = torch.randint(0, 64, (2, 7))
with torch.no_grad():
    expected = model(ids).logits
kernel_plugins.kernelize(model)
attn = model.model.layers[0].self_attn
rotary = next(iter(attn._kernel_funcs.values()))
with torch.no_grad():
    got = model(ids).logits
print("RESULT" + json.dumps({
    "version": kernels.__version__,
    "rotary_class": type(rotary).__module__,
    "shared": rotary is sys.modules[type(attn).__module__].apply_rotary_pos_emb,  # before 0.18
    "served": [kernel_choice(m).uses_kernel for m in
               (rotary, model.model.norm, model.model.layers[0].mlp.act_fn)],
    "equal": bool(torch.equal(expected, got)),
}))
"""


def test_kernelize_honours_the_marks_older_hf_kernels_places():
    pytest.importorskip("transformers")
    older = release("kernels", OLDER_KERNELS)
    proc = run_forked(CODE, env={"PYTHONPATH": str(older), "HF_HUB_OFFLINE": "1"})
    assert proc.returncode == 0, proc.stderr[-3000:]
    line = next(li for li in proc.stdout.splitlines() if li.startswith("RESULT"))
    r = json.loads(line[len("RESULT") :])
    assert r["version"] == OLDER_KERNELS
    assert r["rotary_class"].startswith("kernels.")  # the function module kernels built
    assert r["served"] == [True, True, True] and r["shared"] is True
    assert r["equal"] is True


def test_kernelize_serves_the_per_model_function_wrappers_of_hf_kernels(manager):
    """kernels 0.18+: kernelize one of two models marked by HF kernels' own decorators; its
    wrapper's forward is bound (kernels reads ``forward.__func__``), the other model keeps the
    original, and HF kernels' get_kernelized_layers reports what kernel-plugins installed."""
    kernels = pytest.importorskip("kernels")
    import copy
    import types

    import torch
    from torch import nn

    from kernel_plugins.layers import (
        get_kernelized_layers,
        kernel_choice,
        kernelize,
        use_kernel_mapping,
    )
    from kernel_plugins.layers.repositories import FuncRepository, LocalLayerRepository
    from kernel_plugins.reference import reference_repo

    rotate = kernels.use_kernel_forward_from_hub("rotary_pos_emb")(make_rotate())

    Norm = kernels.use_kernel_forward_from_hub("RMSNorm")(make_norm())

    @kernels.use_kernelized_func(rotate)
    class Attn(nn.Module):
        def __init__(self):
            super().__init__()
            self.norm = Norm()

        def forward(self, q, k, cos, sin):
            q, k = rotate(q, k, cos, sin)
            return self.norm(q), k

    torch.manual_seed(0)
    served, untouched = Attn(), Attn()
    args = torch.randn(2, 2, 5, 8), torch.randn(2, 2, 5, 8), torch.randn(2, 5, 8), torch.randn(2, 5, 8)
    expected, expected_untouched = served(*args), untouched(*args)
    mapping = {
        "RMSNorm": {"cpu": LocalLayerRepository(reference_repo("rmsnorm"), layer_name="RMSNorm")},
        "rotary_pos_emb": {"cpu": FuncRepository("kernels-community/rotary", func_name="apply_rotary_transformers", version=2)},
    }  # fmt: skip
    with use_kernel_mapping(mapping), pytest.warns(UserWarning, match="reference kernel"):
        kernelize(served)
    wrapper, other = served._kernel_funcs["rotary_pos_emb"], untouched._kernel_funcs["rotary_pos_emb"]
    assert wrapper is not other and type(wrapper) is type(other)  # one per model since kernels 0.18
    forward = wrapper.forward
    assert isinstance(forward, types.MethodType) and forward.__self__ is wrapper
    assert forward.__func__.__wrapped__.__module__.startswith(kernel_choice(wrapper).kernel_module)
    assert kernel_choice(other) is None and "forward" not in other.__dict__
    for model, want in ((served, expected), (copy.deepcopy(served), expected), (untouched, expected_untouched)):
        assert all(torch.equal(a, b) for a, b in zip(model(*args), want, strict=True))

    theirs, ours = kernels.get_kernelized_layers(served), get_kernelized_layers(served)
    assert list(theirs.layers) == list(ours.layers) == ["norm"]
    assert list(theirs.funcs) == list(ours.funcs) == [("", "rotary_pos_emb")]
    assert theirs.funcs[("", "rotary_pos_emb")].module is wrapper
    assert ours.funcs[("", "rotary_pos_emb")].repo is kernel_choice(wrapper).candidate.repo
    assert kernels.get_kernelized_layers(untouched) == kernels.KernelizedLayers()

    with pytest.warns(UserWarning, match="nothing was replaced"):
        kernelize(served)  # nothing mapped any more: the original forwards, reported as such
    assert "forward" not in wrapper.__dict__ and wrapper.forward.__func__ is type(wrapper).forward
    assert kernels.get_kernelized_layers(served) == kernels.KernelizedLayers()
    assert all(torch.equal(a, b) for a, b in zip(served(*args), expected, strict=True))
