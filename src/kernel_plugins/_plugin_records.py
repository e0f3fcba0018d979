"""The records the plugin manager keeps about backends, and its environment switches.

:class:`BackendRecord` is an installed backend, :class:`PluginFailure` a plugin problem
that was reported and skipped, :class:`DetectOutcome` what one backend's detection found,
:class:`HookFailure` one hook call that raised. The switches are ``KERNEL_PLUGINS_STRICT``
(:func:`strict_mode`) and ``KERNEL_PLUGINS_LOAD`` (:func:`allowlist`).
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
from collections.abc import Iterator
from typing import Any, NoReturn

from ._record import field, record
from ._suggest import did_you_mean
from .device import BackendSpec, DeviceInfo
from .errors import KernelPluginsError, PluginError


def origin(name: str, distribution: str | None, version: str | None) -> str:
    """``plugin 'mlu' (kernel-plugins-mlu 0.1.0)``: who a message is about."""
    return f"plugin '{name}' ({distribution or 'unknown distribution'} {version or '?'})"


def strict_mode() -> bool:
    """Whether ``KERNEL_PLUGINS_STRICT=1`` turns plugin errors and fallbacks into exceptions."""
    return os.environ.get("KERNEL_PLUGINS_STRICT", "").strip().lower() in ("1", "true", "yes", "on")


@record
class BackendRecord:
    """An installed backend: its ``spec``, the registered hooks ``plugin``, the ``distribution``
    (``kernel-plugins`` for built-ins) and its ``version``; ``builtin``: shipped with the core."""

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
        return origin(self.name, self.distribution, self.version)


@record
class PluginFailure:
    """A plugin problem that was reported and skipped: who (``name``, ``distribution``,
    ``version``), the ``stage`` (``import``, ``register``, a hook name) and the ``message``."""

    name: str
    distribution: str | None
    version: str | None
    stage: str
    message: str

    def describe(self) -> str:
        """One line naming who failed, where, and the original error."""
        return f"{origin(self.name, self.distribution, self.version)} failed in {self.stage}: {self.message}"


@record
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


@contextlib.contextmanager
def ctrl_c_watch() -> Iterator[list[int]]:
    """Yields a list that gets an item when a real SIGINT (Ctrl-C) arrives in the block, unlike a
    plugin's own ``raise KeyboardInterrupt`` (signals raise in the main thread, through it)."""
    got: list[int] = []
    previous = signal.getsignal(signal.SIGINT) if threading.current_thread() is threading.main_thread() else None

    def noted(signum: int, frame: Any) -> Any:
        got.append(signum)
        return previous(signum, frame)  # type: ignore[misc, operator]

    if callable(previous):
        signal.signal(signal.SIGINT, noted)
    try:
        yield got
    finally:
        if signal.getsignal(signal.SIGINT) is noted:  # unless the plugin installed its own
            signal.signal(signal.SIGINT, previous)  # type: ignore[arg-type]


def _describe_exc(e: BaseException) -> str:
    return f"{type(e).__name__}: {e}"


class HookFailure(Exception):
    """A backend's ``hook`` raised ``error`` (anything but a real Ctrl-C; ``SystemExit`` and its
    own ``KeyboardInterrupt`` included); ``origin``: who (:meth:`BackendRecord.origin`)."""

    def __init__(self, origin: str, hook: str, error: BaseException) -> None:
        self.origin, self.hook, self.error = origin, hook, error
        super().__init__(self.message)

    @property
    def message(self) -> str:
        """``plugin 'x' (dist 1.0) failed in detect_device: ValueError: ...``."""
        return f"{self.origin} failed in {self.hook}: {_describe_exc(self.error)}"

    def reraise(self, *, keep_ours: bool = False) -> NoReturn:
        """Raise a :class:`PluginError` chained to the original, or with ``keep_ours`` an error of
        this library the hook raised, as it is (its own cause kept)."""
        if keep_ours and isinstance(self.error, KernelPluginsError):
            raise self.error from self.error.__cause__
        raise PluginError(self.message) from self.error


def allowlist() -> set[str] | None:
    """The backend names ``KERNEL_PLUGINS_LOAD`` allows (empty: built-ins only; None: all)."""
    raw = os.environ.get("KERNEL_PLUGINS_LOAD")
    return None if raw is None else {part.strip() for part in raw.split(",") if part.strip()}


def check_allowlist(allow: set[str], installed: set[str], builtins: set[str]) -> None:
    """Refuse a ``KERNEL_PLUGINS_LOAD`` entry that names no installed backend (a typo)."""
    known = installed | builtins
    if unknown := sorted(allow - known):
        hints = "".join(did_you_mean(name, known) for name in unknown)
        raise PluginError(f"KERNEL_PLUGINS_LOAD names {', '.join(map(repr, unknown))}, which no installed "
                          f"backend provides;{hints} installed plugins: {', '.join(sorted(installed)) or 'none'}. "
                          "Fix the variable (empty: built-in backends only) or install the plugin")
