"""Import a verified variant as the Python package ``kernel_plugins._kernels.<id>``.

The package is imported from the bytes that were verified (:mod:`.verification`), never from the files on disk
again: a finder placed first on ``sys.meta_path`` serves every module below the kernel's package from the snapshot,
and refuses any module the snapshot does not hold (a file added after verification never runs). Python sources are
compiled from memory, so no bytecode (``__pycache__``, ``*.pyc``, unchecked hash-based pycs included) is read or
written; native extension modules are loaded through the descriptor whose bytes were verified, or from their private
verified copy (see :mod:`kernel_plugins.integrity.snapshot`).

Module names: every kernel lives under the private namespace of :mod:`.registry`, so its ``id`` never meets a
top-level module name. Two builds of one kernel have different ids, so they load side by side; the identical build
loaded again (from another copy, say) is the same module; a different build claiming the same id is refused.

A failed import (any exception, ``SystemExit`` from kernel code included) leaves nothing in ``sys.modules`` and is
not remembered, so the next load raises again.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.util
import sys
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING

from ._warn import warn_user
from .device import BackendSpec
from .errors import KernelImportError, MetadataError, MissingDependencyError
from .integrity.archive import archive_view
from .metadata import KernelMetadata
from .provenance import KernelLoad, Provenance
from .registry import NAMESPACE, _Kernel, _kernel_of, _kernels, _lock, module_name, record_loaded
from .variants import UNIVERSAL

if TYPE_CHECKING:
    from .device import DeviceInfo
    from .integrity import SnapshotFile, VariantSnapshot
    from .verification import VerifiedVariant

__all__ = ["import_verified", "check_python_depends", "import_snapshot"]


def check_python_depends(metadata: KernelMetadata, spec: BackendSpec, *, where: str) -> None:
    """Check every ``python-depends`` name is known for the backend and installed (else
    :class:`MetadataError` / :class:`MissingDependencyError`, naming what to pip install)."""
    known = spec.known_python_depends()
    for name in metadata.python_depends:
        if (dep := known.get(name)) is None:
            raise MetadataError(f"{where}: python-depends names {name!r}, which is not a known dependency for "
                                f"backend '{spec.name}' (known: {', '.join(sorted(known)) or 'none'})")
        if dep.module is not None and importlib.util.find_spec(dep.module) is None:
            raise MissingDependencyError(f"kernel {metadata.name!r} ({where}) needs the Python package {dep.pip!r} "
                                         f"(import {dep.module!r}), which is not installed: pip install {dep.pip}")


def _package_base(snapshot: VariantSnapshot, metadata: KernelMetadata) -> str:
    """The package folder inside the variant: flat (``""``) or nested (``python_name``)."""
    if "__init__.py" in snapshot.files:
        return ""
    if f"{metadata.python_name}/__init__.py" in snapshot.files:
        return metadata.python_name
    root = snapshot.root
    raise KernelImportError(f"{root}: no kernel module found: expected {root / '__init__.py'} (flat layout) or "
                            f"{root / metadata.python_name / '__init__.py'} (nested layout)")


class _SourceLoader(importlib.abc.InspectLoader):
    """Runs one verified Python source (or an empty namespace package) from memory
    (``InspectLoader`` executes what :meth:`get_code` compiles, in a default module)."""

    def __init__(self, file: SnapshotFile | None, origin: str, package: bool) -> None:
        self._data = (file.data if file is not None else None) or b""
        self._origin, self._package = origin, package

    def get_source(self, fullname: str) -> str:
        """The verified source text."""
        return importlib.util.decode_source(self._data)

    def get_code(self, fullname: str):  # type: ignore[no-untyped-def]
        """Compile the verified source; nothing is cached as bytecode."""
        return compile(self._data, self._origin, "exec", dont_inherit=True)

    def is_package(self, fullname: str) -> bool:
        """Whether the module is a package."""
        return self._package

    def exec_module(self, module: ModuleType) -> None:
        """Execute the verified code in the module's namespace (with the kernel's builtins)."""
        kernel = _kernel_of(module.__name__)
        if kernel is not None and kernel.builtins is not None:
            module.__dict__["__builtins__"] = kernel.builtins
        exec(self.get_code(module.__name__), module.__dict__)  # noqa: S102 - the kernel's verified code


class _SnapshotFinder(importlib.abc.MetaPathFinder):
    """Serves the kernels' namespace and every module below a kernel from its snapshot."""

    def find_spec(self, fullname: str, path: Sequence[str] | None = None,
                  target: ModuleType | None = None) -> importlib.machinery.ModuleSpec | None:
        """A spec from the snapshot; ModuleNotFoundError for names the snapshot lacks."""
        if fullname == NAMESPACE:
            spec = importlib.machinery.ModuleSpec(fullname, _SourceLoader(None, f"<{NAMESPACE}>", True),
                                                  is_package=True)
            spec.submodule_search_locations = []
            return spec
        kernel = _kernel_of(fullname)
        return None if kernel is None else _spec(kernel, fullname)


_finder = _SnapshotFinder()


def _spec(kernel: _Kernel, fullname: str) -> importlib.machinery.ModuleSpec:
    snap = kernel.snapshot
    parts = fullname[len(kernel.name):].split(".")[1:]
    stem = "/".join(p for p in (kernel.base, *parts) if p)
    folder = snap.root / stem if stem else snap.root
    init = f"{stem}/__init__.py" if stem else "__init__.py"
    if init in snap.files:
        return _source_spec(fullname, snap.files[init], snap.files[init].path, folder)
    for suffix in importlib.machinery.EXTENSION_SUFFIXES:
        ext = snap.files.get(stem + suffix)
        if ext is not None and ext.private_path is not None:
            loader = importlib.machinery.ExtensionFileLoader(fullname, ext.private_path)
            spec = importlib.util.spec_from_loader(fullname, loader, origin=ext.private_path)
            assert spec is not None
            spec.has_location = True
            return spec
    if (source := snap.files.get(stem + ".py")) is not None:
        return _source_spec(fullname, source, source.path, None)
    if parts and any(rel.startswith(stem + "/") for rel in snap.files):
        return _source_spec(fullname, None, folder, folder)  # a folder without __init__.py
    raise ModuleNotFoundError(f"No module named {fullname!r} among the verified files of kernel {kernel.name!r} "
                              f"({snap.root}); files added after verification are never imported", name=fullname)


def _source_spec(fullname: str, file: SnapshotFile | None, origin: Path,
                 package: Path | None) -> importlib.machinery.ModuleSpec:
    loader = _SourceLoader(file, str(origin), package is not None)
    spec = importlib.machinery.ModuleSpec(fullname, loader, origin=str(origin), is_package=package is not None)
    if package is not None:
        spec.submodule_search_locations = [str(package)]
    spec.has_location = file is not None
    return spec


def _drop_modules(name: str) -> None:
    """Forget ``name`` and its submodules; cannot fail (the namespace's own attributes stay)."""
    gone = [sys.modules.pop(k) for k in [k for k in sys.modules if k == name or k.startswith(name + ".")]]
    attrs = getattr(sys.modules.get(NAMESPACE), "__dict__", {})
    if any(attrs.get(name.rpartition(".")[2]) is m for m in gone):
        del attrs[name.rpartition(".")[2]]


def import_snapshot(load: KernelLoad, snapshot: VariantSnapshot,
                    builtins: dict[str, object] | None = None) -> ModuleType:
    """Import the verified ``snapshot`` as package ``load.module_name`` (its modules run
    with ``builtins``, None: Python's).

    The identical build already imported under that name is returned as it is.
    :raises KernelImportError: another build holds the name, the name is outside the
        kernels' namespace, or the kernel's code raised anything while importing
        (``SystemExit`` included; nothing is left in ``sys.modules``)."""
    name = load.module_name
    if not name.startswith(NAMESPACE + ".") or "." in name[len(NAMESPACE) + 1:]:
        raise KernelImportError(f"cannot import {load.path} as {name!r}: kernels are imported as "
                                f"{NAMESPACE}.<id> only")
    key = snapshot.content_key()
    with _lock:
        kernel = _kernels.get(name)
        if kernel is not None and kernel.module is not None:
            if kernel.key == key:
                return kernel.module
            raise KernelImportError(f"cannot import {load.path} as {name!r}: a kernel of that name is already "
                                    f"loaded from {kernel.snapshot.root} with different files. Two different builds "
                                    "claim the same build id; remove one copy or rebuild with a unique id.")
        if load.metadata.build_layout == "zip":  # the verified archive's members, opened in memory
            snapshot = archive_view(snapshot, f"{load.metadata.id}.zip")
        kernel = _Kernel(name, snapshot, _package_base(snapshot, load.metadata), key, builtins)
        _kernels[name] = kernel
        if sys.meta_path[:1] != [_finder]:  # the finder goes first
            if _finder in sys.meta_path:
                sys.meta_path.remove(_finder)
            sys.meta_path.insert(0, _finder)
        try:
            module = importlib.import_module(name)
        except BaseException as e:
            del _kernels[name]
            _drop_modules(name)
            if isinstance(e, KeyboardInterrupt):
                raise
            how = " (the kernel's code called sys.exit)" if isinstance(e, SystemExit) else ""
            raise KernelImportError(f"importing kernel {load.metadata.name!r} variant {load.variant} from "
                                    f"{load.path} failed: {type(e).__name__}: {e}{how}. Nothing of it was kept; fix "
                                    "the kernel or load another variant.") from e
        kernel.module = module
        return module


def import_verified(verified: VerifiedVariant, device: DeviceInfo, *, dependencies: tuple[Provenance, ...] = (),
                    builtins: dict[str, object] | None = None) -> ModuleType:
    """The import step of loading: check ``python-depends``, give the device's backend its
    ``load_kernel`` say, import the verified snapshot (with ``builtins``), and record
    provenance (with that of the ``dependencies`` imported for it)."""
    from .plugins import get_manager

    fetched = verified.fetched
    source = fetched.offer.source
    path, variant, metadata = fetched.path, fetched.variant, verified.metadata
    spec = get_manager().record(device.backend).spec
    check_python_depends(metadata, spec, where=str(path / "metadata.json"))
    if metadata.is_dirty:
        warn_user(f"kernel {metadata.name!r} ({path}) was built from a dirty source tree; its code may "
                  "not match any published commit", UserWarning)
    if variant == UNIVERSAL:
        warn_user(f"{source.label}: the torch-universal variant is deprecated; publish noarch variants "
                  f"instead (torch-{device.backend} for this device, torch-<backend> for each backend "
                  "the code supports)", DeprecationWarning)
    load = KernelLoad(source.label, variant, path, metadata, module_name(metadata.id))
    module = get_manager().load_kernel(device, load) or import_snapshot(load, verified.snapshot, builtins)
    ref, notes = fetched.offer.ref, source.notes
    if fetched.offer.lock is not None:  # say which lock file chose the code, and how
        notes = (*notes, f"locked by {fetched.offer.lockfile}",
                 *(() if fetched.offer.lock.variants else ("the lock pins the commit only (no variant hashes)",)))
    revision = None if ref is None else f"locked:{ref.sha}" if fetched.offer.lock is not None else ref.requested
    record_loaded(module, Provenance(
        source.kind, source.label, variant, device.backend, device.device_type, device.emulated, str(path),
        module.__name__, revision, None if ref is None else ref.sha, notes, verified.signer, dependencies, metadata))
    return module
