"""Huawei Ascend NPU backend for kernel-plugins (device type ``npu``, vendor package ``torch_npu``).

Installing this distribution registers the ``npu`` backend through the
``kernel_plugins`` entry-point group; the hooks live in :mod:`kernel_plugins_npu.hooks`.
Importing this package imports neither torch nor ``torch_npu``.
"""

from __future__ import annotations

from .versions import parse_cann_version, soc_family

__version__ = "0.1.0"

__all__ = ["__version__", "parse_cann_version", "soc_family"]
