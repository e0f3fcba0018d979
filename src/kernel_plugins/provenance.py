"""What a load hands to a backend and what it leaves behind: :class:`KernelLoad` (the
argument of the ``load_kernel`` hook) and :class:`Provenance` (``__kernel_provenance__``).

Plain values below the pipeline, so the plugin contract (:mod:`.hookspecs`) can name them
without importing any loading code.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from ._record import field, record

if TYPE_CHECKING:
    from .metadata import KernelMetadata

__all__ = ["KernelLoad", "Provenance"]


@record
class KernelLoad:
    """What is about to be imported (handed to the ``load_kernel`` hook).

    Attributes:
        repo_id: ``org/name`` or the local path the kernel came from.
        variant: the variant name. path: the variant folder.
        metadata: validated ``metadata.json``.
        module_name: the name to import under: ``kernel_plugins._kernels.<id>``.
    """

    repo_id: str
    variant: str
    path: Path
    metadata: KernelMetadata
    module_name: str


@record
class Provenance:
    """Where a loaded kernel came from (``module.__kernel_provenance__``).

    Attributes:
        source: ``local``, ``local-kernels``, ``hub``, ``plugin`` or ``reference``.
        repo_id: ``org/name`` (or the path for local sources). revision: what was asked.
        sha: the resolved commit sha (Hub), else None. variant: the variant loaded.
        backend, device_type: who it was loaded for. emulated: the device is emulated.
        path: the variant folder. module_name: ``sys.modules`` key.
        notes: remarks such as "reference fallback: no variant for mlu".
        signer: who signed its ``metadata.json`` (``identity (issuer)``), None when unsigned
            or not checked (see docs/signatures.md).
        dependencies: the provenance of each kernel its ``kernel-depends`` loaded for it.
        metadata: the ``metadata.json`` verified and imported (not in :meth:`to_dict`).
        op_checks: layer name -> the result of checking its ``torch.compile`` claim with
            ``torch.library.opcheck`` (``kernelize(..., check_ops=True)``), when asked.
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
    signer: str | None = None
    dependencies: tuple[Provenance, ...] = field(default=())
    metadata: KernelMetadata | None = field(default=None, compare=False, repr=False)
    op_checks: dict[str, str] = field(default_factory=dict, compare=False)

    def to_dict(self) -> dict[str, object]:
        """A JSON-ready dict (without ``metadata``)."""
        out = {k: (list(v) if isinstance(v, tuple) else v) for k, v in self.__dict__.items() if k != "metadata"}
        return {**out, "dependencies": [d.to_dict() for d in self.dependencies]}
