"""Run in a fresh interpreter: tiny random transformers models kernelized on one device.

argv[1]: "cpu" or the name of a backend to emulate (the device used is ``<name>:1``).
argv[2] (optional): a folder holding another transformers release (5.24). After the installed
transformers (with the HF ``kernels`` it requires: its marks are kernels') has run, every
``transformers`` and ``kernels`` module is dropped, ``kernels`` is blocked (as if not installed)
and the models run again on that release, marked by kernel-plugins: one torch import serves both.
Prints one line ``RESULT<json>``.
"""

from __future__ import annotations

import collections
import json
import sys
import types
import warnings

NAME = sys.argv[1]
if NAME != "cpu":
    from kernel_plugins_testing import emulate

    emulate(NAME, devices=2)

import torch  # noqa: E402

import kernel_plugins  # noqa: E402
from kernel_plugins.compat import kernels as compat  # noqa: E402
from kernel_plugins.integrations import transformers as kp_transformers  # noqa: E402
from kernel_plugins.layers import get_kernelized_layers, kernel_choice  # noqa: E402
from kernel_plugins.layers.decorators import kernel_funcs, marked_name, original_function  # noqa: E402

DEVICE = "cpu" if NAME == "cpu" else f"{NAME}:1"
SIZES = dict(
    vocab_size=64,
    hidden_size=32,
    intermediate_size=48,
    num_hidden_layers=1,
    num_attention_heads=4,
    num_key_value_heads=2,
    max_position_embeddings=64,
)
MODELS = ("Llama", "Qwen2", "Mistral")


def marked(model):
    """Every marked module and marked function the model holds, once each."""
    seen, out = set(), []
    for module in model.modules():
        for m in (*kernel_funcs(module), module):
            if marked_name(m) is not None and id(m) not in seen:
                seen.add(id(m))
                out.append(m)
    return out


def served(m):
    """How ``m`` is served: (layer name, kernel code?, mode, provenance source, emulated)."""
    choice = kernel_choice(m)
    forward = m.__dict__.get("forward")
    code = getattr(getattr(forward, "__func__", forward), "__wrapped__", None) or getattr(forward, "__func__", forward)
    from_kernel = bool(
        choice is not None
        and choice.uses_kernel
        and getattr(code, "__module__", "").startswith(choice.kernel_module)
    )
    prov = choice.provenance if choice is not None else None
    return [
        marked_name(m),
        from_kernel,
        choice.mode.name if choice is not None else None,
        getattr(prov, "source", None),
        getattr(prov, "emulated", None),
    ]


def probed(model, ids):
    """The logits of one forward, counting the calls that reach each installed kernel forward
    (through whatever wrapper placed the mark: HF kernels' reads ``forward.__func__``)."""
    calls, saved = collections.Counter(), []
    for m in marked(model):
        forward, layer = m.__dict__.get("forward"), marked_name(m)
        if forward is not None:
            def probe(self, *args, _f=forward, _n=layer, **kwargs):
                calls[_n] += 1
                return _f(*args, **kwargs)

            saved.append((m, forward))
            m.__dict__["forward"] = types.MethodType(probe, m)
    with torch.no_grad():
        logits = model(ids).logits.cpu()
    for m, forward in saved:
        m.__dict__["forward"] = forward
    return logits, dict(calls)


def report(model):
    """get_kernelized_layers (ours; HF kernels' own when imported) against kernel_choice."""
    names = dict(model.named_modules())
    chosen = sorted(n for n, m in names.items() if (c := kernel_choice(m)) and c.uses_kernel)
    funcs = sorted([n, f] for n, m in names.items()
                   for f, fn in (m.__dict__.get("_kernel_funcs") or {}).items()
                   if (c := kernel_choice(fn)) and c.uses_kernel)
    ours, theirs = get_kernelized_layers(model), compat.get_kernelized_layers(model)
    hf = sys.modules.get("kernels")  # None when blocked
    hf_found = hf.get_kernelized_layers(model) if hf is not None else ours
    return {
        "layers": sorted(ours.layers) == chosen and bool(chosen),
        "funcs": sorted(map(list, ours.funcs)) == funcs and bool(funcs),
        "repos": all(r.module is names[n] and r.repo == kernel_choice(r.module).candidate.repo
                     for n, r in ours.layers.items()),
        "same_everywhere": ours == theirs and ours.layers.keys() == hf_found.layers.keys()
        and ours.funcs.keys() == hf_found.funcs.keys(),
    }


def grads(model):
    return {n: p.grad.detach().cpu().clone() for n, p in model.named_parameters()}


def run_models():
    """Every model: untouched, then kernelized for inference and for training."""
    import transformers

    kp_transformers.enable()
    from transformers.models.llama.modeling_llama import apply_rotary_pos_emb as rotary_marks
    ours = original_function(rotary_marks) is not None  # else HF kernels' function module
    out = {"transformers": transformers.__version__, "hf_kernels": sys.modules.get("kernels") is not None,
           "marks_from": "kernel_plugins" if ours else type(rotary_marks).forward.__module__.partition(".")[0]}
    for label in MODELS:
        config_cls, model_cls = getattr(transformers, f"{label}Config"), getattr(transformers, f"{label}ForCausalLM")
        torch.manual_seed(0)
        model = model_cls(config_cls(**SIZES)).to(DEVICE)
        ids = torch.randint(0, SIZES["vocab_size"], (2, 9)).to(DEVICE)
        model.eval()
        with torch.no_grad():
            logits = model(ids).logits.cpu()
        model.train()
        loss = model(ids, labels=ids).loss
        loss.backward()
        ref_loss, ref_grads = loss.detach().cpu(), grads(model)
        model.zero_grad(set_to_none=True)

        model.eval()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            kernel_plugins.kernelize(model)  # mode from model.training, device from the model
        inference = [served(m) for m in marked(model)]
        k_logits, calls = probed(model, ids)
        reported = report(model)

        model.train()
        kernel_plugins.kernelize(model)
        training = [served(m) for m in marked(model)]
        k_loss = model(ids, labels=ids).loss
        k_loss.backward()
        k_grads = grads(model)
        out[label] = {
            "logits_equal": bool(torch.equal(logits, k_logits)),
            "loss_equal": bool(torch.equal(ref_loss, k_loss.detach().cpu())),
            "grads_equal": sorted(ref_grads) == sorted(k_grads)
            and all(torch.equal(ref_grads[n], k_grads[n]) for n in ref_grads),
            "calls": calls,
            "report": reported,
            "inference": inference,
            "training": training,
            "warnings": sorted({str(w.message).split(": ")[0] for w in caught}),
        }
    return out


result = {"device": DEVICE, "installed": run_models()}
if len(sys.argv) > 2:
    for name in [m for m in sys.modules if m.partition(".")[0] in ("transformers", "kernels")]:
        del sys.modules[name]
    sys.modules["kernels"] = None  # type: ignore[assignment]  # import kernels: ImportError
    sys.path.insert(0, sys.argv[2])
    result["older"] = run_models()
print("RESULT" + json.dumps(result))
