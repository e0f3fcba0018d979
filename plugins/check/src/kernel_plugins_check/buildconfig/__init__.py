"""``build.toml`` of a kernel source repository: pydantic models and a validator.

Kernel builders read ``build.toml`` to compile a kernel; kernel-plugins reads it only to
check a repository before it is published (``kernel-plugins check``). Two formats exist:

- **edition 5** (current): ``[general]`` has ``edition = 5`` and requires ``name``,
  ``version``, ``license`` and ``backends``; exactly one framework table (``[torch]``,
  ``[torch-noarch]`` or ``[tvm-ffi]``); ``[torch.stable-abi]`` may map backends to
  versions.
- **legacy** files without ``edition`` (the older v3 / v4 shapes): still read, with a
  note; ``version`` and ``license`` are optional there.

Keys are kebab-case. Unknown keys are refused with their location
(``general.python_depends``: "keys are kebab-case, write python-depends"). Backend names
(``general.backends``, ``kernel.<name>.backend``, ``[general.<backend>]`` tables and
``[torch.stable-abi]`` keys) are checked against the backends this installation knows:
the installed ones (built-in and plugins), the known plugin names
(:data:`kernel_plugins.known_plugins.KNOWN_PLUGINS`) and builder aliases such as ``cann``
(Ascend, served by the ``npu`` backend). So a repository that targets MLU or MUSA
validates without any change to the core.

:func:`validate_build_data` returns every issue (for ``check``);
:func:`parse_build_toml` / :func:`read_build_toml` raise one
:class:`~kernel_plugins.errors.BuildConfigError` listing them.

The parts, one job each: ``_toml`` (TOML text -> dict), ``_models`` (the tables and the
result types), ``_editions`` (edition 5 versus legacy v3 / v4), ``_rules`` (backend names
and cross-table rules), ``_issues`` (pydantic errors -> issues with a fix) and
``_validate`` (all of it together).
"""

from __future__ import annotations

from ._models import (
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
    TvmFfi,
    canonical_backend,
    known_backends,
)
from ._toml import MAX_BUILD_TOML_BYTES, loads_toml
from ._validate import parse_build_toml, read_build_toml, validate_build_data

__all__ = [
    "CURRENT_EDITION",
    "MAX_BUILD_TOML_BYTES",
    "KERNEL_BACKEND_KEYS",
    "BuildConfig",
    "General",
    "BackendGeneral",
    "CudaGeneral",
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
