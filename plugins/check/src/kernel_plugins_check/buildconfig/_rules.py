"""Rules that span keys or tables, checked on the raw data before the models run.

Backend names (``general.backends``, ``[torch.stable-abi]`` keys, ``kernel.<name>.backend``)
are kernel-builder's, or those of a kernel-plugins backend that kernel-builder does not know
(``mlu``: accepted, with a note); a backend is listed once; a kernel is for a backend
kernel-builder compiles, one of ``general.backends``, and uses only its own backend's keys
(edition 6: its ``language``'s keys, and a Rust kernel needs ``[tvm-ffi]``); there is
exactly one framework table (``[mlx-noarch]`` from edition 6, for metal only), and a
``[torch-noarch]`` or ``[mlx-noarch]`` kernel has no ``[kernel.*]`` tables. ``python-depends`` names are known to this installation: the general
ones in ``[general]``, those of the backend in ``[general.<backend>]``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ._issues import _fmt_loc, _short
from ._models import (
    BUILDER_BACKENDS,
    KERNEL_BACKEND_KEYS,
    KERNEL_LANGUAGES,
    BuildConfigIssue,
    builder_spelling,
    canonical_backend,
    plugin_only,
)


def _backend_issue(key: str, name: object, known: Mapping[str, str]) -> BuildConfigIssue | None:
    if name in BUILDER_BACKENDS or plugin_only(name, known):
        return None
    spelling = builder_spelling(name) if isinstance(name, str) else None
    if spelling:
        return BuildConfigIssue(
            key, f"{name!r} is kernel-plugins' name of a backend that kernel-builder calls "
            f"{spelling!r}", f"write {spelling!r}",
        )
    others = sorted(n for n in known if plugin_only(n, known))
    return BuildConfigIssue(
        key,
        f"unknown backend {_short(name)}",
        f"use one of {', '.join(BUILDER_BACKENDS)} (kernel-builder's backends)"
        + (f" or {', '.join(others)} (kernel-plugins backends)" if others else ""),
    )


def _semantic_issues(
    data: Mapping[str, Any], known: Mapping[str, str], edition: int | None = None
) -> list[BuildConfigIssue]:
    """Backend names, backend-specific kernel keys and cross-table rules (on raw data)."""
    issues: list[BuildConfigIssue] = []
    general = data.get("general")
    general = general if isinstance(general, Mapping) else {}
    backends = general.get("backends")
    declared: set[str] = set()
    if isinstance(backends, list):
        for i, b in enumerate(backends):
            issue = _backend_issue(f"general.backends[{i}]", b, known)
            if issue:
                issues.append(issue)
            elif b in declared:
                issues.append(BuildConfigIssue(
                    f"general.backends[{i}]", f"backend {b!r} is listed twice",
                    "list each backend once",
                ))
            if isinstance(b, str):
                declared.add(b)
    torch = data.get("torch")
    if isinstance(torch, Mapping) and isinstance(torch.get("stable-abi"), Mapping):
        for b in torch["stable-abi"]:
            issue = _backend_issue(_fmt_loc(("torch", "stable-abi", b)), b, known)
            if issue:
                issues.append(issue)
    kernels = data.get("kernel")
    if isinstance(kernels, Mapping):
        for kname, table in kernels.items():
            if edition == 6 and isinstance(table, Mapping):
                issues += _kernel6_issues(kname, table, declared, "tvm-ffi" in data)
            elif isinstance(table, Mapping) and isinstance(table.get("backend"), str):
                issues += _kernel_issues(kname, table, declared, known)
    frameworks = [t for t in ("torch", "torch-noarch", "tvm-ffi", "mlx-noarch") if t in data
                  and (t != "mlx-noarch" or edition == 6)]
    if "mlx-noarch" in frameworks and isinstance(backends, list):
        issues += [BuildConfigIssue(
            f"general.backends[{i}]", f"[mlx-noarch] kernels are for the metal backend only, got "
            f"{_short(b)}", "list only \"metal\" in general.backends, or use [torch-noarch]",
        ) for i, b in enumerate(backends) if b != "metal"]
    if not frameworks:
        legacy = " (a legacy file without one is in the v3 format, which kernel-builder no " \
            "longer reads)" if "edition" not in general else ""
        issues.append(BuildConfigIssue(
            "", "no framework table",
            "add [torch] (compiled kernels), [torch-noarch] (pure Python / Triton)"
            f"{', [tvm-ffi] or [mlx-noarch] (MLX, metal only)' if edition == 6 else ' or [tvm-ffi]'}"
            f"{legacy}",
        ))
    if len(frameworks) > 1:
        issues.append(BuildConfigIssue(
            "", f"more than one framework table: {', '.join(f'[{t}]' for t in frameworks)}",
            "keep exactly one of [torch], [torch-noarch], [tvm-ffi] and [mlx-noarch] (edition 6)",
        ))
    noarch = next((t for t in ("torch-noarch", "mlx-noarch") if t in frameworks), None)
    if noarch and isinstance(kernels, Mapping) and kernels:
        issues.append(BuildConfigIssue(
            "kernel",
            f"a [{noarch}] kernel has no compiled code, but [kernel.*] tables are present",
            "remove the [kernel.*] tables, or use [torch] for a compiled kernel",
        ))
    return issues


def _kernel6_issues(
    kname: str, table: Mapping[str, Any], declared: set[str], tvm_ffi: bool
) -> list[BuildConfigIssue]:
    """An edition-6 kernel: built for a declared backend; a Rust kernel needs [tvm-ffi]."""
    language = table.get("language")
    if not isinstance(language, str) or language not in KERNEL_LANGUAGES:
        return []  # the model names the kinds
    backend, key = KERNEL_LANGUAGES[language], _fmt_loc(("kernel", kname, "language"))
    issues = []
    if declared and backend not in declared:
        issues.append(BuildConfigIssue(
            key, f"kernel {kname!r} is a {language} kernel, for backend {backend!r}, which "
            "general.backends does not list",
            f"add {backend!r} to general.backends or remove [kernel.{kname}]",
        ))
    if language.startswith("rust-") and not tvm_ffi:
        issues.append(BuildConfigIssue(
            key, f"kernel {kname!r} is a Rust kernel; Rust kernels are built with tvm-ffi",
            "use a [tvm-ffi] framework table instead of [torch]",
        ))
    return issues


def _kernel_issues(
    kname: str, table: Mapping[str, Any], declared: set[str], known: Mapping[str, str]
) -> list[BuildConfigIssue]:
    backend = table["backend"]
    bkey = _fmt_loc(("kernel", kname, "backend"))
    issue = _backend_issue(bkey, backend, known)
    if issue:
        return [issue]
    if backend not in KERNEL_BACKEND_KEYS and not plugin_only(backend, known):
        return [BuildConfigIssue(
            bkey, f"kernel-builder compiles no {backend} kernels (only "
            f"{', '.join(KERNEL_BACKEND_KEYS)})",
            f"remove [kernel.{kname}]: a {backend} kernel is Python code, built from "
            "[torch-noarch]",
        )]
    issues = []
    if declared and backend not in declared:
        issues.append(BuildConfigIssue(
            bkey,
            f"kernel {kname!r} is built for backend {backend!r}, which general.backends "
            "does not list",
            f"add {backend!r} to general.backends or remove [kernel.{kname}]",
        ))
    for owner, keys in KERNEL_BACKEND_KEYS.items():
        for k in keys:
            if owner != backend and k in table:
                issues.append(BuildConfigIssue(
                    _fmt_loc(("kernel", kname, k)),
                    f"key '{k}' is only for {owner} kernels; this kernel's backend is "
                    f"{backend!r}",
                    f"remove '{k}' or set backend = \"{owner}\"",
                ))
    return issues



def python_depends_known(
    backends: Mapping[str, Any], backend: str | None
) -> tuple[Mapping[str, Any], str | None]:
    """The ``python-depends`` names known for ``backend`` (None: the general ones) among the
    installed ``backends``, and why they are only the general ones when its plugin is not
    installed (None when it is)."""
    from kernel_plugins.device import GENERAL_PYTHON_DEPENDS
    from kernel_plugins.known_plugins import INSTALL_HINTS

    rec = backends.get(backend) if backend else None
    if rec is not None:
        return rec.spec.known_python_depends(), None
    hint = INSTALL_HINTS.get(backend) if backend else None
    why = f"backend {backend!r} is not installed" + (f" ({hint})" if hint else "")
    return GENERAL_PYTHON_DEPENDS, why if backend else None


def _python_depends_issues(
    general: Mapping[str, Any], known: Mapping[str, str]
) -> tuple[list[BuildConfigIssue], list[str]]:
    """``python-depends`` of ``[general]`` must be general names, those of
    ``[general.<backend>]`` names known for that backend (checked when it is installed; a
    note otherwise)."""
    from kernel_plugins.plugins import get_manager

    installed = get_manager().backends()
    owners = {name: b for b, rec in installed.items() for name in rec.spec.python_depends}
    issues: list[BuildConfigIssue] = []
    notes: list[str] = []
    keys = [k for k in general if k in ("cuda", "neuron", "tpu", "xpu") or plugin_only(k, known)]
    for key in [None, *keys]:
        table = general[key] if key else general
        names = table.get("python-depends") if isinstance(table, Mapping) else None
        if not isinstance(names, list):
            continue
        allowed, missing = python_depends_known(installed, canonical_backend(key) if key else None)
        if missing:
            notes.append(f"[general.{key}] python-depends cannot be checked: {missing}")
            continue
        for i, name in enumerate(names):
            if not isinstance(name, str) or name in allowed:
                continue
            fix = f"use one of {', '.join(sorted(allowed))}"
            if not key and name in owners:
                fix = f"move it to [general.{owners[name]}] (only that backend knows it)"
            issues.append(BuildConfigIssue(
                _fmt_loc(("general", *([key] if key else []), "python-depends", i)),
                f"{name!r} is not a python-depends name known "
                + (f"for backend {key!r}" if key else "for every backend"), fix,
            ))
    return issues, notes
