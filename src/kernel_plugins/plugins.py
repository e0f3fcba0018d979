"""The plugin manager: the only module that touches entry points and ``pm.hook``.

Backends (built-in and third-party) are pluggy plugins. Loading is lazy (the first
call that needs a backend) and idempotent. A plugin that fails to import, whose hook
raises or returns the wrong type, or that claims a backend name another plugin has,
is recorded as a :class:`PluginFailure` (name, distribution, version, original
error) and skipped; ``KERNEL_PLUGINS_STRICT=1`` raises :class:`PluginError` instead.
``KERNEL_PLUGINS_LOAD`` (comma-separated backend names; empty = built-ins only)
limits which entry points are loaded.

The records kept about backends live in ``_plugin_records``; what a plugin's hooks return
is checked in ``_hook_results`` before the core uses it.
"""

from __future__ import annotations

import dataclasses
import importlib
import logging
import os
import threading
from collections.abc import Callable
from types import ModuleType
from typing import Any

import pluggy

from . import hookspecs
from ._hook_results import backend_spec_problem, detect_outcome, kernel_module, variant_names
from ._plugin_records import (
    BackendRecord,
    DetectOutcome,
    PluginFailure,
    _describe_exc,
    strict_mode,
)
from ._suggest import did_you_mean
from .device import DeviceInfo, SystemInfo
from .errors import PluginError

__all__ = [
    "ENTRY_POINT_GROUP",
    "BUILTIN_BACKENDS",
    "BackendRecord",
    "PluginFailure",
    "DetectOutcome",
    "PluginManager",
    "get_manager",
    "reset_manager",
    "strict_mode",
]

log = logging.getLogger("kernel_plugins")

#: Entry-point group a backend distribution registers its hooks module in.
ENTRY_POINT_GROUP = "kernel_plugins"
#: Modules of the backends that ship inside the core, registered like any plugin.
BUILTIN_BACKENDS = {
    "cpu": "kernel_plugins.backends.cpu",
    "cuda": "kernel_plugins.backends.cuda",
    "rocm": "kernel_plugins.backends.rocm",
    "xpu": "kernel_plugins.backends.xpu",
    "metal": "kernel_plugins.backends.metal",
}
_CORE_DIST = "kernel-plugins"


class PluginManager:
    """A typed facade over pluggy for the backends of this process.

    Create one with :func:`get_manager`; tests build their own with
    ``PluginManager(entry_points=False)`` and :meth:`register` fake backends.
    """

    def __init__(self, *, entry_points: bool = True, builtins: bool = True) -> None:
        self._use_entry_points = entry_points
        self._use_builtins = builtins
        self._pm = pluggy.PluginManager(hookspecs.PROJECT_NAME)
        self._pm.add_hookspecs(hookspecs)
        self._records: dict[str, BackendRecord] = {}
        self._failures: list[PluginFailure] = []
        self._detected: dict[str, DetectOutcome] = {}
        self._callers: dict[tuple[str, str], Any] = {}
        self._loaded = False
        self._lock = threading.RLock()

    # ----------------------------------------------------------------- loading
    def load(self) -> None:
        """Load built-in backends and entry-point plugins once (idempotent)."""
        with self._lock:
            if self._loaded:
                return
            allow = _allowlist() if self._use_entry_points else None
            if allow is not None:  # checked on every call until fixed: a typo is an error
                from importlib.metadata import entry_points

                _check_allowlist(allow, {ep.name for ep in entry_points(group=ENTRY_POINT_GROUP)})
            self._loaded = True
            if self._use_builtins:
                for name, modname in BUILTIN_BACKENDS.items():
                    module = importlib.import_module(modname)
                    self._add(module, name, _CORE_DIST, _core_version(), builtin=True)
            if self._use_entry_points:
                self._load_entry_points()

    def _load_entry_points(self) -> None:
        from importlib.metadata import entry_points

        allow = _allowlist()
        eps = sorted(entry_points(group=ENTRY_POINT_GROUP), key=lambda ep: ep.name)
        for ep in eps:
            dist = getattr(ep, "dist", None)
            dist_name = getattr(dist, "name", None) if dist is not None else None
            dist_version = getattr(dist, "version", None) if dist is not None else None
            if allow is not None and ep.name not in allow:
                log.debug("skipping plugin %s: not in KERNEL_PLUGINS_LOAD", ep.name)
                continue
            try:
                module = ep.load()
            except BaseException as e:  # noqa: BLE001 - any import failure is reported
                _reraise_interrupt(e)
                self._fail(ep.name, dist_name, dist_version, "import", _describe_exc(e), e)
                continue
            self._add(module, ep.name, dist_name, dist_version, builtin=False)

    def register(
        self,
        module: object,
        *,
        name: str,
        distribution: str | None = None,
        version: str | None = None,
    ) -> BackendRecord | None:
        """Register a backend hooks module by hand (tests, in-process plugins).

        Returns the record, or None when the plugin was rejected (see :meth:`failures`).
        """
        self.load()
        with self._lock:
            self._detected.clear()
            self._callers.clear()
            return self._add(module, name, distribution, version, builtin=False)

    def unregister(self, name: str) -> None:
        """Remove a backend registered under ``name`` (no error when absent)."""
        with self._lock:
            rec = self._records.pop(name, None)
            if rec is not None:
                self._pm.unregister(rec.plugin)
            self._detected.pop(name, None)
            self._callers.clear()

    def _add(
        self, module: object, name: str, dist: str | None, version: str | None, *, builtin: bool
    ) -> BackendRecord | None:
        if name in self._records:
            other = self._records[name]
            self._fail(
                name, dist, version, "register",
                f"backend name {name!r} is already provided by {other.origin()}; uninstall one of "
                "the two distributions",
            )
            return None
        unknown = _unknown_hooks(module, self._pm)
        if unknown:
            self._fail(
                name, dist, version, "register",
                f"implements hooks that do not exist: {', '.join(unknown)} (known hooks: "
                f"{', '.join(sorted(h for h in dir(self._pm.hook) if not h.startswith('_')))})",
            )
            return None
        try:
            self._pm.register(module, name=f"kernel_plugins.{name}")
        except BaseException as e:  # noqa: BLE001 - pluggy validation or duplicate
            _reraise_interrupt(e)
            self._fail(name, dist, version, "register", _describe_exc(e), e)
            return None
        try:
            spec = self._subset("backend_spec", module)()
            spec = spec[0] if isinstance(spec, list) and spec else spec
        except BaseException as e:  # noqa: BLE001
            _reraise_interrupt(e)
            self._pm.unregister(module)
            self._fail(name, dist, version, "backend_spec", _describe_exc(e), e)
            return None
        problem = backend_spec_problem(spec, name)
        if problem is not None:
            self._pm.unregister(module)
            self._fail(name, dist, version, "backend_spec", problem)
            return None
        rec = BackendRecord(spec, module, dist, version, builtin)
        self._records[name] = rec
        return rec

    def _fail(
        self,
        name: str,
        dist: str | None,
        version: str | None,
        stage: str,
        message: str,
        exc: BaseException | None = None,
    ) -> None:
        failure = PluginFailure(name, dist, version, stage, message)
        if strict_mode():
            raise PluginError(failure.describe() + " (KERNEL_PLUGINS_STRICT=1)") from exc
        log.warning("%s; skipping it", failure.describe())
        self._failures.append(failure)

    def _subset(self, hook: str, plugin: object) -> Callable[..., Any]:
        others = [p for p in self._pm.get_plugins() if p is not plugin]
        return self._pm.subset_hook_caller(hook, remove_plugins=others)

    def _owner_caller(self, hook: str, backend: str) -> Callable[..., Any]:
        key = (hook, backend)
        caller = self._callers.get(key)
        if caller is None:
            caller = self._subset(hook, self.record(backend).plugin)
            self._callers[key] = caller
        return caller

    # ------------------------------------------------------------------ queries
    def backends(self) -> dict[str, BackendRecord]:
        """Installed backends by name (built-ins first, then plugins by name)."""
        self.load()
        return dict(self._records)

    def failures(self) -> list[PluginFailure]:
        """Plugin problems reported so far (each was skipped)."""
        self.load()
        return list(self._failures)

    def record(self, backend: str) -> BackendRecord:
        """The record of an installed backend; :class:`PluginError` when unknown."""
        self.load()
        try:
            return self._records[backend]
        except KeyError:
            raise PluginError(f"no installed backend is named {backend!r}") from None

    def backends_for_device_type(self, device_type: str) -> list[BackendRecord]:
        """Backends serving a torch device type (``"mps"`` -> metal; ``"cuda"`` -> cuda, rocm)."""
        self.load()
        return [rec for rec in self._records.values() if rec.spec.device_type == device_type]

    def token_owner(self, prefix: str) -> str | None:
        """The backend whose arch tokens start with ``prefix`` (``"cu"`` -> ``"cuda"``)."""
        for rec in self.backends().values():
            if prefix in rec.spec.arch_tokens:
                return rec.name
        return None

    # ---------------------------------------------------------------- detection
    def detect(self, backend: str, *, refresh: bool = False) -> DetectOutcome:
        """Ask one backend's ``detect_device`` (cached per process)."""
        rec = self.record(backend)
        with self._lock:
            if not refresh and backend in self._detected:
                return self._detected[backend]
            outcome = self._detect(rec)
            self._detected[backend] = outcome
            return outcome

    def _detect(self, rec: BackendRecord) -> DetectOutcome:
        try:
            result = self._owner_caller("detect_device", rec.name)()
        except BaseException as e:  # noqa: BLE001 - shown as this backend's error
            _reraise_interrupt(e)
            if strict_mode():
                raise PluginError(
                    f"{rec.origin()} failed in detect_device: {_describe_exc(e)}"
                ) from e
            return DetectOutcome(rec.name, None, f"detect_device raised {_describe_exc(e)}")
        outcome = detect_outcome(rec, result)
        if outcome.status == "no device" and outcome.error is None:
            outcome = dataclasses.replace(outcome, reason=self._no_device_reason(rec))
        return outcome

    def _no_device_reason(self, rec: BackendRecord) -> str | None:
        """The backend's ``explain_no_device`` answer; None when it has none or fails."""
        try:
            reason = self._owner_caller("explain_no_device", rec.name)()
        except Exception as e:  # noqa: BLE001 - the reason is informational
            log.debug("%s failed in explain_no_device: %s", rec.origin(), _describe_exc(e))
            return None
        reason = reason[0] if isinstance(reason, list) and reason else reason
        return reason if isinstance(reason, str) and reason.strip() else None

    def detect_all(self, *, refresh: bool = False) -> dict[str, DetectOutcome]:
        """Detection outcomes of every installed backend."""
        return {name: self.detect(name, refresh=refresh) for name in self.backends()}

    # ------------------------------------------------------------- owner hooks
    def list_variants(self, device: DeviceInfo, system: SystemInfo) -> list[str]:
        """The owner backend's accepted variant names, best first (validated)."""
        rec = self.record(device.backend)
        try:
            result = self._owner_caller("list_variants", rec.name)(device=device, system=system)
        except BaseException as e:  # noqa: BLE001
            _reraise_interrupt(e)
            raise PluginError(f"{rec.origin()} failed in list_variants: {_describe_exc(e)}") from e
        return variant_names(rec, result[0] if result else [])

    def explain_variant(self, device: DeviceInfo, system: SystemInfo, variant: Any) -> str | None:
        """The owner's reason for rejecting ``variant`` (None when it has none)."""
        rec = self.record(device.backend)
        try:
            reason = self._owner_caller("explain_variant", rec.name)(
                device=device, system=system, variant=variant
            )
        except BaseException as e:  # noqa: BLE001
            _reraise_interrupt(e)
            return f"(backend '{rec.name}' could not explain: {_describe_exc(e)})"
        return reason if isinstance(reason, str) else None

    def load_kernel(self, device: DeviceInfo, load: Any) -> ModuleType | None:
        """The owner's ``load_kernel`` answer (None: the core imports the variant)."""
        rec = self.record(device.backend)
        try:
            module = self._owner_caller("load_kernel", rec.name)(device=device, load=load)
        except BaseException as e:
            _reraise_interrupt(e)
            from .errors import KernelPluginsError

            if isinstance(e, KernelPluginsError):
                raise
            raise PluginError(f"{rec.origin()} failed in load_kernel: {_describe_exc(e)}") from e
        return kernel_module(rec, module)

    def locate_kernel(self, repo_id: str, device: DeviceInfo) -> Any:
        """A kernel repository path some plugin ships for ``repo_id``, or None."""
        for rec in self.backends().values():
            try:
                path = self._owner_caller("locate_kernel", rec.name)(repo_id=repo_id, device=device)
            except BaseException as e:  # noqa: BLE001
                _reraise_interrupt(e)
                self._fail(rec.name, rec.distribution, rec.version, "locate_kernel", _describe_exc(e), e)
                continue
            if path is None:
                continue
            if isinstance(path, str) or (isinstance(path, os.PathLike) and not isinstance(path, bytes)):
                return path
            self._fail(
                rec.name, rec.distribution, rec.version, "locate_kernel",
                f"locate_kernel returned {type(path).__name__} ({path!r:.80}), expected a path "
                "(str or os.PathLike) or None",
            )
        return None

    def synchronize(self, device: DeviceInfo) -> bool:
        """Ask the owner to synchronise ``device``; True when it did."""
        rec = self.record(device.backend)
        try:
            return bool(self._owner_caller("synchronize", rec.name)(device=device))
        except BaseException as e:
            _reraise_interrupt(e)
            raise PluginError(f"{rec.origin()} failed in synchronize: {_describe_exc(e)}") from e

    def emulate_device(self, backend: str, count: int, facts: dict[str, Any]) -> bool:
        """Ask ``backend`` to install emulated vendor stand-ins; False when none exist."""
        self.load()
        if backend not in self._records:
            return False
        self._detected.pop(backend, None)
        try:
            return bool(self._owner_caller("emulate_device", backend)(count=count, facts=facts))
        except BaseException as e:
            _reraise_interrupt(e)
            from .errors import KernelPluginsError

            if isinstance(e, KernelPluginsError):
                raise
            raise PluginError(
                f"{self._records[backend].origin()} failed in emulate_device: {_describe_exc(e)}"
            ) from e

    def clear_detection(self) -> None:
        """Forget cached detection results (after emulating a device, for instance)."""
        with self._lock:
            self._detected.clear()


def _reraise_interrupt(e: BaseException) -> None:
    """Let Ctrl-C through; every other exception of a plugin (SystemExit included) is its error."""
    if isinstance(e, KeyboardInterrupt):
        raise e


def _unknown_hooks(module: object, pm: pluggy.PluginManager) -> list[str]:
    names = []
    for attr in dir(module):
        fn = getattr(module, attr, None)
        if callable(fn) and hasattr(fn, f"{hookspecs.PROJECT_NAME}_impl"):
            if not hasattr(pm.hook, attr):
                names.append(attr)
    return names


def _allowlist() -> set[str] | None:
    raw = os.environ.get("KERNEL_PLUGINS_LOAD")
    if raw is None:
        return None
    return {part.strip() for part in raw.split(",") if part.strip()}


def _check_allowlist(allow: set[str], installed: set[str]) -> None:
    """Refuse a ``KERNEL_PLUGINS_LOAD`` entry that names no installed backend (a typo)."""
    known = installed | set(BUILTIN_BACKENDS)
    unknown = sorted(allow - known)
    if unknown:
        hints = "".join(did_you_mean(name, known) for name in unknown)
        raise PluginError(
            f"KERNEL_PLUGINS_LOAD names {', '.join(map(repr, unknown))}, which no installed "
            f"backend provides;{hints} installed plugins: {', '.join(sorted(installed)) or 'none'}. "
            "Fix the variable (empty: built-in backends only) or install the plugin"
        )


def _core_version() -> str | None:
    from . import __version__

    return __version__


_manager: PluginManager | None = None
_manager_lock = threading.Lock()


def get_manager() -> PluginManager:
    """The process-wide plugin manager (created and loaded lazily)."""
    global _manager
    with _manager_lock:
        if _manager is None:
            _manager = PluginManager()
        return _manager


def reset_manager(manager: PluginManager | None = None) -> PluginManager | None:
    """Replace the process-wide manager (tests); returns the previous one."""
    global _manager
    with _manager_lock:
        old, _manager = _manager, manager
        return old
