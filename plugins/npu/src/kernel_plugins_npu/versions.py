"""Version strings of the Huawei Ascend stack, parsed by small pure functions.

* ``torch.version.cann`` is the CANN toolkit version: ``"8.3.RC1"``, ``"8.5.0"``,
  ``"9.0.0"``, or ``"not known"`` when ``torch_npu`` could not read it.
* Arch variant token (the existing Hub convention): ``cann<major><minor>``, CANN 8.3 ->
  ``cann83``, CANN 10.0 -> ``cann100``. When a token is decoded, its LAST digit is the
  minor and the digits before it the major, so a two-digit major survives (CANN minors
  are single digits); names are only ever compared whole.
* ``torch_npu.__version__`` follows the torch it was built for: ``"2.1.0.post3"`` is
  built for torch 2.1.
* ``torch.npu.get_soc_version()`` is an integer: 220-225 is the Ascend 910B family,
  250-255 the 910_93 family, 202 the 310P3 (mapping from a third-party fork, unverified).
"""

from __future__ import annotations

import re

from kernel_plugins.plugin_kit import match_version

__all__ = [
    "built_for_torch",
    "parse_cann_version",
    "soc_family",
]


_TORCH_NPU_RE = re.compile(r"^(\d+)\.(\d+)\.\d+")
_CANN_RE = re.compile(r"^(\d+)\.(\d+)(?:\.[0-9A-Za-z]+)*$")


def parse_cann_version(text: object) -> tuple[int, int] | None:
    """``"8.3.RC1"`` -> ``(8, 3)``, ``"10.0.0"`` -> ``(10, 0)``; None for ``"not known"`` etc.

    >>> parse_cann_version("8.3.RC1")
    (8, 3)
    """
    version = match_version(_CANN_RE, text)
    return None if version is None or version[0] == 0 else version


def built_for_torch(text: str) -> str | None:
    """The torch a ``torch_npu.__version__`` was built for: ``"2.1.0.post3"`` -> ``"2.1"``.

    >>> built_for_torch("2.1.0.post3"), built_for_torch("unknown")
    ('2.1', None)
    """
    version = match_version(_TORCH_NPU_RE, text)
    return None if version is None else "{}.{}".format(*version)


def soc_family(soc_version: object) -> str | None:
    """The Ascend family of a ``get_soc_version()`` value (unverified mapping), or None."""
    if isinstance(soc_version, bool) or not isinstance(soc_version, int):
        return None
    if 220 <= soc_version <= 225:
        return "Ascend 910B"
    if 250 <= soc_version <= 255:
        return "Ascend 910_93"
    if soc_version == 202:
        return "Ascend 310P3"
    return None
