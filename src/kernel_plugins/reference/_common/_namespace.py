"""The ``torch.ops`` namespace of one reference kernel build: its metadata ``id``.

Shared by every reference kernel (each variant folder holds a link to this file), so the
``metadata.json`` beside it names the build whose operators are registered.
"""

from __future__ import annotations

import json
from pathlib import Path

import torch

__all__ = ["NAMESPACE", "add_op_namespace_prefix", "has_op"]

NAMESPACE: str = json.loads(Path(__file__).with_name("metadata.json").read_text("utf-8"))["id"]
"""The ``torch.ops`` namespace of this build (the metadata ``id``)."""


def add_op_namespace_prefix(op_name: str) -> str:
    """Return ``"<namespace>::<op_name>"`` for an operator of this build."""
    return f"{NAMESPACE}::{op_name}"


def has_op(name: str) -> bool:
    """Whether ``torch.ops.<namespace>.<name>`` is already registered in this process."""
    return hasattr(getattr(torch.ops, NAMESPACE), name)
