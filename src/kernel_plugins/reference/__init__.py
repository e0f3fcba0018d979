"""Portable reference kernels that ship inside kernel-plugins.

Each is a kernel repository in plain PyTorch with the API of the community Hub kernel of
the same name (``kernels-community/activation``, ``rmsnorm``, ``rotary``), with one noarch
variant per backend, assembled on first use (:mod:`._layout`), so the normal loader can
serve it on any device when no optimised kernel fits. Imports neither torch nor the kernels.

Example::

    >>> from kernel_plugins.reference import reference_names, reference_repo
    >>> reference_names()
    ['activation', 'rmsnorm', 'rotary']
    >>> (reference_repo("activation") / "build" / "torch-cpu" / "metadata.json").is_file()
    True
"""

from __future__ import annotations

import re
from pathlib import Path

from ._layout import BACKENDS, SOURCE_DIR, materialize

__all__ = ["BACKENDS", "REFERENCE_ROOT", "reference_names", "reference_repo", "reference_source"]

REFERENCE_ROOT: Path = Path(__file__).resolve().parent
"""The packaged sources: one folder per reference kernel (``<name>/torch-ext/``)."""

_NAME_RE = re.compile(r"^[a-z][-a-z0-9]*[a-z0-9]$")


def reference_names() -> list[str]:
    """Names of the bundled reference kernels, sorted (e.g. ``["activation", ...]``)."""
    return sorted(p.name for p in REFERENCE_ROOT.iterdir() if reference_source(p.name))


def reference_source(name: str) -> Path | None:
    """The packaged source folder of reference kernel ``name`` (no variants), or ``None``: a folder
    holding the kernel's sources and ``kernel.json``."""
    if not isinstance(name, str) or not _NAME_RE.match(name):
        return None
    path = REFERENCE_ROOT / name
    return path if (path / "kernel.json").is_file() and (path / SOURCE_DIR / "__init__.py").is_file() else None


def reference_repo(name: str, backends: tuple[str, ...] = ()) -> Path | None:
    """The kernel repository (``build/torch-<backend>/`` for each of :data:`BACKENDS` and
    ``backends``) of the reference kernel ``name`` (as in ``metadata.json``: ``"activation"``,
    not a Hub id), or ``None``. It loads with ``kernel_plugins.load`` and HF ``kernels``.

    :raises OSError: the cache folder cannot be written (see ``_layout.materialize``).
    """
    if reference_source(name) is None:
        return None
    return materialize(name, tuple(backends))
