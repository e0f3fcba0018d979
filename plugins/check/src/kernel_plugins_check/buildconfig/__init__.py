"""``build.toml`` of a kernel source repository: pydantic models and a validator.

Kernel builders read ``build.toml`` to compile a kernel; kernel-plugins reads it only to
check a repository before it is published (``kernel-plugins check``). It accepts what
kernels 0.17.2's own parser (kernel-builder's) accepts, and refuses what it refuses, with a
message that names the key and the fix:

- **edition 5** (the only edition kernel-builder knows; any other ``edition`` is refused):
  ``[general]`` needs ``name``, ``version``, ``license`` and ``backends``; exactly one
  framework table (``[torch]``, ``[torch-noarch]`` or ``[tvm-ffi]``); ``kernel-depends``
  in ``[general]`` and ``[general.cuda|neuron|xpu]``, ``[general.tpu]``, and a
  ``[torch.stable-abi]`` table mapping backends to versions.
- **legacy** files without ``edition``: the v4 shape, which kernels upgrades in memory
  (read with a note; the same keys minus what only edition 5 has). The older v3 shape
  (no ``version``, ``license`` or framework table) is refused, as kernels refuses it.

Keys are kebab-case (``[torch-noarch]``'s ``cuda_capabilities`` and ``rocm_archs`` are
spelled with ``_``, as kernel-builder spells them). Backend names are kernel-builder's
(:data:`BUILDER_BACKENDS`; ``npu`` gets "write 'cann'"); a kernel-plugins backend that
kernel-builder does not know at all (``mlu``, ``musa``) is accepted with a note, so such a
repository still validates. Beyond kernels' parser, ``check`` refuses what fails later: a
``kernel-depends`` or ``hub`` repository id that is not ``org/name``, an empty revision,
an empty or repeated backend list, a kernel whose backend ``general.backends`` lacks,
``[kernel.*]`` tables in a ``[torch-noarch]`` kernel, ``python-depends`` names not known
for their backend (:func:`~._rules.python_depends_known`).

:func:`validate_build_data` returns every issue (for ``check``);
:func:`parse_build_toml` / :func:`read_build_toml` raise one
:class:`~kernel_plugins.errors.BuildConfigError` listing them.

The parts, one job each: ``_toml`` (TOML text -> dict), ``_models`` (the tables and the
result types), ``_editions`` (edition 5 versus legacy), ``_rules`` (backend names and
cross-table rules), ``_issues`` (pydantic errors -> issues with a fix) and ``_validate``
(all of it together).
"""

from __future__ import annotations

from ._models import (
    BUILDER_BACKENDS,
    CURRENT_EDITION,
    KERNEL_BACKEND_KEYS,
    BackendGeneral,
    BuildConfig,
    BuildConfigIssue,
    BuildToml,
    CudaGeneral,
    General,
    Hub,
    Kernel,
    KernelDependency,
    Torch,
    TorchNoarch,
    TpuGeneral,
    TvmFfi,
    canonical_backend,
    known_backends,
)
from ._toml import MAX_BUILD_TOML_BYTES, loads_toml
from ._validate import parse_build_toml, read_build_toml, validate_build_data

__all__ = [
    "BUILDER_BACKENDS",
    "CURRENT_EDITION",
    "MAX_BUILD_TOML_BYTES",
    "KERNEL_BACKEND_KEYS",
    "BuildConfig",
    "General",
    "BackendGeneral",
    "CudaGeneral",
    "TpuGeneral",
    "Hub",
    "KernelDependency",
    "Torch",
    "TorchNoarch",
    "TvmFfi",
    "Kernel",
    "BuildToml",
    "BuildConfigIssue",
    "known_backends",
    "canonical_backend",
    "loads_toml",
    "validate_build_data",
    "parse_build_toml",
    "read_build_toml",
]
