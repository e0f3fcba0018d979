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
* Architectures: the device's is its SoC name (:func:`soc_name`, from torch_npu's
  ``SocVersion`` table: 222 is ``Ascend910B2C``). Ascend kernels are compiled for a SoC
  version (``--soc_version``) and run on every SoC of its family (vllm-ascend builds once
  per family: ``Ascend910B1`` for 220-225, ``Ascend910_9392`` for 250-255), so a build's
  ``backend.archs`` entry runs when its family is the device's (:func:`runs_npu_arch`).
"""

from __future__ import annotations

import re

from kernel_plugins.plugin_kit import DeviceInfo, VendorDevices, match_version

__all__ = [
    "built_for_torch",
    "parse_cann_version",
    "runs_npu_arch",
    "soc_family",
    "soc_name",
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


#: ``get_soc_version()`` -> SoC name (torch_npu's ``SocVersion``); the 910_93 members'
#: own names are not confirmed, so those are named by their family. (100-104, the first
#: Ascend 910, are left out: one of them is called "Ascend910B", which is not the 910B.)
_SOCS = {
    **{200 + i: f"Ascend310P{i + 1}" for i in range(4)},
    **{220 + i: f"Ascend910{n}" for i, n in enumerate(("B1", "B2", "B2C", "B3", "B4"))},
    **{240 + i: f"Ascend310B{i + 1}" for i in range(4)},
    **dict.fromkeys(range(250, 256), "Ascend910_93"),
}
_FAMILY_RE = re.compile(r"(?:ascend)?(910_93|910b|910c|310p|310b|910)(?:[0-9]+[a-z]?|[a-z]+)?")


def soc_name(found: VendorDevices) -> str | None:
    """The SoC name from ``torch.npu.get_soc_version()`` (222 -> ``Ascend910B2C``): torch_npu
    reports one SoC for the machine, not one per device."""
    get = getattr(found.module, "get_soc_version", None)
    try:
        return _SOCS.get(get()) if get is not None else None
    except Exception:  # noqa: BLE001 - the SoC is informational; detect_device notes the error
        return None


def _family(name: str) -> str | None:
    m = _FAMILY_RE.fullmatch(name.strip().lower())
    return None if m is None else {"910c": "910_93"}.get(m[1], m[1])


def runs_npu_arch(device: DeviceInfo, arch: str) -> bool | None:
    """Whether ``arch`` (a SoC name such as ``Ascend910B1``, or a family such as
    ``ascend910b``) is of the device's SoC family; None: not an Ascend SoC, or the
    device's SoC is unknown."""
    built = _family(arch)
    return None if built is None or device.arch is None else built == _family(device.arch)
