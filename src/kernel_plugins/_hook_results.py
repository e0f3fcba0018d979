"""Checks of what a backend's hooks return, before the plugin manager (which calls them; this
module never touches pluggy) trusts the answer: the value the core may use, or what is wrong,
naming the plugin, the hook and what was expected.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from types import ModuleType

from . import emulation_registry, hookspecs
from ._plugin_records import BackendRecord, DetectOutcome, strict_mode
from .device import BackendSpec, DeviceInfo
from .errors import PluginError


def backend_spec_problem(spec: object, name: str) -> str | None:
    """What is wrong with a ``backend_spec`` answer for a plugin registered as ``name`` (None: a
    :class:`BackendSpec` naming that backend)."""
    if not isinstance(spec, BackendSpec):
        return f"returned {type(spec).__name__}, expected kernel_plugins.BackendSpec"
    if spec.name != name:
        return (f"declares backend {spec.name!r} but is registered as {name!r}; the entry-point name must be "
                "the backend name")
    return None


def detect_outcome(rec: BackendRecord, result: object, index: int | None = None) -> DetectOutcome:
    """What ``detect_device`` of ``rec`` returned for device ``index`` as a :class:`DetectOutcome`: None
    (or ``[]``) and ``count == 0`` are no device, anything but a valid :class:`DeviceInfo` of this
    backend and index an error outcome (:raises PluginError: instead, under ``KERNEL_PLUGINS_STRICT=1``);
    a device type under emulation is marked emulated; an answer without an index, noted as device 0's."""
    def failed(msg: str, cause: Exception | None = None) -> DetectOutcome:
        if strict_mode():
            raise PluginError(f"{rec.origin()}: {msg}") from cause
        return DetectOutcome(rec.name, None, msg)

    result = result[0] if isinstance(result, list) and result else (None if result == [] else result)
    if result is None:
        return DetectOutcome(rec.name, None)
    if not isinstance(result, DeviceInfo):
        return failed(f"detect_device returned {type(result).__name__}, expected DeviceInfo or None")
    try:  # validate again: a plugin may have bypassed the constructor
        result = result.replace()
    except (ValueError, TypeError) as e:
        return failed(f"detect_device returned an invalid DeviceInfo: {e}", e)
    if result.backend != rec.name or result.device_type != rec.spec.device_type:
        return failed(f"detect_device returned backend {result.backend!r} / device type {result.device_type!r}, "
                      f"expected {rec.name!r} / {rec.spec.device_type!r}")
    if index is not None and result.index is None:  # a plugin that knows no index: device 0's facts
        note = f"name, capability and architecture are device 0's: {rec.origin()} reports no other device's"
        result = result.replace(index=index, notes=(*result.notes, note) if index else result.notes)
    if result.index != index:
        return failed(f"detect_device was asked for device {index} and returned device {result.index}")
    if emulation_registry.is_emulated(result.device_type) and not result.emulated:
        result = result.replace(emulated=True)
    return DetectOutcome(rec.name, result if result.count else None)


def variant_names(rec: BackendRecord, names: object) -> list[str]:
    """The names ``list_variants`` of ``rec`` returned, without duplicates.
    :raises PluginError: not a list or tuple, or a name that is not a valid variant name."""
    from .variants import validate_variant_name

    if not isinstance(names, (list, tuple)):
        raise PluginError(f"{rec.origin()}: list_variants returned {type(names).__name__}, expected list[str]")
    try:
        return list(dict.fromkeys(validate_variant_name(n) for n in names))
    except Exception as e:  # noqa: BLE001
        raise PluginError(f"{rec.origin()}: list_variants returned a bad name: {e}") from e


def kernel_module(rec: BackendRecord, module: object) -> ModuleType | None:
    """What ``load_kernel`` of ``rec`` returned. :raises PluginError: neither a module nor None."""
    if module is not None and not isinstance(module, ModuleType):
        raise PluginError(f"{rec.origin()}: load_kernel returned {type(module).__name__}, expected a module")
    return module


def marked_hooks(plugin: object) -> set[str]:
    """Names of the attributes of ``plugin`` marked with :data:`hookspecs.hookimpl`."""
    marker = f"{hookspecs.PROJECT_NAME}_impl"
    names = set()
    for attr in dir(plugin):
        try:
            value = getattr(plugin, attr, None)
        except Exception:  # noqa: BLE001 - a property that raises is not a hook
            continue
        if callable(value) and hasattr(value, marker):
            names.add(attr)
    return names


def hooks_problem(plugin: object, known: set[str]) -> str | None:
    """What is wrong with the hooks ``plugin`` offers (one no specification knows, or no
    ``backend_spec``: an entry point naming the wrong object, say), or None."""
    hooks = marked_hooks(plugin)
    unknown = sorted(hooks - known)
    if not unknown and "backend_spec" in hooks:
        return None
    what = (f"implements hooks that do not exist: {', '.join(unknown)}" if unknown else
            f"has no backend_spec hook (hooks found on {describe_plugin(plugin)}: "
            f"{', '.join(sorted(hooks)) or 'none'}; is the entry point naming the plugin "
            "object?)")
    return f"{what} (known hooks: {', '.join(sorted(known))})"


def describe_plugin(plugin: object) -> str:
    """``module x.hooks``, ``class X`` or ``X object``: what an entry point gave."""
    if isinstance(plugin, ModuleType):
        return f"module {plugin.__name__}"
    return f"{type(plugin).__name__} object" if not isinstance(plugin, type) else f"class {plugin.__name__}"


def plugin_files(plugin: object) -> Path | None:
    """The folder of the package that defines ``plugin``: where its distribution installed
    its files (None: a plugin defined outside a package)."""
    parts = str(plugin.__name__ if isinstance(plugin, ModuleType) else getattr(plugin, "__module__", "")).split(".")
    mods = (sys.modules.get(".".join(parts[: i + 1])) for i in range(len(parts)))
    file = next((m.__file__ for m in mods if hasattr(m, "__path__") and getattr(m, "__file__", None)), None)  # type: ignore[union-attr]
    return Path(file).resolve().parent if file else None  # the outermost regular package


def folder_problem(path: object) -> str | None:
    """Why ``path`` is not a kernel repository folder a plugin may answer, or None."""
    if isinstance(path, bytes) or not isinstance(path, (str, os.PathLike)):
        return f"{type(path).__name__} ({path!r:.80})"
    text = os.fspath(path)
    if not isinstance(text, str) or not text.strip():
        return "an empty path"
    if not os.path.isabs(text):
        return f"the relative path {text!r:.120} (it would depend on the working directory)"
    if not os.path.isdir(text):
        return f"{text!r:.120}, which is not an existing folder"
    return None
