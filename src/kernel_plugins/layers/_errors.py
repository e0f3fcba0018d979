"""Error types specific to the layers API (both are :class:`~kernel_plugins.errors.LayerError`).

They also derive from :class:`ValueError`, the type the Hub ``kernels`` package raises for
the same mistakes, so code written against it keeps catching them.
"""

from __future__ import annotations

from ..errors import LayerError

__all__ = ["ModeError", "MappingError"]


class ModeError(LayerError, ValueError):
    """A :class:`~kernel_plugins.layers.Mode` combination is not allowed where it is used."""


class MappingError(LayerError, ValueError):
    """A kernel mapping, repository or capability range is malformed."""
