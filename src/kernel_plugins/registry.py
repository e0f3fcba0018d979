"""The record of the kernels this process imported, and the namespace they live in.

Every kernel is imported as ``kernel_plugins._kernels.<id>`` (:data:`NAMESPACE`), never at
top level: a kernel's ``id`` can never take the name of another module (``numpy`` on a
machine without numpy, say), and ``import <id>`` elsewhere never finds a kernel. The
namespace package has no files; the importer's finder serves it and everything below it.

:func:`loaded_kernels` lists the provenance of every load, in order.
"""

from __future__ import annotations

import threading
from types import ModuleType
from typing import TYPE_CHECKING

from ._record import record

if TYPE_CHECKING:
    from .integrity import VariantSnapshot
    from .provenance import Provenance

__all__ = ["NAMESPACE", "module_name", "record_loaded", "loaded_kernels"]

#: The package every kernel is imported under.
NAMESPACE = "kernel_plugins._kernels"


def module_name(kernel_id: str) -> str:
    """The module name of the kernel whose metadata ``id`` is ``kernel_id``."""
    return f"{NAMESPACE}.{kernel_id}"


@record(frozen=False)
class _Kernel:
    """A kernel package this process imported: its snapshot and where its code lives."""

    name: str
    snapshot: VariantSnapshot
    base: str  # the package folder inside the variant ("" flat, "<python_name>" nested)
    key: str
    builtins: dict[str, object] | None = None  # of its modules (None: Python's)
    module: ModuleType | None = None


_lock = threading.RLock()
_kernels: dict[str, _Kernel] = {}  # full module name -> kernel
_loaded: list[Provenance] = []


def _kernel_of(fullname: str) -> _Kernel | None:
    """The kernel serving module ``fullname`` (``NAMESPACE.<id>[.sub...]``), or None."""
    if not fullname.startswith(NAMESPACE + "."):
        return None
    top = fullname[: len(NAMESPACE) + 1] + fullname[len(NAMESPACE) + 1:].partition(".")[0]
    return _kernels.get(top)  # no lock: a kernel may import in threads


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
