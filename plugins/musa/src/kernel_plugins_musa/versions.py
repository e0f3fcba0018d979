"""Version strings of the Moore Threads MUSA stack, parsed by small pure functions.

* ``torch.version.musa`` is the MUSA SDK version ``torch_musa`` was built with, written
  as an integer-like string ``major*1000 + minor*10 + patch``: ``"4030"`` is 4.3.0 (the
  encoding is inferred from the vendor's code; a dotted ``"4.3.0"`` is accepted too).
* Arch variant token: ``musa<major><minor>`` of that SDK (4.3 -> ``musa43``). When the
  token is decoded, its first digit is the major and the rest the minor (so 4.10 is
  ``musa410``); names are only ever compared whole, so decoding affects messages only.
* Architecture: ``major*10 + minor`` of the device capability (21 = QY1, 22 = QY2,
  31 = PH1); compile targets are ``mp_<arch>``. A build's ``backend.archs`` lists targets
  (``mp_22``) or capabilities (``2.2``); it runs only on exactly that architecture
  (:func:`runs_musa_arch`; no compatibility between architectures is documented).
"""

from __future__ import annotations

import re

from kernel_plugins.plugin_kit import DeviceInfo, VendorDevices, capability_of

__all__ = [
    "parse_musa_version",
    "musa_arch",
    "musa_target",
    "runs_musa_arch",
]

_INT_RE = re.compile(r"^\d{4,6}$")
_DOTTED_RE = re.compile(r"^(\d+)\.(\d+)(?:\.(\d+))?$")
_ARCH_RE = re.compile(r"mp_([0-9])([0-9])|([0-9])\.([0-9])")


def parse_musa_version(text: object) -> tuple[int, int, int] | None:
    """``"4030"`` -> ``(4, 3, 0)``, ``"5012"`` -> ``(5, 1, 2)``, ``"4.3.0"`` -> ``(4, 3, 0)``.

    Returns None for anything else (empty, letters, fewer than four digits, a major of
    0), so that a malformed value is reported rather than guessed.

    >>> parse_musa_version("4030")
    (4, 3, 0)
    """
    if isinstance(text, bool) or not isinstance(text, (str, int)):
        return None
    s = str(text).strip()
    if _INT_RE.match(s):
        n = int(s)
        major, minor, patch = n // 1000, (n % 1000) // 10, n % 10
        return (major, minor, patch) if major > 0 else None
    m = _DOTTED_RE.match(s)
    if m and int(m.group(1)) > 0:
        return int(m.group(1)), int(m.group(2)), int(m.group(3) or 0)
    return None


def musa_arch(capability: tuple[int, int]) -> int:
    """The MUSA architecture number of a capability: ``(2, 2)`` -> ``22``."""
    return capability[0] * 10 + capability[1]


def musa_target(found: VendorDevices) -> str | None:
    """The described device's compile target: capability 2.2 -> ``"mp_22"``; None when unknown."""
    capability = capability_of(found.properties())
    return None if capability is None else f"mp_{musa_arch(capability)}"


def runs_musa_arch(device: DeviceInfo, arch: str) -> bool | None:
    """Whether ``arch`` (``mp_22`` or ``2.2``) is the device's architecture; None: not a
    MUSA architecture, or the device's capability is unknown."""
    m = _ARCH_RE.fullmatch(arch)
    if m is None or device.capability is None:
        return None
    built = tuple(int(g) for g in m.groups() if g is not None)
    return musa_arch(device.capability) == musa_arch((built[0], built[1]))
