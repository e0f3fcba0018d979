"""One capability-range type for every backend that reports a ``(major, minor)`` capability.

A mapping entry keyed by a :class:`CapabilityRange` applies only to devices whose capability
lies in the range (bounds inclusive; a device without one matches no range). Among matching
ranges the narrowest wins (width on ``major * 1000 + minor``, an open lower bound counting as
``(0, 0)``, an open upper one as infinite), then the higher lower bound, then the last registered.
"""

from __future__ import annotations

import math
import re

from .._record import record
from ._errors import MappingError

__all__ = ["Capability", "CapabilityRange", "parse_capability", "format_capability"]

#: A ``(major, minor)`` capability.
Capability = tuple[int, int]

_CAP_RE = re.compile(r"^\s*(\d{1,4})(?:\.(\d{1,3}))?\s*$")
_BASE = 1000


def parse_capability(value: object, *, what: str = "capability") -> Capability:
    """Normalise ``(8, 9)``, ``[8, 9]``, ``"8.9"``, ``"8"`` or an int major to a tuple.

    A float is refused (``8.10`` and ``8.1`` would be equal); pass a string or a tuple.
    Raises :class:`~kernel_plugins.layers.MappingError` naming the bad value.
    """
    if isinstance(value, (bool, float)):
        raise MappingError(f"{what} {value!r} is ambiguous: give a (major, minor) tuple or a string like '8.9'")
    if isinstance(value, int):
        value = (value, 0)
    if isinstance(value, str):
        m = _CAP_RE.match(value)
        if not m:
            raise MappingError(f"{what} {value!r} is not 'major.minor' (e.g. '7.5')")
        return (int(m.group(1)), int(m.group(2) or 0))
    if isinstance(value, (tuple, list)) and len(value) == 2:
        major, minor = value
        if all(isinstance(v, int) and not isinstance(v, bool) for v in value) and 0 <= major and 0 <= minor < _BASE:
            return (major, minor)
    raise MappingError(f"{what} {value!r} must be a (major, minor) pair of non-negative integers "
                       f"(minor below {_BASE}) or a string like '7.5'")


def format_capability(cap: Capability | None) -> str:
    """``"8.9"``, or ``"none"`` for None."""
    return "none" if cap is None else f"{cap[0]}.{cap[1]}"


def _ordinal(cap: Capability) -> int:
    return cap[0] * _BASE + cap[1]


@record
class CapabilityRange:
    """An inclusive range of device capabilities (``min``/``max``: e.g. ``(7, 5)`` or ``"7.5"``;
    None: no bound), for any backend.

    Example::

        {"SiluAndMul": {"cuda": {
            CapabilityRange(min=(7, 5), max=(8, 9)): LayerRepository("org/ampere", layer_name="A"),
            CapabilityRange(min=(9, 0)): LayerRepository("org/hopper", layer_name="A"),
        }}}
    """

    min: Capability | None
    max: Capability | None

    def __init__(self, min: object = None, max: object = None) -> None:  # noqa: A002
        lo = None if min is None else parse_capability(min, what="CapabilityRange min")
        hi = None if max is None else parse_capability(max, what="CapabilityRange max")
        if lo is not None and hi is not None and lo > hi:
            raise MappingError(f"CapabilityRange min {format_capability(lo)} is above max "
                               f"{format_capability(hi)}; bounds are inclusive, so min <= max")
        object.__setattr__(self, "min", lo)
        object.__setattr__(self, "max", hi)

    def contains(self, capability: Capability | None) -> bool:
        """Whether a device with ``capability`` is served (never for a device without one)."""
        if capability is None:
            return False
        cap = (int(capability[0]), int(capability[1]))
        return (self.min is None or cap >= self.min) and (self.max is None or cap <= self.max)

    def width(self) -> float:
        """Size of the range on the ``major * 1000 + minor`` scale (``inf`` when open above)."""
        return math.inf if self.max is None else _ordinal(self.max) - _ordinal(self.min or (0, 0))

    def sort_key(self) -> tuple[float, int]:
        """Narrowest first; for equal widths the higher lower bound first."""
        return (self.width(), -_ordinal(self.min or (0, 0)))

    def __str__(self) -> str:
        lo = format_capability(self.min) if self.min is not None else ""
        hi = format_capability(self.max) if self.max is not None else ""
        return f"capability {lo}..{hi}"
