"""Version strings of the Cambricon stack, parsed by small pure functions.

* The extension: ``torch_mlu.__version__`` is ``"<torch_mlu>+torch<torch>"``
  (``"1.22.0+torch2.4.0"``; some releases write ``-torch``).
* The toolkit: ``torch.version.mlu`` is always None, so the CNToolkit version (the
  release that ships ``libcnrt.so``, the runtime an MLU kernel binary links against) is
  read from, in this order:

  1. ``KERNEL_PLUGINS_MLU_TOOLKIT_VERSION`` (e.g. ``3.13.5``), for installs where the
     file below is missing or wrong;
  2. ``$NEUWARE_HOME/version.txt`` (``NEUWARE_HOME`` defaults to ``/usr/local/neuware``),
     which a CNToolkit install writes as ``Neuware Version 3.13.5``: the first
     ``X.Y.Z`` in the file is taken.

  When neither gives a version the toolkit version is None and the reason is returned
  as a note; nothing is guessed.

* Arch variant token: ``mlu<major><minor>`` of the CNToolkit release (3.13 -> ``mlu313``).
  The major is one digit (CNToolkit majors are 1 to 4; minors reach two digits).
* Architectures: the device's compute capability names its compile target, MLU370
  (3.x) ``mtp_372``, MLU590 (5.0) ``mtp_592`` (:func:`mlu_target`). A build's
  ``backend.archs`` may list targets (``mtp_592``), which run on that target only, or
  capabilities as ``TORCH_BANG_ARCH_LIST`` writes them (``5.0``; also ``compute_50``),
  which run on the same major with a minor at least theirs (:func:`runs_mlu_arch`;
  compatibility across minors is inferred, unverified).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import NamedTuple

from kernel_plugins.plugin_kit import DeviceInfo, VendorDevices, capability_of, match_version

__all__ = [
    "mlu_target",
    "runs_mlu_arch",
    "TOOLKIT_ENV",
    "NEUWARE_ENV",
    "DEFAULT_NEUWARE_HOME",
    "VERSION_FILE",
    "ExtensionVersion",
    "ToolkitVersion",
    "built_for_torch",
    "parse_extension_version",
    "parse_toolkit_version",
    "read_toolkit_version",
]

#: Environment variable that states the CNToolkit version explicitly.
TOOLKIT_ENV = "KERNEL_PLUGINS_MLU_TOOLKIT_VERSION"
#: Environment variable naming the Neuware (Cambricon SDK) install folder.
NEUWARE_ENV = "NEUWARE_HOME"
#: Where Neuware is installed when ``NEUWARE_HOME`` is not set.
DEFAULT_NEUWARE_HOME = "/usr/local/neuware"
#: File under the Neuware folder that records the installed version.
VERSION_FILE = "version.txt"

_EXT_RE = re.compile(r"^(?P<ext>\d+\.\d+\.\d+[0-9A-Za-z.]*)[+-]torch(?P<torch>\d+\.\d+(?:\.\d+)?)$")
_TOOLKIT_RE = re.compile(r"^(\d+)\.(\d+)(?:\.(\d+))?$")
_IN_FILE_RE = re.compile(r"\d+\.\d+\.\d+")


class ExtensionVersion(NamedTuple):  # a named tuple: no code compiled at import
    """``torch_mlu.__version__`` split into the extension and the torch it was built for."""

    extension: str
    torch: str

    @property
    def torch_major_minor(self) -> tuple[int, int]:
        """The torch version it was built for, as ``(major, minor)``."""
        major, minor = self.torch.split(".")[:2]
        return int(major), int(minor)


class ToolkitVersion(NamedTuple):
    """The CNToolkit version as read, where it came from, and a note when unusable.

    Attributes:
        text: the version exactly as found (``"3.13.5"``), or None.
        source: where it was read (``"$KERNEL_PLUGINS_MLU_TOOLKIT_VERSION"`` or the file path).
        note: why ``text`` is None or unparsable, else None.
    """

    text: str | None
    source: str | None
    note: str | None = None


def parse_extension_version(text: object) -> ExtensionVersion | None:
    """``"1.22.0+torch2.4.0"`` -> ``ExtensionVersion("1.22.0", "2.4.0")``; None when malformed.

    >>> parse_extension_version("1.24.1-torch2.5.0").torch
    '2.5.0'
    """
    if not isinstance(text, str):
        return None
    m = _EXT_RE.match(text.strip())
    return ExtensionVersion(m.group("ext"), m.group("torch")) if m else None


def parse_toolkit_version(text: object) -> tuple[int, int] | None:
    """``"3.13.5"`` or ``"3.13"`` -> ``(3, 13)``; None when it is not such a version.

    >>> parse_toolkit_version("3.13.5")
    (3, 13)
    """
    return match_version(_TOOLKIT_RE, text)


def read_toolkit_version(environ: Mapping[str, str] | None = None) -> ToolkitVersion:
    """Read the CNToolkit version the documented way (see the module docs).

    :param environ: the environment to read (default ``os.environ``).
    :return: a :class:`ToolkitVersion`; never raises for a missing or unreadable file.
    """
    env = os.environ if environ is None else environ
    explicit = env.get(TOOLKIT_ENV, "").strip()
    if explicit:
        note = None
        if parse_toolkit_version(explicit) is None:
            note = (
                f"{TOOLKIT_ENV}={explicit!r} is not a CNToolkit version like 3.13.5; arch "
                "variants (mlu<major><minor>) cannot be matched"
            )
        return ToolkitVersion(explicit, f"${TOOLKIT_ENV}", note)
    home = env.get(NEUWARE_ENV, "").strip() or DEFAULT_NEUWARE_HOME
    path = Path(home) / VERSION_FILE
    hint = f"set {TOOLKIT_ENV} (e.g. 3.13.5) to load mlu<major><minor> arch variants"
    try:
        content = path.read_text(encoding="utf-8", errors="replace")[:4096]
    except OSError as e:
        return ToolkitVersion(
            None, None, f"CNToolkit version unknown: cannot read {path} ({e.strerror or e}); {hint}"
        )
    m = _IN_FILE_RE.search(content)
    if m is None:
        first = content.strip().splitlines()[0][:80] if content.strip() else ""
        return ToolkitVersion(
            None,
            str(path),
            f"CNToolkit version unknown: {path} holds no X.Y.Z version (starts {first!r}); {hint}",
        )
    return ToolkitVersion(m.group(0), str(path))


def built_for_torch(text: str) -> str | None:
    """The torch a ``torch_mlu.__version__`` was built for: ``"1.22.0+torch2.4.0"`` -> ``"2.4"``.

    >>> built_for_torch("1.22.0+torch2.4.0"), built_for_torch("1.22.0")
    ('2.4', None)
    """
    ext = parse_extension_version(text)
    return None if ext is None else "{}.{}".format(*ext.torch_major_minor)


#: Compute capability major -> compile target (docs/vendors.md).
TARGETS = {3: "mtp_372", 5: "mtp_592"}
_CAPABILITY_RE = re.compile(r"(?:compute_([0-9])([0-9])|([0-9]+)\.([0-9]+))")


def mlu_target(found: VendorDevices) -> str | None:
    """The described device's compile target: capability 5.0 -> ``"mtp_592"``; None when unknown."""
    capability = capability_of(found.properties())
    return None if capability is None else TARGETS.get(capability[0])


def runs_mlu_arch(device: DeviceInfo, arch: str) -> bool | None:
    """Whether the MLU runs code built for ``arch`` (see the module docs); None: not an
    MLU architecture, or the device's capability is unknown."""
    if device.capability is None:
        return None
    if arch.startswith("mtp_"):
        return None if device.arch is None else arch == device.arch
    m = _CAPABILITY_RE.fullmatch(arch)
    if m is None:
        return None
    built = tuple(int(g) for g in m.groups() if g is not None)
    return device.capability[0] == built[0] and device.capability[1] >= built[1]
