"""The public API of the Hugging Face ``kernels`` package (0.17), on kernel-plugins.

``import kernel_plugins.compat.kernels as kernels`` runs code written for ``kernels``
unchanged, on every backend kernel-plugins has (MLU, MUSA, NPU and Neuron included):
loading goes through :func:`kernel_plugins.load` (variant resolution by the backend
plugins, integrity checks, reference fallbacks with a warning) and kernelize through
:func:`kernel_plugins.layers.kernelize`. Trust is enforced on every path: Hub
repositories outside the trusted organisations need ``trust_remote_code=True`` (or a list
naming them). Differences from ``kernels`` are listed in ``docs/compat-kernels.md``.

Example::

    import kernel_plugins.compat.kernels as kernels

    activation = kernels.get_kernel("kernels-community/activation", version=1)
    kernels.register_kernel_mapping({"SiluAndMul": {
        "cuda": kernels.LayerRepository("kernels-community/activation",
                                        layer_name="SiluAndMul", version=1),
    }})
    kernels.kernelize(model, mode=kernels.Mode.INFERENCE)
"""

from __future__ import annotations

import contextvars
import inspect
import logging
import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from .. import layers as _layers
from ..layers import (
    Mode,
    replace_kernel_forward_from_hub,
    use_kernel_forward_from_hub,
)
from ..layers.repositories import KernelRepository
from ._kernels_errors import (
    as_kernels_errors,
    kernels_advice,
    need_version_or_revision,
    translated,
)
from ._kernels_repos import (
    FuncRepository,
    LayerRepository,
    LocalFuncRepository,
    LocalLayerRepository,
    LockedFuncRepository,
    LockedLayerRepository,
    resolve_trust,
)
from ._kernels_types import (
    CUDAProperties,
    Device,
    KernelizeFallback,
    Metadata,
    RepoInfo,
    ROCMProperties,
    VariantAccepted,
    VariantName,
    VariantRejected,
)

__version__ = "0.17.2"

__all__ = [
    "__version__",
    "Benchmark",
    "CUDAProperties",
    "Device",
    "KernelizeFallback",
    "ROCMProperties",
    "FuncRepository",
    "LayerRepository",
    "LoadedKernel",
    "LocalFuncRepository",
    "LocalLayerRepository",
    "LockedFuncRepository",
    "LockedLayerRepository",
    "Metadata",
    "Mode",
    "RepoInfo",
    "VariantAccepted",
    "VariantRejected",
    "get_kernel",
    "get_kernel_dep",
    "get_kernel_variants",
    "get_loaded_kernels",
    "get_local_kernel",
    "get_locked_kernel",
    "has_kernel",
    "install_kernel",
    "kernelize",
    "load_kernel",
    "register_kernel_mapping",
    "replace_kernel_forward_from_hub",
    "use_kernel_forward_from_hub",
    "use_kernel_func_from_hub",
    "use_kernel_mapping",
    "use_kernelized_func",
]

log = logging.getLogger("kernel_plugins.compat.kernels")


# ----------------------------------------------------------------------------- loading
def _check_user_agent(user_agent: object) -> None:
    if user_agent is not None and not isinstance(user_agent, (str, dict)):
        raise TypeError(f"user_agent must be a str, a dict or None, got {user_agent!r}")


def _load(target: str | Path, *, backend: str | None, trust: bool = False, **options: Any) -> ModuleType:
    import kernel_plugins

    with kernels_advice():
        return kernel_plugins.load(target, device=backend, trust_remote_code=trust, **options)


@translated
def get_kernel(
    repo_id: str,
    *,
    revision: str | None = None,
    version: int | None = None,
    backend: str | None = None,
    user_agent: str | dict[str, Any] | None = None,
    trust_remote_code: bool | list[str] = False,
    check_arch: bool = True,
) -> ModuleType:
    """Load a Hub kernel for ``backend`` (default: this machine's device) and return it.

    ``user_agent`` is accepted and not sent; ``check_arch`` is accepted (the backend
    plugins always check the variant against the device).
    """
    _check_user_agent(user_agent)
    need_version_or_revision(revision, version)
    trust = resolve_trust(repo_id, trust_remote_code)
    return _load(repo_id, backend=backend, trust=trust, revision=revision, version=version)


@translated
def get_local_kernel(
    repo_path: Path,
    *,
    backend: str | None = None,
    trust_remote_code: bool | list[str] = False,
    user_agent: str | dict[str, Any] | None = None,
) -> ModuleType:
    """Import a kernel from a local repository folder (one holding ``build/``)."""
    _check_user_agent(user_agent)
    return _load(Path(repo_path), backend=backend)


@translated
def has_kernel(
    repo_id: str,
    *,
    revision: str | None = None,
    version: int | None = None,
    backend: str | None = None,
    trust_remote_code: bool | list[str] = False,
    check_arch: bool = True,
) -> bool:
    """Whether the Hub kernel has a build variant for this environment.

    Trust is checked first (an untrusted repository raises). Offline with nothing cached,
    or without the Hub, it answers like :func:`get_kernel` loads: for the bundled
    reference kernel (with a warning), else with the same error.
    """
    from ..errors import NoCompatibleVariantError

    need_version_or_revision(revision, version)
    try:
        resolution = _resolution(repo_id, revision, version, backend, trust_remote_code)
    except NoCompatibleVariantError:
        return False
    return bool(resolution.accepted)


def _caller_lockfile(repo_id: str) -> Path:
    """The calling code's ``kernels.lock`` (see :mod:`kernel_plugins.lock._discovery`)."""
    from ..lock import caller_file, find_lockfile

    return find_lockfile(caller_file(), what=repo_id)


@translated
def load_kernel(repo_id: str, *, lockfile: Path | None, backend: str | None = None) -> ModuleType:
    """Load a locked kernel (``kernels.lock``; None: the calling code's lock file)."""
    lock = Path(lockfile) if lockfile is not None else _caller_lockfile(repo_id)
    return _load(repo_id, backend=backend, lockfile=lock)


@translated
def get_locked_kernel(
    repo_id: str,
    *,
    lockfile: Path | None,
    backend: str | None = None,
    user_agent: str | dict[str, Any] | None = None,
    trust_remote_code: bool | list[str] = False,
) -> ModuleType:
    """Load the kernel revision pinned in ``kernels.lock`` (downloading it if needed)."""
    _check_user_agent(user_agent)
    lock = Path(lockfile) if lockfile is not None else _caller_lockfile(repo_id)
    trust = resolve_trust(repo_id, trust_remote_code)
    return _load(repo_id, backend=backend, trust=trust, lockfile=lock)


@translated
def install_kernel(
    repo_id: str,
    *,
    revision: str | None = None,
    version: int | None = None,
    backend: str | None = None,
    local_files_only: bool = False,
    user_agent: str | dict[str, Any] | None = None,
    trust_remote_code: bool | list[str] = False,
) -> Path:
    """Download the kernel's variant for this environment and return its folder.

    kernel-plugins fetches and checks the variant by loading it, so it is imported too.
    ``local_files_only=True`` works from the cache alone, for this call only (other
    threads and the process environment are not affected).
    """
    from .. import hub

    _check_user_agent(user_agent)
    with hub.offline() if local_files_only else nullcontext():
        module = get_kernel(
            repo_id,
            revision=revision,
            version=version,
            backend=backend,
            trust_remote_code=trust_remote_code,
        )
    return Path(module.__kernel_provenance__.path)


def _resolution(
    repo_id: str,
    revision: str | None,
    version: int | None,
    backend: str | None,
    trust_remote_code: bool | list[str] = False,
) -> Any:
    from ..errors import HubError
    from ..fetching import offer
    from ..loader import resolve_variants
    from ..sources import hub_source

    source = hub_source(repo_id, revision=revision, version=version)
    try:
        off = offer(source, trust_remote_code=resolve_trust(repo_id, trust_remote_code))
    except HubError as e:  # offline with nothing cached, or no Hub: as get_kernel does
        from .._warn import warn_user
        from ..detection import get_device
        from ..fallback import ReferencePolicy

        ref = ReferencePolicy().next_source(source, get_device(backend), e)
        warn_user(f"answering for {repo_id!r} from the bundled reference kernel ({ref.notes[0]})")
        off = offer(ref)
    return resolve_variants(off.variants, backend)


@translated
def get_kernel_variants(
    repo_id: str,
    *,
    revision: str | None = None,
    version: int | None = None,
    backend: str | None = None,
) -> list[VariantAccepted | VariantRejected]:
    """Every build variant of a Hub kernel, accepted ones first (best first), each
    :class:`VariantAccepted` or :class:`VariantRejected` with the reason."""
    need_version_or_revision(revision, version)
    resolution = _resolution(repo_id, revision, version, backend, True)
    out: list[VariantAccepted | VariantRejected] = []
    for d in resolution.decisions:
        name = VariantName(d.variant)
        out.append(VariantAccepted(name) if d.accepted else VariantRejected(name, d.reason or ""))
    return out


# ------------------------------------------------------------------- loaded kernels
@dataclass(frozen=True)
class LoadedKernel:
    """A kernel loaded in this process: ``metadata``, ``module`` and ``repo_info`` (Hub
    kernels only; None for local folders, lock files and bundled references)."""

    metadata: Metadata
    module: ModuleType
    repo_info: RepoInfo | None


def get_loaded_kernels() -> list[LoadedKernel]:
    """Every kernel variant loaded in this process (through kernel-plugins), in load order.

    ``metadata`` is the ``metadata.json`` that was verified and imported, kept in memory:
    the files on disk are not read again (they may have been edited or removed since).
    """
    import kernel_plugins

    out = []
    for prov in kernel_plugins.loaded_kernels():
        module = sys.modules.get(prov.module_name)
        if module is None or prov.metadata is None:
            continue
        info = (
            RepoInfo(prov.repo_id, prov.sha)
            if prov.source == "hub" and prov.sha is not None
            else None
        )
        out.append(LoadedKernel(Metadata(prov.metadata), module, info))
    return out


_KERNEL_DEPS: contextvars.ContextVar[dict[str, ModuleType] | None] = contextvars.ContextVar(
    "kernel_plugins_compat_kernel_deps", default=None
)


def get_kernel_dep(repo_id: str) -> ModuleType:
    """A kernel's dependency, for use by a kernel while it is being loaded.

    kernel-plugins does not load kernel-to-kernel dependencies yet, so outside such a
    load (always, today) this raises RuntimeError, as ``kernels`` does outside loading.
    """
    deps = _KERNEL_DEPS.get()
    if deps is None:
        raise RuntimeError("`get_kernel_dep` only works during kernel loading.")
    module = deps.get(repo_id)
    if module is None:
        raise RuntimeError(
            f"Dependency '{repo_id}' not found in kernel dependencies. Ensure the dependency "
            f"is added to `kernel-deps` in build.toml."
        )
    return module


# ------------------------------------------------------------------------- mapping
def _convert_repo(repo: object, where: str) -> KernelRepository:
    if isinstance(repo, KernelRepository):
        return repo
    raise TypeError(
        f"{where} must be a repository (LayerRepository, LocalLayerRepository, "
        f"LockedLayerRepository, FuncRepository...), got {type(repo).__name__}"
    )


def _convert_value(value: object, where: str) -> Any:
    if isinstance(value, Mapping):
        return {m: _convert_repo(r, f"{where}[{m}]") for m, r in value.items()}
    return _convert_repo(value, where)


def _convert_mapping(mapping: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """``kernels`` mapping (Device or str keys) -> kernel-plugins mapping."""
    out: dict[str, dict[str, Any]] = {}
    for layer, devices in mapping.items():
        if not isinstance(devices, Mapping):
            raise TypeError(f"mapping[{layer!r}] must be a dict of device -> repository")
        per_layer: dict[str, Any] = {}
        for key, value in devices.items():
            device = Device(type=key) if isinstance(key, str) else key
            if not isinstance(device, Device):
                raise TypeError(
                    f"mapping[{layer!r}] keys must be device type strings or Device, got {key!r}"
                )
            where = f"mapping[{layer!r}][{device.type!r}]"
            converted = _convert_value(value, where)
            if device.properties is None:
                entry = per_layer.setdefault(device.type, {})
                if isinstance(converted, KernelRepository):
                    converted = {Mode.FALLBACK: converted}
                entry.update(converted)
            else:
                entry = per_layer.setdefault(device.type, {})
                entry[device.properties.capability_range()] = converted
        out[layer] = per_layer
    return out


def register_kernel_mapping(mapping: Mapping[str, Any], inherit_mapping: bool = True) -> None:
    """Register layer name -> device (str or :class:`Device`) -> repository (or
    ``{Mode: repository}``) entries; ``inherit_mapping=False`` replaces the mapping."""
    _layers.register_kernel_mapping(_convert_mapping(mapping), inherit_mapping=inherit_mapping)


@contextmanager
def use_kernel_mapping(
    mapping: Mapping[str, Any], *, inherit_mapping: bool = True
) -> Iterator[None]:
    """Use ``mapping`` inside a ``with`` block (stacked on the current one unless
    ``inherit_mapping=False``)."""
    with _layers.use_kernel_mapping(_convert_mapping(mapping), inherit_mapping=inherit_mapping):
        yield


def use_kernelized_func(*args: Any) -> Any:
    """Attach marked functions to a module class so kernelize finds them (``_kernel_funcs``).

    A function not marked with :func:`use_kernel_forward_from_hub` raises ValueError.
    """
    from ..errors import LayerError

    try:
        return _layers.use_kernelized_func(*args)
    except LayerError as e:
        raise ValueError(str(e)) from e


def use_kernel_func_from_hub(func_name: str) -> Any:
    """Deprecated in ``kernels``: the same as :func:`use_kernel_forward_from_hub`."""
    log.warning(
        "use_kernel_func_from_hub is deprecated in kernels; use use_kernel_forward_from_hub."
    )
    return use_kernel_forward_from_hub(func_name)


def kernelize(
    model: Any,
    *,
    mode: Mode,
    device: str | Any | None = None,
    use_fallback: bool | KernelizeFallback = True,
) -> Any:
    """Replace the forward of marked layers by mapped kernels (see ``kernels.kernelize``).

    ``device`` defaults to the device of the model's parameters. ``use_fallback``:
    ``False`` or ``KernelizeFallback.NONE`` raises when no kernel fits a layer; anything
    else keeps the original forward then. A kernel that cannot be loaded on the device is
    skipped with a warning.
    """
    if mode == Mode.FALLBACK:
        raise ValueError("Mode.FALLBACK can only be used to register kernel mappings.")
    if isinstance(use_fallback, KernelizeFallback):
        keep = use_fallback != KernelizeFallback.NONE
    elif isinstance(use_fallback, bool):
        keep = use_fallback
    else:
        raise TypeError(f"use_fallback must be a bool or KernelizeFallback, got {use_fallback!r}")
    with as_kernels_errors("a mapped kernel repository"), kernels_advice():
        return _layers.kernelize(model, mode=mode, device=device, use_fallback=keep)


# ------------------------------------------------------------------------ benchmark
class Benchmark:
    """Base class for kernel benchmark scripts, as in ``kernels``.

    Subclasses define ``setup()`` and ``benchmark_<name>()`` methods (and optionally
    ``verify_<name>()`` returning a reference tensor compared with ``self.out``); the
    runner sets ``kernel`` and ``device``. :meth:`run` is a minimal runner: it calls each
    benchmark once after ``setup`` and checks it against its ``verify_`` reference.
    """

    seed: int | None = None
    device: str = "cpu"

    def __init__(self) -> None:
        self.kernel: Any = None
        self.out: Any = None

    def setup(self) -> None:
        """Create inputs (override)."""

    def run(self, kernel: ModuleType, device: str = "cpu") -> dict[str, bool | None]:
        """Run every ``benchmark_*`` once on ``device``; True/False per verified result,
        None where there is no ``verify_*``."""
        import torch

        self.kernel, self.device = kernel, device
        results: dict[str, bool | None] = {}
        for name, method in inspect.getmembers(self, inspect.ismethod):
            if not name.startswith("benchmark_"):
                continue
            if self.seed is not None:
                torch.manual_seed(self.seed)
            self.setup()
            method()
            verify = getattr(self, "verify_" + name[len("benchmark_"):], None)
            results[name] = None if verify is None else bool(torch.allclose(self.out, verify()))
        return results
