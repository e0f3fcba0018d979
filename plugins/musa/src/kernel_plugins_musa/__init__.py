"""Moore Threads MUSA backend for kernel-plugins (device type ``musa``, vendor ``torch_musa``).

Installing this distribution registers the ``musa`` backend through the
``kernel_plugins`` entry-point group; the hooks live in :mod:`kernel_plugins_musa.hooks`.
Importing this package imports neither torch nor ``torch_musa``.
"""

from __future__ import annotations

from .versions import musa_arch, parse_musa_version

__version__ = "0.1.0"

__all__ = ["__version__", "musa_arch", "parse_musa_version"]
