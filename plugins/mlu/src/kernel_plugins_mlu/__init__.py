"""Cambricon MLU backend for kernel-plugins (device type ``mlu``, vendor package ``torch_mlu``).

Installing this distribution registers the ``mlu`` backend through the
``kernel_plugins`` entry-point group; the hooks live in :mod:`kernel_plugins_mlu.hooks`.
Importing this package imports neither torch nor ``torch_mlu``.
"""

from __future__ import annotations

from .versions import parse_extension_version, parse_toolkit_version, read_toolkit_version

__version__ = "0.1.0"

__all__ = [
    "__version__",
    "parse_extension_version",
    "parse_toolkit_version",
    "read_toolkit_version",
]
