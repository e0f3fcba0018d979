"""Google TPU backend for kernel-plugins (device type ``tpu``, vendor package ``torch_tpu``).

Installing this distribution registers the ``tpu`` backend through the
``kernel_plugins`` entry-point group; the hooks live in :mod:`kernel_plugins_tpu.hooks`.
Importing this package imports neither torch nor ``torch_tpu``.
"""

from __future__ import annotations

__version__ = "0.1.0"

__all__ = ["__version__"]
