"""Small helpers the built-in backends share (torch import only when installed)."""

from __future__ import annotations

import importlib.util
import re
import sys
from types import ModuleType

__all__ = ["torch_or_none", "major_minor", "torch_version_string", "no_device_reason"]


def torch_or_none() -> ModuleType | None:
    """``torch`` when it is importable (importing it), else None.

    Never raises because torch is absent; a torch already in ``sys.modules`` is
    returned without looking at the import path.
    """
    if "torch" not in sys.modules and importlib.util.find_spec("torch") is None:
        return None
    import torch

    return torch


def major_minor(text: str | None) -> tuple[int, int] | None:
    """``"12.8"`` / ``"6.3.42131-fa1d"`` -> ``(12, 8)`` / ``(6, 3)``; None when unparsable."""
    if not text:
        return None
    m = re.match(r"^(\d+)\.(\d+)", text)
    return (int(m.group(1)), int(m.group(2))) if m else None


def torch_version_string() -> str | None:
    """The installed torch version, or None."""
    torch = torch_or_none()
    return None if torch is None else str(torch.__version__)


def no_device_reason(version_attr: str, stack: str, driver_hint: str) -> str:
    """Why a backend built into torch found no device: no torch, wrong build, or 0 devices.

    :param version_attr: the ``torch.version`` attribute a build for ``stack`` sets
        (``"cuda"``, ``"hip"``, ``"xpu"``).
    :param stack: the stack's name in messages, e.g. ``"CUDA"``.
    :param driver_hint: how to check the driver, e.g. ``"check nvidia-smi"``.
    """
    torch = torch_or_none()
    if torch is None:
        return "torch is not installed"
    if getattr(torch.version, version_attr, None) is None:
        kind = "CPU-only" if "+cpu" in str(torch.__version__) else f"not a {stack}"
        return (
            f"the installed torch {torch.__version__} is a {kind} build (torch.version."
            f"{version_attr} is None); install a torch build for {stack}"
        )
    return f"the {stack} driver sees 0 devices ({driver_hint})"
