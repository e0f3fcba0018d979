"""The reference policy: when a bundled reference kernel may stand in, and what it must meet.

A reference kernel (``kernel_plugins.reference``) is plain PyTorch with the Hub kernel's
API. It stands in, **with a warning** and provenance ``reference``, only when all hold:

- the source failed because no variant fits the device or the Hub could not be used
  (unreachable, or ``HF_HUB_OFFLINE=1`` with nothing cached); never after an integrity,
  trust, local disk or import error;
- the request named a Hub repository (not a local folder) whose kernel has a reference;
- no exact pin was given: ``revision=`` and ``lockfile=`` (and ``LockedLayerRepository``)
  mean that code or an error; ``version=N`` is an API selector, so the reference may stand
  in only when it implements version N;
- ``fallback="reference"`` and ``KERNEL_PLUGINS_STRICT`` is not set;
- it declares every property in ``require``.

Otherwise the original error is raised, listing every source tried and why it failed.
"""

from __future__ import annotations

from collections.abc import Iterable
from types import ModuleType

from ._warn import warn_user
from .device import DeviceInfo, SystemInfo
from .errors import FallbackError, HubError, KernelPluginsError, OfflineError
from .plugins import strict_mode
from .sources import KernelSource

__all__ = ["reference_fallback", "requirements_of", "check_requirements"]


def requirements_of(require: Iterable[str] | None) -> frozenset[str]:
    """The validated property names of ``require`` (a string counts as one name)."""
    if require is None:
        return frozenset()
    if isinstance(require, str):
        require = [require]
    from .contracts import validate_properties

    return frozenset(validate_properties(require))


def check_requirements(module: ModuleType, requirements: frozenset[str]) -> None:
    """Raise :class:`~kernel_plugins.errors.ContractError` when a property is not declared."""
    if not requirements:
        return
    from .contracts import check_module

    prov = getattr(module, "__kernel_provenance__", None)
    where = f"{prov.repo_id} ({prov.variant})" if prov else getattr(module, "__name__", "kernel")
    check_module(module, requirements, where=where)


def _what_failed(error: KernelPluginsError, info: DeviceInfo) -> str:
    if isinstance(error, OfflineError):
        return "HF_HUB_OFFLINE=1 is set and nothing of it is cached"
    if isinstance(error, HubError):
        return "the Hub could not be reached"
    return f"no variant for {info.device_type} ({info.backend})"


def _with_sources(
    error: KernelPluginsError, source: KernelSource, more: list[str], cls: type | None = None
) -> KernelPluginsError:
    """``error`` again (or as ``cls``), its message ending with every source tried and why."""
    lines = [f"Sources tried for {source.label}:", f"  1. {source.describe()}: failed (above)"]
    lines += [f"     ({note})" for note in source.notes]
    lines += [f"  {i}. {line}" for i, line in enumerate(more, 2)]
    new = (cls or type(error))(f"{error}\n" + "\n".join(lines))
    if hasattr(error, "resolution"):
        new.resolution = error.resolution  # type: ignore[attr-defined]
    return new


def reference_fallback(
    source: KernelSource,
    info: DeviceInfo,
    system: SystemInfo,
    requirements: frozenset[str],
    fallback: str,
    error: KernelPluginsError,
) -> ModuleType:
    """Serve the bundled reference kernel in place of ``source``, or raise ``error``.

    :raises KernelPluginsError: ``error`` itself (with the sources tried) when no reference
        may stand in; :class:`FallbackError` when one exists but was refused.
    """
    from .reference import reference_repo

    try:
        ref_path = reference_repo(source.short_name, (info.backend,)) if source.kind != "local" else None
    except OSError as e:  # the reference cache cannot be written
        raise _with_sources(error, source, [f"reference kernel {source.short_name!r}: {e}"]) from error
    if ref_path is None:
        if source.notes:
            raise _with_sources(error, source, []) from error
        raise error
    refused: str | None = None
    if source.exact_pin:
        pin = f"revision={source.revision!r}" if source.revision is not None else (
            f"lockfile={str(source.lockfile)!r}"
        )
        refused = f"{pin} is an exact pin: it means that code or an error"
    elif fallback == "error" or strict_mode():
        refused = "fallback='error'" if fallback == "error" else "KERNEL_PLUGINS_STRICT=1"
    if refused is not None:
        line = f"reference kernel {source.short_name!r} ({ref_path}): not used ({refused})"
        raise _with_sources(error, source, [line], FallbackError) from error
    what = _what_failed(error, info)
    module = _load_reference(source, ref_path, info, system, what, error)
    try:
        check_requirements(module, requirements)
    except KernelPluginsError as e:
        raise type(e)(f"{error}\nThe reference fallback does not qualify either: {e}") from error
    warn_user(
        f"using the portable reference kernel for {source.short_name!r} on {info.torch_device}: "
        f"{what}. Results come from plain PyTorch ops, not an optimised kernel. Pass "
        "fallback='error' to refuse.",
        UserWarning,
    )
    return module


def _load_reference(
    source: KernelSource,
    ref_path: object,
    info: DeviceInfo,
    system: SystemInfo,
    what: str,
    error: KernelPluginsError,
) -> ModuleType:
    """Run the pipeline on the reference repository; check the API version before importing."""
    from pathlib import Path

    from .fetching import fetch, offer
    from .importer import import_verified
    from .resolving import choose
    from .verification import verify

    ref_source = KernelSource(
        "reference", source.repo_id or source.label, source.repo_id, Path(str(ref_path)),
        source.short_name,
    )
    label = f"reference kernel {source.short_name!r} ({ref_path})"
    try:
        off = offer(ref_source)
        best = choose(off.where, off.variants, info, system, kind="reference")
        verified = verify(fetch(off, best))
    except KernelPluginsError as e:
        raise _with_sources(error, source, [f"{label}: {e}"]) from error
    if source.version is not None and verified.metadata.version != source.version:
        line = (
            f"{label}: implements API version {verified.metadata.version}, not the "
            f"version={source.version} asked for"
        )
        raise _with_sources(error, source, [line], FallbackError) from error
    return import_verified(verified, info, notes=(f"reference fallback: {what}",))
