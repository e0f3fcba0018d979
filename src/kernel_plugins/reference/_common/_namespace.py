"""The ``torch.ops`` namespace of one reference kernel build: its metadata ``id``.

Shared by every reference kernel (each variant folder holds a copy of this file), so the
``metadata.json`` beside it names the build whose operators are registered.
"""

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
    """Register ``(name, schema, kernel)`` operators of this build; return ``torch.ops.<id>``.

    Each kernel is ``CompositeImplicitAutograd`` (a composition of native ops, so autograd,
    fake tensors and ``torch.compile`` trace through it) and tagged pt2-compliant. An
    operator already registered in this process is left as it is (importing the build
    again registers nothing).
    """
    for name, schema, kernel in operators:
        if not has_op(name):
            qualname = add_op_namespace_prefix(name)
            torch.library.define(qualname, schema, tags=(torch.Tag.pt2_compliant_tag,))
            torch.library.impl(qualname, "CompositeImplicitAutograd", kernel)
    return getattr(torch.ops, NAMESPACE)
