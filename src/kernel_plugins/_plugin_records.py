"""The records the plugin manager keeps about backends, and the strict-mode switch.

:class:`BackendRecord` is an installed backend, :class:`PluginFailure` a plugin problem
that was reported and skipped, :class:`DetectOutcome` what one backend's detection found.
All three are re-exported by :mod:`kernel_plugins.plugins`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from .device import BackendSpec, DeviceInfo


def strict_mode() -> bool:
    """Whether ``KERNEL_PLUGINS_STRICT=1`` turns plugin errors and fallbacks into exceptions."""
    return os.environ.get("KERNEL_PLUGINS_STRICT", "").strip().lower() in ("1", "true", "yes", "on")


@dataclass(frozen=True)
class BackendRecord:
    """An installed backend: its spec and where it comes from.

    Attributes:
        spec: what the backend declared. plugin: the registered hooks module.
        distribution: distribution name (``kernel-plugins`` for built-ins).
        version: distribution version, or None. builtin: shipped with the core.
    """

    spec: BackendSpec
    plugin: object = field(repr=False)
    distribution: str | None
    version: str | None
    builtin: bool

    @property
    def name(self) -> str:
        """The backend name."""
        return self.spec.name

    def origin(self) -> str:
        """``plugin 'mlu' (kernel-plugins-mlu 0.1.0)``."""
        dist = self.distribution or "unknown distribution"
        return f"plugin '{self.name}' ({dist} {self.version or '?'})"


@dataclass(frozen=True)
class PluginFailure:
    """A plugin problem that was reported and skipped.

    Attributes: name (plugin / entry-point name), distribution, version, stage (``import``,
    ``register``, ``backend_spec``, ``detect_device``, ...), message (with the original error).
    """

    name: str
    distribution: str | None
    version: str | None
    stage: str
    message: str

    def describe(self) -> str:
        """One line naming who failed, where, and the original error."""
        dist = f"{self.distribution or 'unknown distribution'} {self.version or '?'}"
        return f"plugin '{self.name}' ({dist}) failed in {self.stage}: {self.message}"


@dataclass(frozen=True)
class DetectOutcome:
    """What detection found for one backend: a device, nothing, or an error message."""

    backend: str
    device: DeviceInfo | None
    error: str | None = None
    #: Why there is no device (the backend's ``explain_no_device``), when it could tell.
    reason: str | None = None

    @property
    def status(self) -> str:
        """``available``, ``no device`` or ``error``."""
        if self.error is not None:
            return "error"
        return "available" if self.device is not None and self.device.count > 0 else "no device"


def _describe_exc(e: BaseException) -> str:
    return f"{type(e).__name__}: {e}"
