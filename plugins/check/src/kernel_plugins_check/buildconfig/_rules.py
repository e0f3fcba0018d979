"""Rules that span keys or tables, checked on the raw data before the models run.

Backend names (``general.backends``, ``[torch.stable-abi]`` keys, ``kernel.<name>.backend``)
must be known to this installation; a backend is listed once; a kernel's backend is one of
``general.backends`` and it uses only its own backend's keys; ``general.hub.repo-id`` is a
valid repository id; there is at most one framework table, and a ``[torch-noarch]`` kernel
has no ``[kernel.*]`` tables.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kernel_plugins.errors import KernelPluginsError

from ._issues import _fmt_loc, _short
from ._models import KERNEL_BACKEND_KEYS, BuildConfigIssue


def _backend_issue(key: str, name: object, known: Mapping[str, str]) -> BuildConfigIssue | None:
    if isinstance(name, str) and name in known:
        return None
    return BuildConfigIssue(
        key,
        f"unknown backend {_short(name)}",
        f"use one of {', '.join(sorted(known))} (installed backends and known plugins); for "
        "another accelerator install the kernel-plugins backend distribution that provides it",
    )


def _semantic_issues(data: Mapping[str, Any], known: Mapping[str, str]) -> list[BuildConfigIssue]:
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
    hub = general.get("hub")
    if isinstance(hub, Mapping) and isinstance(hub.get("repo-id"), str):
        issues += _repo_id_issue("general.hub.repo-id", hub["repo-id"])
    torch = data.get("torch")
    if isinstance(torch, Mapping) and isinstance(torch.get("stable-abi"), Mapping):
        for b in torch["stable-abi"]:
            issue = _backend_issue(_fmt_loc(("torch", "stable-abi", b)), b, known)
            if issue:
                issues.append(issue)
    kernels = data.get("kernel")
    if isinstance(kernels, Mapping):
        for kname, table in kernels.items():
            if not isinstance(table, Mapping):
                continue
            backend = table.get("backend")
            if backend is None:
                continue
            bkey = _fmt_loc(("kernel", kname, "backend"))
            issue = _backend_issue(bkey, backend, known)
            if issue:
                issues.append(issue)
                continue
            if declared and backend not in declared:
                issues.append(BuildConfigIssue(
                    bkey,
                    f"kernel {kname!r} is built for backend {backend!r}, which general.backends "
                    "does not list",
                    f"add {backend!r} to general.backends or remove [kernel.{kname}]",
                ))
            for owner, keys in KERNEL_BACKEND_KEYS.items():
                if owner == backend:
                    continue
                for k in keys:
                    if k in table:
                        issues.append(BuildConfigIssue(
                            _fmt_loc(("kernel", kname, k)),
                            f"key '{k}' is only for {owner} kernels; this kernel's backend is "
                            f"{backend!r}",
                            f"remove '{k}' or set backend = \"{owner}\"",
                        ))
    frameworks = [t for t in ("torch", "torch-noarch", "tvm-ffi") if t in data]
    if len(frameworks) > 1:
        issues.append(BuildConfigIssue(
            "", f"more than one framework table: {', '.join(f'[{t}]' for t in frameworks)}",
            "keep exactly one of [torch], [torch-noarch] and [tvm-ffi]",
        ))
    if "torch-noarch" in data and isinstance(kernels, Mapping) and kernels:
        issues.append(BuildConfigIssue(
            "kernel",
            "a [torch-noarch] kernel has no compiled code, but [kernel.*] tables are present",
            "remove the [kernel.*] tables, or use [torch] for a compiled kernel",
        ))
    return issues


def _repo_id_issue(key: str, repo_id: str) -> list[BuildConfigIssue]:
    from kernel_plugins.hub import validate_repo_id

    try:
        validate_repo_id(repo_id)
    except KernelPluginsError as e:
        return [BuildConfigIssue(key, str(e), "use the form 'org/name'")]
    return []
