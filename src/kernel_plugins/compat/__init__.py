"""Drop-in modules for code written against other kernel libraries.

* :mod:`kernel_plugins.compat.kernels`: the public API of the Hugging Face ``kernels``
  package (0.19.1), on kernel-plugins' backends: ``import kernel_plugins.compat.kernels as
  kernels``.
"""

from __future__ import annotations
