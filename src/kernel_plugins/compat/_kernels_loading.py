"""The loading half of the ``kernels`` 0.19.1 API (see :mod:`.kernels`): get, has, install,
locked and local kernels, variants and the record of loaded kernels."""

from __future__ import annotations

import os
import sys
from contextlib import nullcontext
from pathlib import Path
from types import ModuleType
from typing import Any

from .._record import record
from ..dependencies import get_kernel_dep as get_kernel_dep
from ._kernels_errors import kernels_advice, need_version_or_revision, translated
from ._kernels_repos import resolve_trust
from ._kernels_types import Metadata, RepoInfo, VariantAccepted, VariantName, VariantRejected


# ----------------------------------------------------------------------------- loading
def _check_user_agent(user_agent: object) -> None:
    if user_agent is not None and not isinstance(user_agent, (str, dict)):
        raise TypeError(f"user_agent must be a str, a dict or None, got {user_agent!r}")


def _load(target: str | Path, *, backend: str | None, trust: bool = False, **options: Any) -> ModuleType:
    import kernel_plugins

    with kernels_advice():
        return kernel_plugins.load(target, device=backend, trust_remote_code=trust, **options)


@translated
def get_kernel(repo_id: str, *, revision: str | None = None, version: int | None = None, backend: str | None = None,
               user_agent: str | dict[str, Any] | None = None, trust_remote_code: bool | list[str] = False,
               check_arch: bool = True) -> ModuleType:
    """Load a Hub kernel for ``backend`` (default: this machine's device) and return it.

    ``user_agent`` is accepted and not sent. ``check_arch=False`` loads the best variant
    without checking its ``backend.archs`` against the device (with a warning).
    """
    _check_user_agent(user_agent)
    need_version_or_revision(revision, version)
    trust = resolve_trust(repo_id, trust_remote_code)
    return _load(repo_id, backend=backend, trust=trust, revision=revision, version=version,
                 check_arch=check_arch)


@translated
def get_local_kernel(repo_path: Path, *, backend: str | None = None, trust_remote_code: bool | list[str] = False,
                     user_agent: str | dict[str, Any] | None = None, check_arch: bool = True) -> ModuleType:
    """Import a kernel from a local repository folder (one holding ``build/``); its
    dependencies come from ``LOCAL_KERNELS`` or the Hub (``trust_remote_code=True``: from
    any organisation). ``check_arch`` as for :func:`get_kernel`."""
    _check_user_agent(user_agent)
    return _load(Path(repo_path), backend=backend, trust=trust_remote_code is True, check_arch=check_arch)


@translated
def has_kernel(repo_id: str, *, revision: str | None = None, version: int | None = None, backend: str | None = None,
               trust_remote_code: bool | list[str] = False, check_arch: bool = True) -> bool:
    """Whether the Hub kernel has a build variant for this environment (with
    ``check_arch``, one whose ``backend.archs`` the device runs).

    Trust is checked first (an untrusted repository raises). Offline with nothing cached,
    or without the Hub, it answers like :func:`get_kernel` loads: for the bundled
    reference kernel (with a warning), else with the same error.
    """
    from ..errors import NoCompatibleVariantError

    need_version_or_revision(revision, version)
    try:
        resolution = _resolution(repo_id, revision, version, backend, trust_remote_code, check_arch)
    except NoCompatibleVariantError:
        return False
    return bool(resolution.accepted)


def _caller_lockfile(repo_id: str) -> os.PathLike[str]:
    """The calling code's ``kernels.lock`` (see :mod:`kernel_plugins.lock._discovery`)."""
    from ..lock import caller_file, find_lockfile

    return find_lockfile(caller_file(), what=repo_id)


@translated
def load_kernel(repo_id: str, *, lockfile: Path | None, backend: str | None = None,
                check_arch: bool = True) -> ModuleType:
    """Load a locked kernel (``kernels.lock``; None: the calling code's lock file);
    ``check_arch`` as for :func:`get_kernel`."""
    lock = lockfile if lockfile is not None else _caller_lockfile(repo_id)
    return _load(repo_id, backend=backend, lockfile=lock, check_arch=check_arch)


@translated
def get_locked_kernel(repo_id: str, *, lockfile: Path | None, backend: str | None = None,
                      user_agent: str | dict[str, Any] | None = None, trust_remote_code: bool | list[str] = False,
                      check_arch: bool = True) -> ModuleType:
    """Load the kernel revision pinned in ``kernels.lock`` (downloading it if needed);
    ``check_arch`` as for :func:`get_kernel`. ``backend`` is ours (kernels has none)."""
    _check_user_agent(user_agent)
    lock = lockfile if lockfile is not None else _caller_lockfile(repo_id)
    return _load(repo_id, backend=backend, trust=resolve_trust(repo_id, trust_remote_code), lockfile=lock,
                 check_arch=check_arch)


@translated
def install_kernel(repo_id: str, *, revision: str | None = None, version: int | None = None, backend: str | None = None,
                   local_files_only: bool = False, user_agent: str | dict[str, Any] | None = None,
                   trust_remote_code: bool | list[str] = False) -> Path:
    """Download the kernel's variant for this environment and return its folder.

    kernel-plugins fetches and checks the variant by loading it, so it is imported too.
    ``local_files_only=True`` works from the cache alone, for this call only (other
    threads and the process environment are not affected).
    """
    from .. import hub

    _check_user_agent(user_agent)
    with hub.offline() if local_files_only else nullcontext():
        module = get_kernel(repo_id, revision=revision, version=version, backend=backend,
                            trust_remote_code=trust_remote_code)
    return Path(module.__kernel_provenance__.path)


def _resolution(repo_id: str, revision: str | None, version: int | None, backend: str | None,
                trust_remote_code: bool | list[str] = False, check_arch: bool = False) -> Any:
    from ..detection import get_device, system_info
    from ..errors import HubError
    from ..fetching import offer
    from ..resolving import resolve_for
    from ..sources import HUB_PREFIX, find
    from ..verification import archs_reader

    source = find(HUB_PREFIX + repo_id, revision=revision, version=version)  # LOCAL_KERNELS too
    try:
        off = offer(source, trust_remote_code=resolve_trust(repo_id, trust_remote_code))
    except HubError as e:  # offline with nothing cached, or no Hub: as get_kernel does
        from .._warn import warn_user
        from ..fallback import ReferencePolicy

        ref = ReferencePolicy().next_source(source, get_device(backend), e)
        warn_user(f"answering for {repo_id!r} from the bundled reference kernel ({ref.notes[0]})")
        off = offer(ref)
    info = get_device(backend)
    return resolve_for(off.variants, info, system_info(),
                       archs_of=archs_reader(off, info.backend, {}) if check_arch else None)


@translated
def get_kernel_variants(repo_id: str, *, revision: str | None = None, version: int | None = None,
                        backend: str | None = None) -> list[VariantAccepted | VariantRejected]:
    """Every build variant of a Hub kernel, accepted ones first (best first), each
    :class:`VariantAccepted` or :class:`VariantRejected` with the reason."""
    need_version_or_revision(revision, version)
    resolution = _resolution(repo_id, revision, version, backend, True)
    return [VariantAccepted(VariantName(d.variant)) if d.accepted
            else VariantRejected(VariantName(d.variant), d.reason or "") for d in resolution.decisions]


# ------------------------------------------------------------------- loaded kernels
@record
class LoadedKernel:
    """A kernel loaded in this process: ``metadata``, ``module`` and ``repo_info`` (Hub
    kernels, locked ones too; None for local folders and bundled references)."""

    metadata: Metadata
    module: ModuleType
    repo_info: RepoInfo | None


def get_loaded_kernels() -> list[LoadedKernel]:
    """Every kernel variant loaded in this process (through kernel-plugins), once each (a
    module loaded again, say by a lock file after a version, is listed as first loaded).

    ``metadata`` is the ``metadata.json`` that was verified and imported, kept in memory:
    the files on disk are not read again (they may have been edited or removed since).
    """
    import kernel_plugins

    out: dict[str, LoadedKernel] = {}
    for prov in kernel_plugins.loaded_kernels():
        module = sys.modules.get(prov.module_name)
        if module is None or prov.metadata is None or prov.module_name in out:
            continue
        info = RepoInfo(prov.repo_id, prov.sha) if prov.source == "hub" and prov.sha is not None else None
        out[prov.module_name] = LoadedKernel(Metadata(prov.metadata), module, info)
    return list(out.values())
