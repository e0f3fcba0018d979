"""Kernel dependencies (``kernel-depends``): verify a load's whole tree for the device, then
import it; :func:`get_kernel_dep` while a kernel imports, also for code written for HF
``kernels``. See docs/loading.md (step "depend") and docs/compat-kernels.md.
"""

from __future__ import annotations

import builtins
import contextlib
import dataclasses
import importlib.util
import logging
import sys
from collections.abc import Mapping
from contextvars import ContextVar
from types import ModuleType
from typing import TYPE_CHECKING, Any

from ._record import record
from ._warn import warn_user
from .device import DeviceInfo, SystemInfo
from .errors import KernelDependencyError, KernelPluginsError, NoCompatibleVariantError
from .fetching import fetch, later_version, offer
from .importer import import_verified
from .metadata import KernelDepend, check_minver, walk_depends
from .registry import _lock
from .resolving import choose, device_arch
from .sources import HUB_PREFIX, KernelSource, find
from .verification import VerifiedVariant, archs_reader, verify

if TYPE_CHECKING:
    from .lock import Lockfile

__all__ = ["KernelTree", "verified_tree", "flatten", "import_tree", "get_kernel_dep"]


@record
class KernelTree:
    """A verified variant and the trees of its dependencies (by repo id)."""

    verified: VerifiedVariant
    deps: Mapping[str, KernelTree] = dataclasses.field(default_factory=dict)


def flatten(trees: Mapping[str, KernelTree]) -> list[KernelTree]:
    """Every tree of ``trees`` and below, dependencies first, each once."""
    out: list[KernelTree] = []
    for tree in trees.values():
        out += [n for n in (*flatten(tree.deps), tree) if all(n is not o for o in out)]
    return out


def verified_tree(source: KernelSource, info: DeviceInfo, system: SystemInfo, *, trust_remote_code: bool = False,
                  check_arch: bool = True) -> KernelTree:
    """``source`` and its dependencies, each offered, chosen, fetched and verified.

    :raises KernelPluginsError: the kernel's own error; :class:`KernelDependencyError`
        when a dependency cannot be loaded, or for a cycle (both name the chain)."""
    return _Walk(info, system, trust_remote_code, check_arch, source.lockfile).tree(source, (source.label,))


@record(frozen=False)
class _Walk:
    """One walk of a dependency tree: its settings and the kernels already met."""

    info: DeviceInfo
    system: SystemInfo
    trust: bool
    check_arch: bool
    lock: Lockfile | None
    seen: dict[KernelDepend, KernelTree] = dataclasses.field(default_factory=dict)

    def tree(self, source: KernelSource, path: tuple[object, ...]) -> KernelTree:
        """Offer, choose (the architecture step reads candidates' ``metadata.json`` alone),
        fetch and verify ``source``, then its dependencies: everything before the import."""
        off, info = offer(source, trust_remote_code=self.trust), self.info
        seen: dict[str, bytes] = {}
        archs_of = archs_reader(off, info.backend, seen) if self.check_arch else None
        try:
            best = choose(off.where, off.variants, info, self.system, kind=source.kind, archs_of=archs_of)
        except NoCompatibleVariantError as e:
            raise later_version(e, off, info, self.system) from None
        logging.getLogger("kernel_plugins").info("%s: variant %s of %s for %s", source.label, best, off.where, info.summary())
        verified = verify(fetch(off, best), metadata_bytes=seen.get(best))
        if not self.check_arch and (archs := verified.metadata.backend.archs):
            warn_user(f"{off.where} {best} is built for architectures {', '.join(archs[:8])}, not checked "
                      f"against the device's ({device_arch(info) or 'not reported'}) as check_arch=False: "
                      "if it does not support this device, the kernel may fail or crash the process")
        check_minver(verified.metadata, where=str(verified.fetched.path / "metadata.json"))
        return KernelTree(verified, {d.repo_id: walk_depends(d, self.dep, self.seen, path)
                                     for d in verified.metadata.kernel_depends})

    def dep(self, dep: KernelDepend, path: tuple[object, ...]) -> KernelTree:
        """The tree of ``dep``: from the Hub, never a folder; under a lock, its entry there."""
        source: KernelSource | None = None
        try:
            if self.lock is not None:
                self.lock.require(dep)
            source = find(HUB_PREFIX + dep.repo_id, device=self.info, revision=dep.revision,
                          version=dep.version, lockfile=self.lock)
            return self.tree(source, path)
        except KernelDependencyError:
            raise
        except KernelPluginsError as e:
            names = [getattr(p, "repo_id", p) for p in path[:-1]]
            via = f" (via {' -> '.join(map(str, names))})" if len(names) > 1 else ""
            looked = "" if source is None or source.kind != "hub" else (
                f" Looked for {dep.repo_id} in LOCAL_KERNELS (no entry), the installed backend plugins ("
                f"{source.notes[0] if source.notes else 'none ships it for ' + self.info.backend}), then the Hub (and "
                f"its download cache), which failed. To use a copy on this machine: LOCAL_KERNELS={dep.repo_id}=PATH "
                "(PATH: the kernel's folder, holding build/); to take it from the Hub, follow the advice above.")
            raise KernelDependencyError(f"{names[-1]}{via} depends on {dep} (kernel-depends), "
                                        f"which cannot be loaded: {type(e).__name__}: {e}{looked}") from e


def import_tree(tree: KernelTree, info: DeviceInfo) -> ModuleType:
    """Import the dependencies of ``tree``, then its kernel in their scope. A dependency that
    imported completely stays when anything later fails (its ``torch.library`` ops could not be
    registered again); a build already imported is shared, not imported again."""
    deps: dict[str, ModuleType] = {}
    for repo_id, sub in tree.deps.items():
        with _lock:  # no other load may import it between the question and the answer
            deps[repo_id] = import_tree(sub, info)
    own = {**builtins.__dict__, "__import__": _kernel_import} if deps else None
    with _Scope(deps):
        provs = tuple(m.__kernel_provenance__ for m in deps.values())  # type: ignore[attr-defined]
        return import_verified(tree.verified, info, dependencies=provs, builtins=own)


class _Scope:
    """``with _Scope(deps):`` import a kernel whose dependencies are ``deps`` (by repo id)."""

    def __init__(self, deps: dict[str, ModuleType]) -> None:
        self.deps = deps
        self._set: list[tuple[ContextVar[Any], Any]] = []

    def __enter__(self) -> None:
        self._set.append((_CURRENT, _CURRENT.set(self)))
        self.share()

    def share(self) -> None:
        """Give HF kernels' loading context the same dependencies, once it is imported."""
        for name in ("kernels.deps", "kernels._internals.deps"):  # kernels 0.17; 0.19
            var = getattr(sys.modules.get(name), "_KERNEL_DEPS", None)
            if isinstance(var, ContextVar) and all(v is not var for v, _ in self._set):
                self._set.append((var, var.set(dict(self.deps))))

    def __exit__(self, *exc: object) -> None:
        for var, token in reversed(self._set):
            with contextlib.suppress(ValueError):  # set in another context: not ours to reset
                var.reset(token)


_CURRENT: ContextVar[_Scope | None] = ContextVar("kernel_plugins_deps", default=None)


def get_kernel_dep(repo_id: str) -> ModuleType:
    """The module of the dependency ``repo_id`` (an entry of ``kernel-depends``, loaded
    for the same device), for a kernel's code while it is being imported.
    :raises KernelDependencyError: outside the import of a kernel, or not a dependency."""
    if (scope := _CURRENT.get()) is None:
        raise KernelDependencyError("`get_kernel_dep` only works during kernel loading: a kernel calls it while its "
                                    "code is imported by kernel_plugins.load, not afterwards")
    if repo_id not in scope.deps:
        raise KernelDependencyError(f"Dependency {repo_id!r} not found in kernel dependencies (kernel-depends names: "
                                    f"{', '.join(scope.deps) or 'none'}). Ensure the dependency is added to "
                                    "`kernel-depends` in build.toml.")
    return scope.deps[repo_id]


def _kernel_import(name: str, globals: Any = None, locals: Any = None,  # noqa: A002
                   fromlist: Any = (), level: int = 0) -> ModuleType:
    if level == 0 and name == "kernels" and "kernels" not in sys.modules \
            and importlib.util.find_spec("kernels") is None:
        return _KERNELS  # get_kernel_dep; the rest of the API once the compat module is imported
    module = builtins.__import__(name, globals, locals, fromlist, level)
    if level == 0 and name.partition(".")[0] == "kernels" and (scope := _CURRENT.get()) is not None:
        scope.share()
    return module


#: The rest of HF kernels' API offered to kernel code with get_kernel_dep: the compat module, which
#: sits above this one (it is built on loading), puts itself here when it is imported.
KERNELS_API: list[ModuleType] = []


def _rest_of_api(name: str) -> Any:
    if KERNELS_API:
        return getattr(KERNELS_API[0], name)
    if name.startswith("__"):
        raise AttributeError(name)
    raise KernelDependencyError(f"kernels.{name}: HF kernels is not installed, and kernel-plugins offers kernel code "
                                "get_kernel_dep, and the rest of the kernels API once kernel_plugins.compat.kernels is "
                                "imported: import it (in the kernel, or before loading it), or pip install kernels")


_KERNELS = ModuleType("kernels", "HF kernels' API for the code of a kernel (kernel_plugins.compat.kernels)")
_KERNELS.get_kernel_dep = get_kernel_dep  # type: ignore[attr-defined]
_KERNELS.__getattr__ = _rest_of_api  # type: ignore[method-assign]
