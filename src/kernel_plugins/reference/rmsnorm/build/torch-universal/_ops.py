"""PyTorch custom operator of the reference RMSNorm kernel.

``rms_norm(Tensor input, Tensor weight, float eps) -> Tensor`` lives in the namespace
named by this variant's metadata ``id``. Its kernel is ``CompositeImplicitAutograd``:
it is a composition of native ops, so autograd, fake tensors and ``torch.compile``
trace straight through it on every device. Registration is idempotent per process.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import torch

if TYPE_CHECKING:
    from torch import Tensor

__all__ = ["NAMESPACE", "ops", "add_op_namespace_prefix", "rms_norm_native"]

NAMESPACE: str = json.loads(Path(__file__).with_name("metadata.json").read_text("utf-8"))["id"]
"""The ``torch.ops`` namespace of this build (the metadata ``id``)."""


def add_op_namespace_prefix(op_name: str) -> str:
    """Return ``"<namespace>::<op_name>"`` for an operator of this build."""
    return f"{NAMESPACE}::{op_name}"


def rms_norm_native(input: Tensor, weight: Tensor, eps: float) -> Tensor:
    """RMSNorm as ``LlamaRMSNorm`` computes it, with native ops.

    The input is normalised in float32 (float64 stays float64), cast back to its dtype
    and then multiplied by ``weight``; the result dtype is the promotion of the two.
    """
    input_dtype = input.dtype
    hidden = input.to(torch.promote_types(input_dtype, torch.float32))
    variance = hidden.pow(2).mean(-1, keepdim=True)
    hidden = hidden * torch.rsqrt(variance + eps)
    return weight * hidden.to(input_dtype)


if not hasattr(getattr(torch.ops, NAMESPACE), "rms_norm"):
    torch.library.define(
        add_op_namespace_prefix("rms_norm"),
        "(Tensor input, Tensor weight, float eps) -> Tensor",
        tags=(torch.Tag.pt2_compliant_tag,),
    )
    torch.library.impl(
        add_op_namespace_prefix("rms_norm"), "CompositeImplicitAutograd", rms_norm_native
    )

ops = getattr(torch.ops, NAMESPACE)
"""The operator namespace ``torch.ops.<metadata id>``."""
