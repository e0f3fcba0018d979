"""Small helpers the built-in backends share (torch import only when installed)."""

from __future__ import annotations

import importlib.util
import re
from types import ModuleType

__all__ = ["torch_or_none", "major_minor", "torch_version_string"]


def torch_or_none() -> ModuleType | None:
    """``torch`` when it is installed, else None (never raises for "absent")."""
    if importlib.util.find_spec("torch") is None:
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
