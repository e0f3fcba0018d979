"""``load()``: from a name to a verified, imported kernel module, in one straight line.

::

    find  ->  offer  ->  choose  ->  fetch  ->  verify  ->  dependencies  ->  import
   (sources) (fetching) (resolving) (fetching) (verification) (dependencies) (importer)

Each step has one home and hands a value to the next; none calls back into its caller.
The kernel's ``kernel-depends`` run the same steps up to verify before anything of the
tree is imported (:mod:`.dependencies`).
When the source yields no fitting variant or the Hub cannot be used, the reference policy
(:mod:`.fallback`) picks the next source, a bundled reference kernel, and
:func:`load_source` runs the same steps on it; when nothing loads, the error lists every
source tried and why it failed. See ``docs/loading.md``.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from types import ModuleType
from typing import Literal

from .contracts import normalize_require
from .dependencies import import_tree, verified_tree
from .detection import get_device, system_info
from .device import DeviceInfo, SystemInfo
from .errors import HubError, KernelPluginsError, NoCompatibleVariantError
from .fallback import ReferencePolicy, check_requirements
from .resolving import resolve_variants
from .signatures import requiring
from .sources import KernelSource, find
from .torch_support import require_torch

__all__ = ["load", "load_source", "resolve_variants", "system_info", "FallbackPolicy"]


FallbackPolicy = Literal["reference", "error"]


def load(
    name: str | os.PathLike[str], *, device: object = None, revision: str | None = None, version: int | None = None,
    lockfile: str | os.PathLike[str] | None = None, require: Iterable[str] | None = None,
    fallback: FallbackPolicy = "reference", trust_remote_code: bool = False, repo_type: str | None = None,
    require_signature: bool = False, trusted_root: str | os.PathLike[str] | None = None, check_arch: bool = True,
) -> ModuleType:
    """Load a kernel for a device and return its module.

    :param name: a Hub repo id (``"kernels-community/activation"``), a short name
        (``"activation"`` -> ``<KERNEL_PLUGINS_DEFAULT_ORG or kernels-community>/activation``),
        ``hub:org/name`` (explicitly the Hub), or a local path (a ``pathlib.Path``, or a
        string starting with ``/``, ``.`` or ``~``): a repository folder with ``build/``, a
        folder of variant folders, or one variant folder. A repository id that is also a
        folder here is refused as ambiguous.
    :param device: ``"mlu"``, ``"cuda:1"``, a ``torch.device``, or None for the preferred one.
    :param revision: a branch, tag or commit sha (Hub only); an exact pin.
    :param version: kernel version N: the tip of branch ``vN`` (Hub only).
    :param lockfile: a ``kernels.lock`` pinning the repo (see :mod:`kernel_plugins.lock`);
        an exact pin.
    :param require: properties the kernel must declare (e.g. ``{"deterministic"}``).
    :param fallback: ``"reference"`` to let a bundled portable reference kernel stand in
        (with a warning) when the repo has no variant for the device or the Hub cannot be
        used, never for exact pins, and for ``version=N`` only when the reference implements
        version N; ``"error"`` to raise instead. ``KERNEL_PLUGINS_STRICT=1`` means ``"error"``.
    :param trust_remote_code: allow Hub organisations outside the trusted list.
    :param repo_type: ``"kernel"`` (None: the default) or ``"model"`` (older repositories).
    :param require_signature: refuse a build not signed by an allowed signer
        (``KERNEL_PLUGINS_REQUIRE_SIGNATURE=1`` too); ``trusted_root``: a sigstore
        ``trusted_root.json`` to check signatures against (see docs/signatures.md).
    :param check_arch: refuse variants whose ``backend.archs`` the device cannot run (and
        try the next); False loads the best variant unchecked, with a warning.
    :return: the kernel module, with ``__kernel_provenance__``.
    :raises KernelPluginsError: subclasses naming what went wrong and how to fix it.

    Example::

        activation = kernel_plugins.load("activation", device="mlu")
        activation.silu_and_mul(out, x)
    """
    if fallback not in ("reference", "error"):
        raise ValueError(f"fallback must be 'reference' or 'error', got {fallback!r}")
    policy = ReferencePolicy(fallback, normalize_require(require))
    info, system = get_device(device), system_info()
    source = find(name, device=info, revision=revision, version=version, lockfile=lockfile, repo_type=repo_type)
    with requiring(require_signature, trusted_root=trusted_root):
        return load_source(source, info, system, trust_remote_code=trust_remote_code, fallback=policy,
                           check_arch=check_arch)


def load_source(
    source: KernelSource, info: DeviceInfo, system: SystemInfo, *, trust_remote_code: bool = False,
    fallback: ReferencePolicy | None = None, check_arch: bool = True,
) -> ModuleType:
    """Run the pipeline for one source: offer, choose, fetch, verify (with its dependencies),
    import.

    When it fails because no variant fits or the Hub cannot be used, ``fallback`` picks
    the next source (or raises) and the same steps run on that one (a dependency that
    fails is never a reason). With a ``fallback``, the module must also declare every
    property its policy requires.

    :raises MissingDependencyError: torch is missing or outside the supported releases.
    :raises NoCompatibleVariantError: no variant fits the device (and none stands in).
    :raises KernelPluginsError: any step failed (trust, pin, fetch, integrity, a dependency,
        import).
    """
    require_torch()  # before anything is fetched
    try:
        tree = verified_tree(source, info, system, trust_remote_code=trust_remote_code, check_arch=check_arch)
    except (NoCompatibleVariantError, HubError) as error:
        if fallback is None:
            raise
        nxt = fallback.next_source(source, info, error)
        try:
            tree = verified_tree(nxt, info, system)
            fallback.check(nxt, tree.verified.metadata)
        except KernelPluginsError as e:
            raise fallback.failed(source, nxt, e, error) from error
        return fallback.accept(import_tree(tree, info), source, info, error)
    module = import_tree(tree, info)
    if fallback is not None:  # the reference path checked them in accept()
        check_requirements(module, fallback.requirements)
    return module
