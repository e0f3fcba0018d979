"""The plugin manager: the only module that touches entry points and ``pm.hook``.

Backends (built-in and third-party) are pluggy plugin objects whose hooks are methods
(or a module of hook functions). An entry point in the ``kernel_plugins`` group names
the object (``mlu = "kernel_plugins_mlu.hooks:MLU"``). Loading is lazy (the first call
that needs a backend) and idempotent. A plugin that fails to import, whose hook raises
or returns the wrong type, or that claims a backend name another plugin has, is recorded
as a :class:`PluginFailure` (name, distribution, version, original error) and skipped;
``KERNEL_PLUGINS_STRICT=1`` raises :class:`PluginError` instead. ``KERNEL_PLUGINS_LOAD``
(comma-separated backend names; empty = built-ins only) limits the entry points loaded.

Every hook call goes through :meth:`PluginManager._ask`, so that whatever a plugin raises
(``SystemExit`` and its own ``KeyboardInterrupt`` too; a real Ctrl-C goes through) is
that plugin's error. The records kept about
backends live in ``_plugin_records``; what a hook returns is checked in ``_hook_results``.
"""

from __future__ import annotations

import dataclasses
import importlib
import logging
import os
import threading
from pathlib import Path
from types import ModuleType
from typing import Any

import pluggy

from . import hookspecs
from ._hook_results import (
    backend_spec_problem,
    detect_outcome,
    folder_problem,
    hooks_problem,
    kernel_module,
    plugin_files,
    variant_names,
)
from ._plugin_records import (
    BackendRecord,
    DetectOutcome,
    HookFailure,
    PluginFailure,
    _describe_exc,
    allowlist,
    check_allowlist,
    ctrl_c_watch,
    origin,
    strict_mode,
)
from .device import DeviceInfo, SystemInfo
from .errors import PluginError

__all__ = [
    "ENTRY_POINT_GROUP", "BUILTIN_BACKENDS", "BackendRecord", "PluginFailure", "DetectOutcome",
    "PluginManager", "get_manager", "reset_manager", "strict_mode",
]

log = logging.getLogger("kernel_plugins")

#: Entry-point group a backend distribution registers its plugin object in.
ENTRY_POINT_GROUP = "kernel_plugins"
#: Entry-point group vendor extensions register with torch (read only to give advice).
TORCH_BACKENDS_GROUP = "torch.backends"
#: The plugin objects of the backends that ship inside the core (``module:attribute``),
#: registered like any plugin.
BUILTIN_BACKENDS = {
    "cpu": "kernel_plugins.backends.cpu:CPU",
    "cuda": "kernel_plugins.backends.cuda:CUDA",
    "rocm": "kernel_plugins.backends.rocm:ROCM",
    "xpu": "kernel_plugins.backends.xpu:XPU",
    "metal": "kernel_plugins.backends.metal:METAL",
}
_CORE_DIST = "kernel-plugins"


class _Pluggy(pluggy.PluginManager):
    """pluggy's manager, skipping the ``_`` names of a plugin (no hook has one) when it looks
    for hook implementations: pluggy inspects every attribute statically, half of them dunders."""

    def parse_hookimpl_opts(self, plugin: object, name: str) -> Any:
        return None if name.startswith("_") else super().parse_hookimpl_opts(plugin, name)  # type: ignore[arg-type]


class PluginManager:
    """A typed facade over pluggy for the backends of this process.

    Create one with :func:`get_manager`; tests build their own with
    ``PluginManager(entry_points=False)`` and :meth:`register` fake backends.
    """

    def __init__(self, *, entry_points: bool = True, builtins: bool = True) -> None:
        self._use_entry_points = entry_points
        self._use_builtins = builtins
        self._pm = _Pluggy(hookspecs.PROJECT_NAME)
        self._pm.add_hookspecs(hookspecs)
        self._records: dict[str, BackendRecord] = {}
        self._failures: list[PluginFailure] = []
        self._left_out: set[str] = set()
        self._detected: dict[tuple[str, int | None], DetectOutcome] = {}  # (backend, device index)
        self._callers: dict[tuple[str, str], Any] = {}
        self._loaded = False
        self._lock = threading.RLock()

    # ----------------------------------------------------------------- loading
    def load(self) -> None:
        """Load built-in backends and entry-point plugins once (idempotent)."""
        with self._lock:
            if self._loaded:
                return
            eps, allow = [], None
            if self._use_entry_points:
                from importlib.metadata import entry_points

                eps = sorted(entry_points(group=ENTRY_POINT_GROUP), key=lambda ep: ep.name)
                allow = allowlist()
            if allow is not None:  # checked on every call until fixed: a typo is an error
                check_allowlist(allow, {ep.name for ep in eps}, set(BUILTIN_BACKENDS))
            self._loaded = True
            if self._use_builtins:
                from . import __version__

                for name, target in BUILTIN_BACKENDS.items():
                    modname, _, attr = target.partition(":")
                    plugin = getattr(importlib.import_module(modname), attr)
                    self._add(plugin, name, _CORE_DIST, __version__, builtin=True)
            self._load_entry_points(eps, allow)

    def _load_entry_points(self, eps: list[Any], allow: set[str] | None) -> None:
        for ep in eps:
            dist = getattr(ep, "dist", None)
            dist_name, dist_version = getattr(dist, "name", None), getattr(dist, "version", None)
            if allow is not None and ep.name not in allow:
                log.debug("skipping plugin %s: not in KERNEL_PLUGINS_LOAD", ep.name)
                self._left_out.add(ep.name)
                continue
            try:
                with ctrl_c_watch() as ctrl_c:
                    plugin = ep.load()
            except BaseException as e:  # noqa: BLE001 - any import failure is reported
                if isinstance(e, KeyboardInterrupt) and ctrl_c:
                    raise
                self._fail(ep.name, dist_name, dist_version, "import", _describe_exc(e), e)
                continue
            self._add(plugin, ep.name, dist_name, dist_version, builtin=False)

    def register(self, plugin: object, *, name: str, distribution: str | None = None,
                 version: str | None = None) -> BackendRecord | None:
        """Register a backend plugin object (or hooks module) by hand (tests, in-process plugins).

        Returns the record, or None when the plugin was rejected (see :meth:`failures`).
        """
        self.load()
        with self._lock:
            self._detected.clear()
            self._callers.clear()
            return self._add(plugin, name, distribution, version, builtin=False)

    def unregister(self, name: str) -> None:
        """Remove a backend registered under ``name`` (no error when absent)."""
        with self._lock:
            rec = self._records.pop(name, None)
            if rec is not None:
                self._pm.unregister(rec.plugin)
            self._detected = {k: v for k, v in self._detected.items() if k[0] != name}
            self._callers.clear()

    def _add(self, plugin: object, name: str, dist: str | None, version: str | None, *,
             builtin: bool) -> BackendRecord | None:
        def fail(stage: str, message: str, exc: BaseException | None = None) -> None:
            self._fail(name, dist, version, stage, message, exc)

        if name in self._records:
            problem: str | None = (f"backend name {name!r} is already provided by {self._records[name].origin()}; "
                                   "uninstall one of the two distributions")
        else:
            problem = hooks_problem(plugin, {h for h in dir(self._pm.hook) if not h.startswith("_")})
        if problem is not None:
            fail("register", problem)
            return None
        try:
            self._pm.register(plugin, name=f"kernel_plugins.{name}")
        except BaseException as e:  # noqa: BLE001 - pluggy validation or duplicate
            if isinstance(e, KeyboardInterrupt):
                raise
            fail("register", _describe_exc(e), e)
            return None
        cause: BaseException | None = None
        try:
            who = origin(name, dist, version)
            spec = self._ask("backend_spec", who, self._subset("backend_spec", plugin))
            problem = backend_spec_problem(spec, name)
        except HookFailure as f:
            problem, cause = _describe_exc(f.error), f.error
        if problem is not None:
            self._pm.unregister(plugin)
            fail("backend_spec", problem, cause)
            return None
        rec = BackendRecord(spec, plugin, dist, version, builtin)
        self._records[name] = rec
        return rec

    def _fail(self, name: str, dist: str | None, version: str | None, stage: str, message: str,
              exc: BaseException | None = None) -> None:
        failure = PluginFailure(name, dist, version, stage, message)
        if strict_mode():
            raise PluginError(failure.describe() + " (KERNEL_PLUGINS_STRICT=1)") from exc
        log.warning("%s; skipping it", failure.describe())
        self._failures.append(failure)

    def _subset(self, hook: str, plugin: object) -> Any:
        others = [p for p in self._pm.get_plugins() if p is not plugin]
        return self._pm.subset_hook_caller(hook, remove_plugins=others)

    def _ask(self, hook: str, origin: str, caller: Any, **kwargs: Any) -> Any:
        """Call one plugin's ``hook``: the one isolation every hook call goes through.

        Whatever the hook raises but a real Ctrl-C (``SystemExit``, ``GeneratorExit`` and a
        ``KeyboardInterrupt`` of its own too, see :func:`ctrl_c_watch`) becomes a
        :class:`HookFailure` naming the plugin and the hook; each caller decides whether
        that is an error, a skipped plugin or a missing answer. The answer of a hook that
        is not ``firstresult`` (a list of one) is unwrapped.
        """
        try:
            with ctrl_c_watch() as ctrl_c:
                result = caller(**kwargs)
        except BaseException as e:  # noqa: BLE001 - a plugin's failure is its own
            if isinstance(e, KeyboardInterrupt) and ctrl_c:
                raise
            raise HookFailure(origin, hook, e) from e
        if isinstance(result, list) and not getattr(self._pm.hook, hook).spec.opts.get("firstresult"):
            return result[0] if result else None
        return result

    def _ask_owner(self, hook: str, backend: str, **kwargs: Any) -> Any:
        """:meth:`_ask` for the backend ``backend``'s own implementation of ``hook``."""
        rec = self.record(backend)
        key = (hook, backend)
        caller = self._callers.get(key)
        if caller is None:
            caller = self._callers[key] = self._subset(hook, rec.plugin)
        return self._ask(hook, rec.origin(), caller, **kwargs)

    # ------------------------------------------------------------------ queries
    def backends(self) -> dict[str, BackendRecord]:
        """Installed backends by name (built-ins first, then plugins by name)."""
        self.load()
        return dict(self._records)

    def failures(self) -> list[PluginFailure]:
        """Plugin problems reported so far (each was skipped)."""
        self.load()
        return list(self._failures)

    def left_out(self) -> set[str]:
        """Installed plugins that ``KERNEL_PLUGINS_LOAD`` leaves out."""
        self.load()
        return set(self._left_out)

    def vendor_extensions(self) -> dict[str, str]:
        """Torch device extensions installed here, from the ``torch.backends`` entry points
        (read without importing anything): top-level module -> ``"<distribution> <version>"``."""
        from importlib.metadata import entry_points

        return {ep.module.partition(".")[0]: f"{ep.dist.name} {ep.dist.version}" if ep.dist else ep.name
                for ep in entry_points(group=TORCH_BACKENDS_GROUP)}

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
        return next((r.name for r in self.backends().values() if prefix in r.spec.arch_tokens), None)

    # ---------------------------------------------------------------- detection
    def detect(self, backend: str, *, refresh: bool = False, index: int | None = None) -> DetectOutcome:
        """Ask one backend's ``detect_device`` for device ``index``'s facts (None: the backend's
        devices, with device 0's facts); cached per process."""
        rec = self.record(backend)
        with self._lock:
            if refresh or (backend, index) not in self._detected:
                self._detected[backend, index] = self._detect(rec, index)
            return self._detected[backend, index]

    def _detect(self, rec: BackendRecord, index: int | None) -> DetectOutcome:
        try:
            result = self._ask_owner("detect_device", rec.name, index=index)
        except HookFailure as f:  # shown as this backend's error
            if strict_mode():
                f.reraise()
            return DetectOutcome(rec.name, None, f"detect_device raised {_describe_exc(f.error)}")
        outcome = detect_outcome(rec, result, index)
        if outcome.status != "no device" or outcome.error is not None:
            return outcome
        try:  # why there is none: the backend's explain_no_device answer, when it has one
            reason = self._ask_owner("explain_no_device", rec.name)
        except HookFailure as f:  # the reason is informational
            log.debug("%s", f.message)
            reason = None
        return dataclasses.replace(outcome, reason=reason if isinstance(reason, str) and reason.strip() else None)

    def detect_all(self, *, refresh: bool = False) -> dict[str, DetectOutcome]:
        """Detection outcomes of every installed backend."""
        return {name: self.detect(name, refresh=refresh) for name in self.backends()}

    # ------------------------------------------------------------- owner hooks
    def list_variants(self, device: DeviceInfo, system: SystemInfo) -> list[str]:
        """The owner backend's accepted variant names, best first (validated)."""
        try:
            result = self._ask_owner("list_variants", device.backend, device=device, system=system)
        except HookFailure as f:
            f.reraise()
        return variant_names(self.record(device.backend), [] if result is None else result)

    def explain_variant(self, device: DeviceInfo, system: SystemInfo, variant: Any) -> str | None:
        """The owner's reason for rejecting ``variant`` (None when it has none)."""
        try:
            reason = self._ask_owner("explain_variant", device.backend, device=device, system=system, variant=variant)
        except HookFailure as f:
            return f"(backend '{device.backend}' could not explain: {_describe_exc(f.error)})"
        return reason if isinstance(reason, str) else None

    def check_arch(self, device: DeviceInfo, archs: tuple[str, ...]) -> bool | None:
        """The owner's verdict on ``archs``: True, False or None (also for a failure: reported)."""
        try:
            verdict = self._ask_owner("check_arch", device.backend, device=device, archs=archs)
            if verdict is None or isinstance(verdict, bool):
                return verdict
            problem, cause = f"returned {type(verdict).__name__}, expected True, False or None", None
        except HookFailure as f:
            problem, cause = _describe_exc(f.error), f.error
        rec = self.record(device.backend)
        self._fail(rec.name, rec.distribution, rec.version, "check_arch",
                   f"{problem}; the architectures are not checked", cause)
        return None

    def load_kernel(self, device: DeviceInfo, load: Any) -> ModuleType | None:
        """The owner's ``load_kernel`` answer (None: the core imports the variant)."""
        try:
            module = self._ask_owner("load_kernel", device.backend, device=device, load=load)
        except HookFailure as f:
            f.reraise(keep_ours=True)
        return kernel_module(self.record(device.backend), module)

    def locate_kernel(self, repo_id: str, device: DeviceInfo) -> tuple[Path, str, bool] | None:
        """A kernel repository folder some plugin ships for ``repo_id``: (folder, who answered,
        whether it lies in the plugin's own files (:func:`plugin_files`)), or None.

        Only an absolute path of an existing folder is an answer; anything else (``""``,
        a relative path, a file, a raised exception) is that plugin's error: reported
        and skipped, so that a load never uses the working directory by accident.
        """
        for rec in self.backends().values():
            try:
                path = self._ask_owner("locate_kernel", rec.name, repo_id=repo_id, device=device)
            except HookFailure as f:
                self._fail(rec.name, rec.distribution, rec.version, "locate_kernel",
                           _describe_exc(f.error), f.error)
                continue
            if path is None:
                continue
            problem = folder_problem(path)
            if problem is None:
                home = plugin_files(rec.plugin)
                found = Path(os.fspath(path))
                return found, rec.origin(), home is not None and found.resolve().is_relative_to(home)
            self._fail(rec.name, rec.distribution, rec.version, "locate_kernel",
                       f"locate_kernel returned {problem}; expected None or the absolute path "
                       "of a kernel repository folder")
        return None

    def paired_torch(self) -> list[str]:
        """Every backend's ``paired_torch`` answer (a failing hook is left out)."""
        answers = []
        for name in self.backends():
            try:
                answers.append(self._ask_owner("paired_torch", name))
            except HookFailure as f:  # informational, like explain_no_device
                log.debug("%s", f.message)
        return [a for a in answers if isinstance(a, str) and a.strip()]

    def synchronize(self, device: DeviceInfo) -> bool:
        """Ask the owner to synchronise ``device``; True when it did."""
        try:
            return bool(self._ask_owner("synchronize", device.backend, device=device))
        except HookFailure as f:
            f.reraise()

    def emulate_device(self, backend: str, count: int, facts: dict[str, Any]) -> bool:
        """Ask ``backend`` to install emulated vendor stand-ins; False when none exist."""
        self.load()
        if backend not in self._records:
            return False
        self._detected = {k: v for k, v in self._detected.items() if k[0] != backend}
        try:
            return bool(self._ask_owner("emulate_device", backend, count=count, facts=facts))
        except HookFailure as f:
            f.reraise(keep_ours=True)

    def clear_detection(self) -> None:
        """Forget cached detection results (after emulating a device, for instance)."""
        with self._lock:
            self._detected.clear()


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
