"""Run in a fresh interpreter: tiny random transformers models kernelized on one device.

argv[1]: "cpu" or the name of a backend to emulate (the device used is ``<name>:1``).
Prints one line ``RESULT<json>``.
"""

from __future__ import annotations

import json
import sys
import warnings

NAME = sys.argv[1]
if NAME != "cpu":
    from kernel_plugins_testing import emulate

    emulate(NAME, devices=2)

from kernel_plugins.integrations import transformers as kp_transformers  # noqa: E402

kp_transformers.enable()

import torch  # noqa: E402
from transformers import (  # noqa: E402
    LlamaConfig,
    LlamaForCausalLM,
    MistralConfig,
    MistralForCausalLM,
    Qwen2Config,
    Qwen2ForCausalLM,
)

import kernel_plugins  # noqa: E402
from kernel_plugins.layers import kernel_choice  # noqa: E402
from kernel_plugins.layers.decorators import kernel_funcs, marked_name  # noqa: E402

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
MODELS = {
    "llama": (LlamaConfig, LlamaForCausalLM),
    "qwen2": (Qwen2Config, Qwen2ForCausalLM),
    "mistral": (MistralConfig, MistralForCausalLM),
}


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
    code = getattr(forward, "__func__", forward)
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


def grads(model):
    return {n: p.grad.detach().cpu().clone() for n, p in model.named_parameters()}


out = {"device": DEVICE}
# every architecture on the CPU; one on each emulated device (the device keys and routing
# do not depend on the architecture, and each interpreter costs seconds)
for label, (config_cls, model_cls) in list(MODELS.items())[: 3 if NAME == "cpu" else 1]:
    torch.manual_seed(0)
    model = model_cls(config_cls(**SIZES)).to(DEVICE)
    ids = torch.randint(0, SIZES["vocab_size"], (2, 9)).to(DEVICE)
    # the untouched model first: kernelize changes the shared rotary function too
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
    with torch.no_grad():
        k_logits = model(ids).logits.cpu()

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
        "inference": inference,
        "training": training,
        "warnings": sorted({str(w.message).split(": ")[0] for w in caught}),
    }
print("RESULT" + json.dumps(out))
