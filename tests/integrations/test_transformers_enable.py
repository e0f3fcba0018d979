"""enable(): marks, the default mapping, late calls, and HF ``kernels``-style marks."""

from __future__ import annotations

import json
import textwrap

import pytest
from kernel_plugins_testing import run_forked

from tests.integrations.rotary import make_norm, make_rotate

pytest.importorskip("transformers")


def _run(code: str) -> dict:
    proc = run_forked(textwrap.dedent(code), env={"HF_HUB_OFFLINE": "1"})
    assert proc.returncode == 0, proc.stderr[-3000:]
    line = next(li for li in proc.stdout.splitlines() if li.startswith("RESULT"))
    return json.loads(line[len("RESULT") :])  # type: ignore[no-any-return]


def test_enable_marks_models_and_registers_every_installed_backend():
    r = _run("""
        import json, warnings
        from kernel_plugins.integrations import transformers as kpt
        kpt.enable(); kpt.enable()  # twice is fine
        from transformers.models.llama import modeling_llama as m
        from transformers import activations
        from kernel_plugins.layers import current_mapping
        from kernel_plugins.plugins import get_manager
        from transformers import LlamaConfig
        from transformers.integrations.hub_kernels import is_kernels_available
        from kernel_plugins.layers.decorators import original_function
        attn = m.LlamaAttention(LlamaConfig(hidden_size=16, num_attention_heads=2), 0)
        mp = current_mapping()
        print("RESULT" + json.dumps({
            "hf_kernels": is_kernels_available(),
            "ours": original_function(m.apply_rotary_pos_emb) is not None,
            "norm": m.LlamaRMSNorm.kernel_layer_name,
            "silu": activations.SiLUActivation.kernel_layer_name,
            "rotary": type(m.apply_rotary_pos_emb).kernel_layer_name,
            "funcs": sorted(attn._kernel_funcs),
            "layers": mp.layer_names(),
            "keys": mp.device_keys("RMSNorm"),
            "backends": sorted(get_manager().backends()),
            "enabled": kpt.is_enabled(),
        }))
    """)
    assert r["norm"] == "RMSNorm" and r["silu"] == "SiLU" and r["rotary"] == "rotary_pos_emb"
    # transformers 5.25 marks through HF kernels when it is installed (the test extra installs it;
    # its 0.18+ wrappers are keyed by the marked name), else enable() marks through kernel-plugins
    assert r["ours"] is not r["hf_kernels"] and r["enabled"]
    assert r["funcs"] == (["apply_rotary_pos_emb"] if r["ours"] else ["rotary_pos_emb"])
    assert set(r["layers"]) >= {"RMSNorm", "SiLU", "GeLU", "rotary_pos_emb"}
    assert r["keys"] == r["backends"] and {"cpu", "mlu", "npu"} <= set(r["keys"])


def test_enable_registers_its_defaults_beneath_the_users_mappings():
    """Mappings registered before the first enable() and between two enable() calls are
    kept, and no default outranks them (a "cuda" entry also serves ROCm devices)."""
    r = _run("""
        import json
        from kernel_plugins.device import DeviceInfo
        from kernel_plugins.integrations import transformers as kpt
        from kernel_plugins.layers import LocalLayerRepository, Mode, current_mapping
        from kernel_plugins.layers import register_kernel_mapping
        from kernel_plugins.reference import reference_repo

        def mine(layer):
            return LocalLayerRepository(reference_repo("activation"), layer_name=layer)

        def first(name, backend, device_type):
            dev = DeviceInfo(backend=backend, device_type=device_type, count=1)
            c = current_mapping().candidates(name, dev, Mode.INFERENCE)[0]
            return [type(c.repo).__name__, c.repo.layer_name, c.device_key]

        register_kernel_mapping({"SiLU": {"cpu": mine("Silu")},
                                 "GeLU": {"cuda": mine("MyGelu")}})  # before the first enable
        kpt.enable()
        register_kernel_mapping({"RMSNorm": {"cpu": mine("MyNorm")},
                                 "NewGELU": {"cuda": mine("MyNewGelu")}})  # after it
        kpt.enable()
        print("RESULT" + json.dumps({
            "silu cpu": first("SiLU", "cpu", "cpu"),
            "gelu rocm": first("GeLU", "rocm", "cuda"),
            "norm cpu": first("RMSNorm", "cpu", "cpu"),
            "newgelu cuda": first("NewGELU", "cuda", "cuda"),
            "norm mlu": first("RMSNorm", "mlu", "mlu"),
        }))
    """)
    assert r["silu cpu"] == ["LocalLayerRepository", "Silu", "cpu"]
    assert r["gelu rocm"] == ["LocalLayerRepository", "MyGelu", "cuda"]
    assert r["norm cpu"] == ["LocalLayerRepository", "MyNorm", "cpu"]
    assert r["newgelu cuda"] == ["LocalLayerRepository", "MyNewGelu", "cuda"]
    assert r["norm mlu"] == ["LayerRepository", "RMSNorm", "mlu"]  # defaults elsewhere


def test_without_enable_no_marks_and_enable_after_model_import_warns():
    """Without HF kernels (blocked: transformers' stub decorators mark nothing) a late enable()
    warns; with it, transformers marks through kernels and a late enable() has nothing to say."""
    r = _run("""
        import json, sys, warnings
        from kernel_plugins.integrations import transformers as kpt

        def late_enable():
            from transformers.models.llama import modeling_llama as m
            marks = {"norm": hasattr(m.LlamaRMSNorm, "kernel_layer_name"),
                     "rotary_is_function": type(m.apply_rotary_pos_emb).__name__ == "function"}
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                kpt.enable()
            return {"marks": marks, "warnings": [str(w.message) for w in caught]}

        out = {"with": late_enable()}
        for name in [m for m in sys.modules if m.partition(".")[0] in ("transformers", "kernels")]:
            del sys.modules[name]
        sys.modules["kernels"] = None  # as if not installed
        out["without"] = late_enable()
        print("RESULT" + json.dumps(out))
    """)
    assert r["with"] == {"marks": {"norm": True, "rotary_is_function": False}, "warnings": []}
    assert r["without"]["marks"] == {"norm": False, "rotary_is_function": True}
    assert len(r["without"]["warnings"]) == 1
    assert "transformers.models.llama.modeling_llama" in r["without"]["warnings"][0]
    assert "before importing" in r["without"]["warnings"][0]


def test_kernelize_honours_marks_placed_the_hf_kernels_way(manager):
    """What HF kernels 0.17 does when transformers uses it: a class attribute
    ``kernel_layer_name``, a function turned into a module instance whose class forward
    is ``(self, *args, **kwargs)`` with a ``__signature__``, and ``_kernel_funcs``."""
    import inspect

    import torch
    from torch import nn

    from kernel_plugins.layers import kernel_choice, kernelize, use_kernel_mapping
    from kernel_plugins.layers.repositories import FuncRepository, LocalLayerRepository
    from kernel_plugins.reference import reference_repo

    class Func(nn.Module):  # what kernels builds for a decorated function
        kernel_layer_name = "rotary_pos_emb"

        def forward(self, *args, **kwargs):
            return rotate(*args, **kwargs)

    rotate = make_rotate()

    sig = inspect.signature(rotate)
    Func.forward.__signature__ = sig.replace(  # type: ignore[attr-defined]
        parameters=[inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD),
                    *sig.parameters.values()])  # fmt: skip
    rotary = Func()

    Norm = make_norm(kernel_layer_name="RMSNorm")

    class Attn(nn.Module):
        def __init__(self):
            super().__init__()
            self.__dict__["_kernel_funcs"] = {"apply_rotary_pos_emb": rotary}
            self.norm = Norm()

        def forward(self, q, k, cos, sin):
            q, k = rotary(q, k, cos, sin)
            return self.norm(q), k

    model = Attn()
    q, k = torch.randn(2, 2, 5, 8), torch.randn(2, 2, 5, 8)
    cos, sin = torch.randn(2, 5, 8), torch.randn(2, 5, 8)
    expected = model(q, k, cos, sin)
    mapping = {
        "RMSNorm": {"cpu": LocalLayerRepository(reference_repo("rmsnorm"), layer_name="RMSNorm")},
        "rotary_pos_emb": {"cpu": FuncRepository("kernels-community/rotary", func_name="apply_rotary_transformers", version=2)},
    }  # fmt: skip
    with use_kernel_mapping(mapping), pytest.warns(UserWarning, match="reference kernel"):
        kernelize(model)
    assert kernel_choice(rotary).uses_kernel and kernel_choice(model.norm).uses_kernel
    assert rotary.forward.__name__ == "apply_rotary_transformers"
    got = model(q, k, cos, sin)
    assert all(torch.equal(a, b) for a, b in zip(got, expected, strict=True))


def test_kernel_condition_keeps_the_original_forward(manager):
    import torch
    from torch import nn

    from kernel_plugins.layers import (
        kernel_choice,
        kernelize,
        use_kernel_forward_from_hub,
        use_kernel_mapping,
    )
    from kernel_plugins.layers.repositories import LocalLayerRepository
    from kernel_plugins.reference import reference_repo

    @use_kernel_forward_from_hub("Silu", condition=lambda m: m.enabled)
    class Silu(nn.Module):
        def __init__(self, enabled):
            super().__init__()
            self.enabled = enabled

        def forward(self, x):
            return nn.functional.silu(x)

    model = nn.Sequential(Silu(True), Silu(False))
    repo = LocalLayerRepository(reference_repo("activation"), layer_name="Silu")
    with use_kernel_mapping({"Silu": {"cpu": repo}}):
        kernelize(model, device="cpu")
    assert kernel_choice(model[0]).uses_kernel
    assert kernel_choice(model[1]) is None and "forward" not in model[1].__dict__
    assert torch.equal(model(torch.ones(2)), nn.functional.silu(nn.functional.silu(torch.ones(2))))


def test_kernelize_defaults_to_the_models_device_and_mode(manager, monkeypatch):
    import torch
    from torch import nn

    import kernel_plugins
    from kernel_plugins.layers import Mode, kernel_choice, kernelize, use_kernel_forward_from_hub
    from kernel_plugins.layers import _session as kz

    seen = []
    real = kz._resolve_device
    monkeypatch.setattr(kz, "_resolve_device", lambda d: seen.append(d) or real(d))

    @use_kernel_forward_from_hub("Thing")
    class Thing(nn.Module):
        def __init__(self):
            super().__init__()
            self.w = nn.Parameter(torch.ones(1))

        def forward(self, x):
            return x

    model = Thing()
    kernelize(model)
    assert seen == [torch.device("cpu")]
    assert kernel_choice(model).mode == Mode.TRAINING  # modules start in training mode
    kernelize(model.eval())
    assert kernel_choice(model).mode == Mode.INFERENCE
    assert kernel_plugins.get_device(torch.device("cpu")).backend == "cpu"
