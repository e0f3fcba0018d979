"""``load()``: from a name to an imported kernel module, one step per module.

device -> source -> variant names -> resolution -> fetch -> verify -> import ->
provenance. A failure raises one error that carries what was learned so far (the
sources tried, the resolution trace).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any, Literal

from ._warn import warn_user
from .detection import get_device, system_info
from .device import DeviceInfo, SystemInfo
from .errors import (
    FallbackError,
    HubError,
    KernelPluginsError,
    NoCompatibleVariantError,
    SourceError,
)
from .importer import KernelLoad, Provenance, check_python_depends, import_variant, record_loaded
from .metadata import read_metadata
from .plugins import get_manager, strict_mode
from .sources import Target, classify, local_variants, parse_local_kernels
from .variants import UNIVERSAL, Resolution, resolve

__all__ = ["load", "resolve_variants", "system_info", "FallbackPolicy", "Candidate"]

log = logging.getLogger("kernel_plugins")

FallbackPolicy = Literal["reference", "error"]


def resolve_variants(
    available: Iterable[str], device: object = None, system: SystemInfo | None = None
) -> Resolution:
    """Resolve variant names for a device with the installed backends' rules.

    :param available: variant names (e.g. the folders under ``build/``).
    :param device: a device string, ``torch.device`` or :class:`DeviceInfo` (default:
        the preferred device of this machine).
    :param system: system facts (default: this machine's).
    :return: a :class:`~kernel_plugins.variants.Resolution`; never raises for bad names.
    """
    info = get_device(device)
    system = system or system_info()
    manager = get_manager()
    return resolve(
        list(available),
        info,
        system,
        manager.list_variants(info, system),
        explain=lambda v: manager.explain_variant(info, system, v),
        token_owner=manager.token_owner,
    )


@dataclass
class Candidate:
    """A source tried while loading: where, and what came of it."""

    source: str
    where: str
    variants: dict[str, Path] = field(default_factory=dict)
    resolution: Resolution | None = None
    error: str | None = None
    hub_ref: Any = None


def load(
    name: str | os.PathLike[str],
    *,
    device: object = None,
    revision: str | None = None,
    version: int | None = None,
    lockfile: str | os.PathLike[str] | None = None,
    require: Iterable[str] | None = None,
    fallback: FallbackPolicy = "reference",
    trust_remote_code: bool = False,
    repo_type: str | None = None,
) -> ModuleType:
    """Load a kernel for a device and return its module.

    :param name: a Hub repo id (``"kernels-community/activation"``), a short name
        (``"activation"`` -> ``<KERNEL_PLUGINS_DEFAULT_ORG or kernels-community>/activation``)
        or a local path (a repository folder with ``build/``, a folder of variant folders,
        or one variant folder).
    :param device: ``"mlu"``, ``"cuda:1"``, a ``torch.device``, or None for the preferred one.
    :param revision: a branch, tag or commit sha (Hub only).
    :param version: kernel version N: the tip of branch ``vN`` (Hub only).
    :param lockfile: a ``kernels.lock`` pinning the repo (see :mod:`kernel_plugins.lock`).
    :param require: properties the kernel must declare (e.g. ``{"deterministic"}``).
    :param fallback: ``"reference"`` to use a bundled portable reference kernel (with a
        warning) when the repo has no variant for the device or the Hub is unreachable;
        ``"error"`` to raise instead. ``KERNEL_PLUGINS_STRICT=1`` means ``"error"``.
    :param trust_remote_code: allow Hub organisations outside the trusted list.
    :param repo_type: ``"kernel"`` or ``"model"`` (default: try both).
    :return: the kernel module, with ``__kernel_provenance__``.
    :raises KernelPluginsError: subclasses naming what went wrong and how to fix it.

    Example::

        activation = kernel_plugins.load("activation", device="mlu")
        activation.silu_and_mul(out, x)
    """
    if fallback not in ("reference", "error"):
        raise ValueError(f"fallback must be 'reference' or 'error', got {fallback!r}")
    requirements = _requirements(require)
    info = get_device(device)
    system = system_info()
    target = classify(name)
    candidates: list[Candidate] = []
    try:
        module = _load_target(
            target, info, system, candidates,
            revision=revision, version=version, lockfile=lockfile,
            trust_remote_code=trust_remote_code, repo_type=repo_type,
        )
    except (NoCompatibleVariantError, HubError) as e:
        reference = _reference_fallback(
            target, info, system, candidates, requirements, fallback, e
        )
        if reference is None:
            raise
        return reference
    _check_requirements(module, requirements)
    return module


def _requirements(require: Iterable[str] | None) -> frozenset[str]:
    if require is None:
        return frozenset()
    if isinstance(require, str):
        require = [require]
    from .contracts import validate_properties

    return frozenset(validate_properties(require))


def _check_requirements(module: ModuleType, requirements: frozenset[str]) -> None:
    if not requirements:
        return
    from .contracts import check_module

    prov = getattr(module, "__kernel_provenance__", None)
    where = f"{prov.repo_id} ({prov.variant})" if prov else getattr(module, "__name__", "kernel")
    check_module(module, requirements, where=where)


def _load_target(
    target: Target,
    info: DeviceInfo,
    system: SystemInfo,
    candidates: list[Candidate],
    **hub_kwargs: Any,
) -> ModuleType:
    pins = {k: hub_kwargs.get(k) for k in ("revision", "version", "lockfile")}
    pinned = ", ".join(f"{k}={v!r}" for k, v in pins.items() if v is not None)
    if target.kind == "path":
        assert target.path is not None
        if pinned:
            raise SourceError(
                f"{target.path} is a local folder: {pinned} only applies to Hub repositories; "
                "drop it, or load the repository by its id 'org/name'"
            )
        return _load_local(target.path, str(target.path), "local", info, system, candidates)
    repo_id = target.repo_id
    assert repo_id is not None
    override = parse_local_kernels().get(repo_id)
    if override is not None:
        if pinned:
            log.info("LOCAL_KERNELS overrides %s with %s; %s is not used", repo_id, override, pinned)
        return _load_local(override, repo_id, "local-kernels", info, system, candidates)
    shipped = get_manager().locate_kernel(repo_id, info)
    if shipped is not None:
        return _load_local(Path(shipped), repo_id, "plugin", info, system, candidates)
    from .hubload import load_from_hub

    return load_from_hub(repo_id, info, system, candidates, **hub_kwargs)


def _resolve_candidate(cand: Candidate, info: DeviceInfo, system: SystemInfo) -> str:
    manager = get_manager()
    cand.resolution = resolve(
        list(cand.variants),
        info,
        system,
        manager.list_variants(info, system),
        explain=lambda v: manager.explain_variant(info, system, v),
        token_owner=manager.token_owner,
    )
    best = cand.resolution.best
    if best is None:
        raise NoCompatibleVariantError(
            _no_variant_message(cand.where, info, [cand]), resolution=cand.resolution
        )
    return best


def _no_variant_message(what: str, info: DeviceInfo, candidates: list[Candidate]) -> str:
    lines = [f"no build variant of {what} fits {info.summary()}."]
    for c in candidates:
        lines.append(f"Source {c.source}: {c.where}")
        if c.error:
            lines.append(f"  error: {c.error}")
        if c.resolution is not None:
            lines.append(c.resolution.trace())
    lines.append(
        "Publish a variant for this device (see `kernel-plugins list-backends` for the names it "
        "accepts) or load on another device."
    )
    return "\n".join(lines)


def _load_local(
    root: Path,
    label: str,
    source: str,
    info: DeviceInfo,
    system: SystemInfo,
    candidates: list[Candidate],
) -> ModuleType:
    cand = Candidate(source, f"{label} ({root})" if label != str(root) else label)
    candidates.append(cand)
    cand.variants = dict(local_variants(root).variants)
    best = _resolve_candidate(cand, info, system)
    return import_resolved(
        repo_id=label, variant=best, path=cand.variants[best], source=source, device=info,
    )


def import_resolved(
    *,
    repo_id: str,
    variant: str,
    path: Path,
    source: str,
    device: DeviceInfo,
    revision: str | None = None,
    sha: str | None = None,
    notes: tuple[str, ...] = (),
) -> ModuleType:
    """Validate, check dependencies and import one chosen variant folder.

    Used by every source (local, Hub, plugin, reference) so they behave the same.
    """
    metadata = read_metadata(path)
    manager = get_manager()
    spec = manager.record(device.backend).spec
    check_python_depends(metadata, spec, where=str(path / "metadata.json"))
    if metadata.is_dirty:
        warn_user(
            f"kernel {metadata.name!r} ({path}) was built from a dirty source tree; its code may "
            "not match any published commit",
            UserWarning,
        )
    if variant == UNIVERSAL and source != "reference" and not _is_bundled_reference(path):
        warn_user(
            f"{repo_id}: the torch-universal variant is deprecated; publish noarch variants "
            f"instead (torch-{device.backend} for this device, torch-<backend> for each backend "
            "the code supports)",
            DeprecationWarning,
        )
    load = KernelLoad(repo_id, variant, path, metadata, metadata.id)
    module = manager.load_kernel(device, load)
    if module is None:
        module = import_variant(load)
    record_loaded(
        module,
        Provenance(
            source=source,
            repo_id=repo_id,
            variant=variant,
            backend=device.backend,
            device_type=device.device_type,
            emulated=device.emulated,
            path=str(path),
            module_name=module.__name__,
            revision=revision,
            sha=sha,
            notes=notes,
        ),
    )
    return module


def _is_bundled_reference(path: Path) -> bool:
    """Whether ``path`` is inside the reference kernels shipped with kernel-plugins."""
    from .reference import REFERENCE_ROOT

    return REFERENCE_ROOT.resolve() in path.resolve().parents


def _reference_fallback(
    target: Target,
    info: DeviceInfo,
    system: SystemInfo,
    candidates: list[Candidate],
    requirements: frozenset[str],
    fallback: FallbackPolicy,
    error: KernelPluginsError,
) -> ModuleType | None:
    from .reference import reference_repo

    if target.kind != "repo":
        return None
    ref = reference_repo(target.short_name)
    if ref is None:
        return None
    if fallback == "error" or strict_mode():
        why = "fallback='error'" if fallback == "error" else "KERNEL_PLUGINS_STRICT=1"
        raise FallbackError(
            f"{error}\nA portable reference kernel for {target.short_name!r} exists but was not "
            f"used ({why})."
        ) from error
    what = "the Hub could not be reached" if isinstance(error, HubError) else (
        f"no variant for {info.device_type} ({info.backend})"
    )
    note = f"reference fallback: {what}"
    ref_cand = Candidate("reference", f"reference kernel {target.short_name!r} ({ref})")
    ref_cand.variants = dict(local_variants(ref).variants)
    best = _resolve_candidate(ref_cand, info, system)
    metadata_path = ref_cand.variants[best]
    module = import_resolved(
        repo_id=target.repo_id or str(target.path),
        variant=best,
        path=metadata_path,
        source="reference",
        device=info,
        notes=(note,),
    )
    if requirements:
        try:
            _check_requirements(module, requirements)
        except KernelPluginsError as e:
            raise type(e)(f"{error}\nThe reference fallback does not qualify either: {e}") from error
    warn_user(
        f"using the portable reference kernel for {target.short_name!r} on {info.torch_device}: "
        f"{what}. Results come from plain PyTorch ops, not an optimised kernel. Pass "
        "fallback='error' to refuse.",
        UserWarning,
    )
    return module
