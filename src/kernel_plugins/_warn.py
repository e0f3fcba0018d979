"""Warnings that point at the caller's code, not at kernel-plugins internals."""

from __future__ import annotations

import sys
import warnings
from pathlib import Path

__all__ = ["warn_user"]

_PACKAGE_DIR = str(Path(__file__).resolve().parent)


def warn_user(message: str, category: type[Warning] = UserWarning) -> None:
    """``warnings.warn`` with the stack level of the first frame outside this package."""
    level = 2  # 1 would be this function
    frame = sys._getframe(1)
    while frame is not None and frame.f_code.co_filename.startswith(_PACKAGE_DIR):
        frame = frame.f_back  # type: ignore[assignment]
        level += 1
    warnings.warn(message, category, stacklevel=level)
