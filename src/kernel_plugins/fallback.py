"""The reference policy: when a bundled reference kernel may stand in, and what it must meet.

A reference kernel (``kernel_plugins.reference``) is plain PyTorch with the Hub kernel's
API. It stands in, **with a warning** (once per kernel and device in a process) and
provenance ``reference``, only when all hold:

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
:class:`ReferencePolicy` only picks the next source and judges it; the loader runs the
one pipeline on it (:func:`kernel_plugins.loader.load_source`).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager, suppress
from contextvars import ContextVar
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING

from ._record import record
from ._warn import warn_user
from .contracts import check_module
from .device import DeviceInfo
from .errors import FallbackError, HubError, KernelPluginsError, OfflineError
from .plugins import strict_mode
from .signatures import signature_required
from .sources import KernelSource

if TYPE_CHECKING:
    from .metadata import KernelMetadata

__all__ = ["ReferencePolicy", "check_requirements", "warn_reference", "deferred_warnings"]

_WARNED: set[tuple[str, str, str]] = set()  # (kernel, device, note) this process reported
_DEFERRED: ContextVar[list[tuple[str, str, str, str]] | None] = ContextVar("_DEFERRED", default=None)


def warn_reference(kernel: str, device: str, why: str, layers: Iterable[str] = ()) -> None:
    """Say that the reference kernel stands in, once per kernel and device (and once more under a
    required signature, which it sets aside), naming the ``layers`` it serves."""
    unsigned = (" A signature was required: the bundled reference kernel is trusted as "
                "installed, so the requirement was set aside for it.") if signature_required() else ""
    if (kernel, device, unsigned) not in _WARNED:
        _WARNED.add((kernel, device, unsigned))
        names = ", ".join(f"`{n}`" for n in layers)
        warn_user(f"using the portable reference kernel for {kernel!r} on {device}"
                  f"{f', serving {names}' if names else ''}: {why}. Results come from plain PyTorch "
                  f"ops, not an optimised kernel.{unsigned} Pass fallback='error' to refuse.")


@contextmanager
def deferred_warnings() -> Iterator[list[tuple[str, str, str, str]]]:
    """Inside, fallbacks are collected as ``(module name, kernel, device, why)``, not warned about."""
    pending: list[tuple[str, str, str, str]] = []
    token = _DEFERRED.set(pending)
    try:
        yield pending
    finally:
        _DEFERRED.reset(token)


def check_requirements(module: ModuleType, requirements: frozenset[str]) -> None:
    """Raise :class:`~kernel_plugins.errors.ContractError` when a property is not declared."""
    prov = getattr(module, "__kernel_provenance__", None)
    where = f"{prov.repo_id} ({prov.variant})" if prov else getattr(module, "__name__", "kernel")
    check_module(module, requirements, where=where)


def _what_failed(error: KernelPluginsError, info: DeviceInfo) -> str:
    if isinstance(error, OfflineError):
        return "HF_HUB_OFFLINE=1 is set and nothing of it is cached"
    if isinstance(error, HubError):
        return "the Hub could not be reached"
    return f"no variant for {info.device_type} ({info.backend})"


def _with_sources(error: KernelPluginsError, source: KernelSource, more: list[str],
                  cls: type | None = None) -> KernelPluginsError:
    """``error`` again (or as ``cls``), its message ending with every source tried and why."""
    lines = [f"Sources tried for {source.label}:", f"  1. {source.describe()}: failed (above)"]
    lines += [f"     ({note})" for note in source.notes]
    lines += [f"  {i}. {line}" for i, line in enumerate(more, 2)]
    new = (cls or type(error))(f"{error}\n" + "\n".join(lines))
    if hasattr(error, "resolution"):
        new.resolution = error.resolution  # type: ignore[attr-defined]
    return new


def _did_you_mean(source: KernelSource) -> str:
    """``no kernel named 'activaton' is bundled or cached: did you mean 'activation'?``, from the
    names known offline (the bundled references and the repositories in the cache), or ``""``."""
    import os

    from ._suggest import did_you_mean
    from .hub import cache_dir
    from .reference import reference_names

    known = set(reference_names())
    with suppress(OSError):
        known |= {e.name.split("--")[-1] for e in os.scandir(cache_dir()) if e.name.count("--") == 2}
    guess = "" if source.short_name in known else did_you_mean(source.short_name, known)
    return f"no kernel named {source.short_name!r} is bundled or cached:{guess}" if guess else ""


@record
class ReferencePolicy:
    """The reference policy of one ``load`` call: it picks the source that may stand in for
    a failed one (:meth:`next_source`); :func:`kernel_plugins.loader.load_source` runs it.

    Attributes: fallback (``"reference"`` or ``"error"``), requirements (``require``).
    """

    fallback: str = "reference"
    requirements: frozenset[str] = frozenset()

    def next_source(self, source: KernelSource, info: DeviceInfo, error: KernelPluginsError) -> KernelSource:
        """The bundled reference kernel's source, to try after ``source`` failed with ``error``.

        :raises KernelPluginsError: ``error`` itself (with the sources tried) when no
            reference may stand in; :class:`FallbackError` when one exists but is refused.
        """
        from .reference import reference_repo

        try:
            ref_path = reference_repo(source.short_name, (info.backend,)) if source.kind != "local" else None
        except OSError as e:  # the reference cache cannot be written
            raise _with_sources(error, source, [f"reference kernel {source.short_name!r}: {e}"]) from error
        if ref_path is None:
            guess = _did_you_mean(source) if source.kind == "hub" else ""
            if source.notes or guess:
                raise _with_sources(error, source, [guess] if guess else []) from error
            raise error
        refused: str | None = None
        if source.exact_pin:
            pin = f"revision={source.revision!r}" if source.revision is not None else f"lockfile={str(source.lockfile)!r}"
            refused = f"{pin} is an exact pin: it means that code or an error"
        elif self.fallback == "error" or strict_mode():
            refused = "fallback='error'" if self.fallback == "error" else "KERNEL_PLUGINS_STRICT=1"
        if refused is not None:
            line = f"reference kernel {source.short_name!r} ({ref_path}): not used ({refused})"
            raise _with_sources(error, source, [line], FallbackError) from error
        return KernelSource("reference", source.repo_id or source.label, source.repo_id, Path(str(ref_path)),
                            source.short_name, version=source.version,
                            notes=(f"reference fallback: {_what_failed(error, info)}",))

    def check(self, ref_source: KernelSource, metadata: KernelMetadata) -> None:
        """Before import: the reference implements the API ``version=N`` asked for.

        :raises FallbackError: it implements another version.
        """
        if ref_source.version is not None and metadata.version != ref_source.version:
            raise FallbackError(f"implements API version {metadata.version}, not the version="
                                f"{ref_source.version} asked for")

    def failed(self, source: KernelSource, ref_source: KernelSource, e: KernelPluginsError,
               error: KernelPluginsError) -> KernelPluginsError:
        """``error`` with the reference's failure ``e`` among the sources tried."""
        label = f"reference kernel {source.short_name!r} ({ref_source.path})"
        cls = FallbackError if isinstance(e, FallbackError) else None
        return _with_sources(error, source, [f"{label}: {e}"], cls)

    def accept(self, module: ModuleType, source: KernelSource, info: DeviceInfo,
               error: KernelPluginsError) -> ModuleType:
        """The imported reference ``module``, once it declares every required property.

        :raises ContractError: it does not (the message starts with ``error``).
        """
        try:
            check_requirements(module, self.requirements)
        except KernelPluginsError as e:
            raise type(e)(f"{error}\nThe reference fallback does not qualify either: {e}") from error
        entry = (module.__name__, source.short_name, info.torch_device, _what_failed(error, info))
        pending = _DEFERRED.get()
        pending.append(entry) if pending is not None else warn_reference(*entry[1:])
        return module
