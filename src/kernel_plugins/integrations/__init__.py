"""Integrations with model libraries (importing this package imports nothing else):
:mod:`.transformers` marks Hugging Face transformers models for :func:`kernel_plugins.kernelize`."""

from __future__ import annotations
