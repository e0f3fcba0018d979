"""Portable reference kernels that ship inside kernel-plugins.

Each is an ordinary kernel repository (``<name>/build/torch-universal/`` with a
``metadata.json``), written in plain PyTorch with the same public API as the Hub kernel
of the same name, so the normal loader can serve them on any device when no optimised
kernel fits. This module only knows where they are; it imports neither torch nor the
kernels.

Example::

    >>> from kernel_plugins.reference import reference_names, reference_repo
    >>> reference_names()
    ['activation', 'rmsnorm', 'rotary']
    >>> reference_repo("activation").name
    'activation'
"""

from __future__ import annotations

import re
from pathlib import Path

__all__ = ["REFERENCE_ROOT", "reference_names", "reference_repo"]

REFERENCE_ROOT: Path = Path(__file__).resolve().parent
"""The folder that holds one kernel repository per reference kernel."""

_NAME_RE = re.compile(r"^[a-z][-a-z0-9]*[a-z0-9]$")


def _is_repo(path: Path) -> bool:
    """Whether ``path`` is a kernel repository with at least one build variant."""
    build = path / "build"
    return build.is_dir() and any((v / "metadata.json").is_file() for v in build.iterdir())


def reference_names() -> list[str]:
    """Names of the bundled reference kernels, sorted (e.g. ``["activation", ...]``)."""
    return sorted(
        p.name for p in REFERENCE_ROOT.iterdir() if _NAME_RE.match(p.name) and _is_repo(p)
    )


def reference_repo(name: str) -> Path | None:
    """The repository folder of the reference kernel ``name``, or ``None`` if there is none.

    ``name`` is the kernel name as in ``metadata.json`` (``"activation"``); a Hub-style
    id such as ``"kernels-community/activation"`` is not a name and returns ``None``.
    """
    if not isinstance(name, str) or not _NAME_RE.match(name):
        return None
    path = REFERENCE_ROOT / name
    return path if _is_repo(path) else None
