"""The ``torch.ops`` namespace of one reference kernel build: the ``id`` of the ``metadata.json``
beside this file (shared by every reference kernel; each variant folder holds a copy)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import torch

__all__ = ["NAMESPACE", "add_op_namespace_prefix", "define_composite", "has_op"]

NAMESPACE: str = json.loads(Path(__file__).with_name("metadata.json").read_text("utf-8"))["id"]
"""The ``torch.ops`` namespace of this build (the metadata ``id``)."""


def add_op_namespace_prefix(op_name: str) -> str:
    """Return ``"<namespace>::<op_name>"`` for an operator of this build."""
    return f"{NAMESPACE}::{op_name}"


def has_op(name: str) -> bool:
    """Whether ``torch.ops.<namespace>.<name>`` is already registered in this process."""
    return hasattr(getattr(torch.ops, NAMESPACE), name)


def define_composite(operators: Iterable[tuple[str, str, Callable[..., Any]]]) -> Any:
    """Register ``(name, schema, kernel)`` operators of this build, each
    ``CompositeImplicitAutograd`` (autograd, fake tensors and ``torch.compile`` trace through
    it) and pt2-compliant, unless already registered; return ``torch.ops.<id>``."""
    for name, schema, kernel in operators:
        if not has_op(name):
            qualname = add_op_namespace_prefix(name)
            torch.library.define(qualname, schema, tags=(torch.Tag.pt2_compliant_tag,))
            torch.library.impl(qualname, "CompositeImplicitAutograd", kernel)
    return getattr(torch.ops, NAMESPACE)
