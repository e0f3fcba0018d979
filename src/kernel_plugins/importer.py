"""Import a resolved variant folder as a Python package under its metadata ``id``.

Two builds of one kernel have different ids, so they load side by side. Imports
are cached per variant path; a failed import leaves nothing in ``sys.modules``.
Relative imports inside the kernel work because the variant is imported as a
package.
"""

from __future__ import annotations

import importlib.util
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType

from .device import BackendSpec, PyDepend
from .errors import KernelImportError, MetadataError, MissingDependencyError
from .metadata import KernelMetadata

__all__ = [
    "KernelLoad",
    "Provenance",
    "GENERIC_PYTHON_DEPENDS",
    "package_dir",
    "check_python_depends",
    "import_variant",
    "loaded_kernels",
    "record_loaded",
]

#: ``python-depends`` names every backend may use.
GENERIC_PYTHON_DEPENDS: dict[str, PyDepend] = {
    "einops": PyDepend("einops", "einops"),
    "numpy": PyDepend("numpy", "numpy"),
    "triton": PyDepend("triton", "triton"),
}


@dataclass(frozen=True)
class KernelLoad:
    """What is about to be imported (handed to the ``load_kernel`` hook).

    Attributes:
        repo_id: ``org/name`` or the local path the kernel came from.
        variant: the variant name. path: the variant folder.
        metadata: validated ``metadata.json``. module_name: the name to import under.
    """

    repo_id: str
    variant: str
    path: Path
    metadata: KernelMetadata
    module_name: str


@dataclass(frozen=True)
class Provenance:
    """Where a loaded kernel came from (``module.__kernel_provenance__``).

    Attributes:
        source: ``local``, ``local-kernels``, ``hub``, ``plugin`` or ``reference``.
        repo_id: ``org/name`` (or the path for local sources). revision: what was asked.
        sha: the resolved commit sha (Hub), else None. variant: the variant loaded.
        backend, device_type: who it was loaded for. emulated: the device is emulated.
        path: the variant folder. module_name: ``sys.modules`` key.
        notes: remarks such as "reference fallback: no variant for mlu".
    """

    source: str
    repo_id: str
    variant: str
    backend: str
    device_type: str
    emulated: bool
    path: str
    module_name: str
    revision: str | None = None
    sha: str | None = None
    notes: tuple[str, ...] = field(default=())

    def to_dict(self) -> dict[str, object]:
        """A JSON-ready dict."""
        return {k: (list(v) if isinstance(v, tuple) else v) for k, v in self.__dict__.items()}


_lock = threading.RLock()
_by_path: dict[str, ModuleType] = {}
_loaded: list[Provenance] = []


def package_dir(variant_dir: Path, metadata: KernelMetadata) -> Path:
    """The folder holding the kernel's ``__init__.py``: flat or nested layout."""
    if (variant_dir / "__init__.py").is_file():
        return variant_dir
    nested = variant_dir / metadata.python_name
    if (nested / "__init__.py").is_file():
        return nested
    raise KernelImportError(
        f"{variant_dir}: no kernel module found: expected {variant_dir / '__init__.py'} (flat "
        f"layout) or {nested / '__init__.py'} (nested layout)"
    )


def check_python_depends(metadata: KernelMetadata, spec: BackendSpec, *, where: str) -> None:
    """Check every ``python-depends`` name is known for the backend and importable."""
    known = {**GENERIC_PYTHON_DEPENDS, **spec.python_depends}
    for name in metadata.python_depends:
        dep = known.get(name)
        if dep is None:
            raise MetadataError(
                f"{where}: python-depends names {name!r}, which is not a known dependency for "
                f"backend '{spec.name}' (known: {', '.join(sorted(known)) or 'none'})"
            )
        if importlib.util.find_spec(dep.module) is None:
            raise MissingDependencyError(
                f"kernel {metadata.name!r} ({where}) needs the Python package {dep.pip!r} "
                f"(import {dep.module!r}), which is not installed: pip install {dep.pip}"
            )


def _drop_modules(name: str) -> None:
    for key in [k for k in sys.modules if k == name or k.startswith(name + ".")]:
        del sys.modules[key]


def import_variant(load: KernelLoad) -> ModuleType:
    """Import ``load.path`` as package ``load.module_name`` (cached per path)."""
    pkg = package_dir(load.path, load.metadata)
    key = str(pkg.resolve())
    with _lock:
        cached = _by_path.get(key)
        if cached is not None:
            return cached
        existing = sys.modules.get(load.module_name)
        if existing is not None and _same_files(pkg, getattr(existing, "__file__", None)):
            # the identical build from another copy (another cache, say): reuse it
            _by_path[key] = existing
            return existing
        if existing is not None:
            raise KernelImportError(
                f"cannot import {load.path} as {load.module_name!r}: a module of that name is "
                f"already loaded from {getattr(existing, '__file__', '?')}. Two different files "
                "claim the same build id; remove one copy or rebuild with a unique id."
            )
        spec = importlib.util.spec_from_file_location(
            load.module_name, pkg / "__init__.py", submodule_search_locations=[str(pkg)]
        )
        if spec is None or spec.loader is None:  # pragma: no cover - defensive
            raise KernelImportError(f"cannot create an import spec for {pkg}")
        module = importlib.util.module_from_spec(spec)
        sys.modules[load.module_name] = module
        try:
            spec.loader.exec_module(module)
        except Exception as e:
            _drop_modules(load.module_name)
            raise KernelImportError(
                f"importing kernel {load.metadata.name!r} variant {load.variant} from {pkg} "
                f"failed: {type(e).__name__}: {e}"
            ) from e
        _by_path[key] = module
        return module


def _files(root: Path) -> dict[str, bytes]:
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc"
    }


def _same_files(pkg: Path, other_init: str | None) -> bool:
    """Whether the package at ``pkg`` has exactly the files of the one at ``other_init``."""
    if not other_init:
        return False
    other = Path(other_init).parent
    try:
        return _files(pkg) == _files(other)
    except OSError:
        return False


def cached_module(path: Path) -> ModuleType | None:
    """The module already imported from a variant folder, or None."""
    with _lock:
        for p in (path, path / "__init__.py"):
            mod = _by_path.get(str(p.resolve()))
            if mod is not None:
                return mod
        return None


def record_loaded(module: ModuleType, provenance: Provenance) -> None:
    """Attach provenance to ``module`` and remember it for :func:`loaded_kernels`."""
    try:
        module.__kernel_provenance__ = provenance  # type: ignore[attr-defined]
    except (AttributeError, TypeError):  # pragma: no cover - exotic module objects
        pass
    with _lock:
        if provenance not in _loaded:
            _loaded.append(provenance)


def loaded_kernels() -> list[Provenance]:
    """Provenance of every kernel this process loaded, in load order."""
    with _lock:
        return list(_loaded)
