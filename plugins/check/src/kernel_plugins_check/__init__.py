"""Validate a kernel repository before it is published (``kernel-plugins check``).

:func:`check` takes a local folder or a Hub repo id and returns a :class:`CheckReport`:
one :class:`Problem` (file, key, message, fix) per thing that is wrong, plus notes that
are not problems (a legacy build.toml, a deprecated ``torch-universal`` variant...).

What is checked:

- ``build.toml`` (when present): the models of :mod:`kernel_plugins_check.buildconfig`
  (edition 6, 5 or legacy), backend names against the backends this installation knows.
- every ``build/<variant>/``: the folder name parses as a variant; the folder is not a
  link leading out of the repository, nor holds one; ``metadata.json`` validates; its
  ``backend.type`` agrees with the variant (``torch-<backend>`` for noarch, the owner of
  the arch token for arch variants, anything for ``torch-universal``); the kernel module
  exists (``__init__.py`` flat, or ``<python_name>/__init__.py`` nested); the layer
  classes of its ``layers`` module define no more than HF ``kernels`` 0.19.1 accepts
  (``forward``, ``has_backward``, ``can_torch_compile``; no ``__init__``);
  ``python-depends`` names are known for that backend; ``digest``, when present,
  matches the files (see :mod:`kernel_plugins.integrity`); ``name`` and ``version``
  agree with build.toml.

Nothing is written to the repository. A Hub repo is downloaded into the Hugging Face
cache first (every variant: this can be large).

The parts: ``_report`` (the result types and shared state), ``_local`` (a folder:
build.toml and build/), ``_variant`` (one variant folder), ``_hub`` (a Hub repo) and
``_target`` (:func:`check`, which picks one of those).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._hub import check_hub
    from ._local import check_path
    from ._report import CheckReport, Problem
    from ._target import check

__all__ = [
    "Problem",
    "CheckReport",
    "check",
    "check_path",
    "check_hub",
]

#: Where each public name lives: imported on first use, so that the command line, which
#: imports ``kernel_plugins_check.command`` to build its parser, does not import pydantic.
_HOMES = {"Problem": "_report", "CheckReport": "_report", "check": "_target", "check_path": "_local",
          "check_hub": "_hub"}


def __getattr__(name: str) -> Any:
    if name not in _HOMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{_HOMES[name]}"), name)
    globals()[name] = value
    return value
