"""Integrations with model libraries.

* :mod:`kernel_plugins.integrations.transformers`: mark Hugging Face transformers models
  for :func:`kernel_plugins.kernelize` and map their layers to kernels on every backend.

Importing this package imports nothing else.
"""

from __future__ import annotations
