"""``build.toml`` of a kernel source repository: pydantic models and a validator.

Kernel builders read ``build.toml`` to compile a kernel; kernel-plugins reads it only to
check a repository before it is published (``kernel-plugins check``). It accepts what
kernels 0.19.1's own parser (kernel-builder's) accepts, and refuses what it refuses, with a
message that names the key and the fix:

- **edition 6** (:data:`CURRENT_EDITION`): ``[general]`` needs ``name``, ``version``,
  ``license`` and ``backends`` and may say ``build-layout`` (``files`` or ``zip``);
  exactly one framework table (``[torch]``, ``[torch-noarch]``, ``[tvm-ffi]``, or
  ``[mlx-noarch]`` for metal alone); each ``[kernel.<name>]`` names its kind with
  ``language`` (:data:`KERNEL_LANGUAGES`: ``cpp-cuda``, ``rust-cutile``...), with the keys
  of that kind; a Rust kernel needs ``[tvm-ffi]``.
- **edition 5**: the same, less what edition 6 added; kernels are for a ``backend``.
  ``kernel-depends`` in ``[general]`` and ``[general.cuda|neuron|xpu]``,
  ``[general.tpu]``, and a ``[torch.stable-abi]`` table mapping backends to versions, in
  both. kernels upgrades it to edition 6 in memory (read with a note).
- **legacy** files without ``edition``: the v4 shape, which kernels upgrades in memory
  (read with a note; the same keys minus what only the editions have). The older v3 shape
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
result types), ``_editions`` (editions 6 and 5 versus legacy), ``_rules`` (backend names and
cross-table rules), ``_issues`` (pydantic errors -> issues with a fix) and ``_validate``
(all of it together).
"""

from __future__ import annotations

from ._models import (
    BUILDER_BACKENDS,
    CURRENT_EDITION,
    EDITIONS,
    KERNEL_BACKEND_KEYS,
    KERNEL_LANGUAGES,
    BackendGeneral,
    BuildConfig,
    BuildConfig6,
    BuildConfigIssue,
    BuildToml,
    CudaGeneral,
    General,
    General6,
    Hub,
    Kernel,
    Kernel6,
    KernelDependency,
    MlxNoarch,
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
    "EDITIONS",
    "KERNEL_LANGUAGES",
    "MAX_BUILD_TOML_BYTES",
    "KERNEL_BACKEND_KEYS",
    "BuildConfig",
    "BuildConfig6",
    "General6",
    "Kernel6",
    "MlxNoarch",
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
