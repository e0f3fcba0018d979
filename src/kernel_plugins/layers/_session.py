"""One kernelize call's session: the device, a snapshot of the mapping, and each candidate
kernel loaded (through :func:`kernel_plugins.load`) and validated once per call."""

from __future__ import annotations

import functools
import inspect
import os
import types
from typing import TYPE_CHECKING, Any

from .._warn import warn_user
from ..errors import HubError, LayerError, MissingDependencyError, NoCompatibleVariantError
from ..known_plugins import import_tool
from .decorators import original_function
from .mapping import Candidate, KernelMapping, current_mapping, describe_device
from .mode import Mode
from .repositories import KernelRepository
from .validation import KernelTraits, check_registered_mode, validate_function, validate_layer

if TYPE_CHECKING:
    from ..loader import FallbackPolicy

__all__ = ["Session", "load_member", "mapping_disabled", "DISABLE_ENV"]

#: Environment variable that makes kernelize keep / restore original forwards.
DISABLE_ENV = "DISABLE_KERNEL_MAPPING"

#: Load errors meaning "this kernel is not available here": the candidate is skipped.
_SKIPPABLE = (NoCompatibleVariantError, HubError, MissingDependencyError)


def mapping_disabled() -> bool:
    """Whether ``DISABLE_KERNEL_MAPPING`` is set to a true value (``1``, ``true``, ``yes``)."""
    raw = os.environ.get(DISABLE_ENV, "").strip().lower()
    if raw in ("", "0", "false", "no", "off"):
        return False
    if raw in ("1", "true", "yes", "on"):
        return True
    raise LayerError(f"{DISABLE_ENV}={raw!r} is not understood; use 1 to disable or 0 to enable")


def _resolve_device(device: object) -> Any:
    """The DeviceInfo kernelize selects kernels for (default: :func:`kernel_plugins.get_device`)."""
    import kernel_plugins

    return kernel_plugins.get_device(device)


def _load_kernel(repo: KernelRepository, device: Any, *, trust: bool = False,
                 fallback: FallbackPolicy = "reference") -> types.ModuleType:
    """Load a candidate's kernel module through :func:`kernel_plugins.load`.

    A repository may carry its own trust (``load_options()["trust_remote_code"]``); either
    grant is enough. ``fallback`` is ``load``'s (``"error"`` refuses reference kernels).
    """
    import kernel_plugins

    options = {k: v for k, v in repo.load_options().items() if v is not None}
    trust = options.pop("trust_remote_code", False) is True or trust  # True itself, as _trusted()
    return kernel_plugins.load(repo.target(), device=device, trust_remote_code=trust, fallback=fallback, **options)


def load_member(repo: KernelRepository, device: object = None) -> Any:
    """Load ``repo`` for ``device`` (default: the preferred device) and return the layer
    class or function it names, without validating it against a model layer."""
    return _member(_load_kernel(repo, _resolve_device(device)), repo)


def _member(kmod: types.ModuleType, repo: KernelRepository) -> Any:
    """The layer class (``kmod.layers.<member>``) or function ``repo`` names, or a LayerError."""
    where = repo.describe()
    if repo.kind == "layer":
        return _layer_class(kmod, repo.member, where)
    impl = getattr(kmod, repo.member, None)
    if impl is None:
        raise LayerError(f"{where}: kernel module {kmod.__name__} has no such function")
    return impl


class Session:
    """State of one kernelize call: device, mapping snapshot and per-call caches."""

    def __init__(self, mode: Mode, device: object, require: frozenset[str], fallback: bool, trust: bool,
                 reference: FallbackPolicy = "reference", check_ops: bool = False):
        self.mode = mode
        self.trust = trust
        self.reference = reference
        self.require = require
        self.use_fallback = fallback
        self._device_arg = device
        self._device: Any = None
        self.mapping: KernelMapping = current_mapping()
        self.disabled = mapping_disabled()
        self._modules: dict[KernelRepository, types.ModuleType | Exception] = {}
        self._traits: dict[tuple[KernelRepository, type], tuple[Any, KernelTraits]] = {}
        self.check_ops = check_ops and Mode.TORCH_COMPILE in mode
        self._op_checks: dict[Any, str | None] = {}

    @property
    def device(self) -> Any:
        if self._device is None:
            self._device = _resolve_device(self._device_arg)
        return self._device

    def load(self, repo: KernelRepository) -> types.ModuleType | Exception:
        if repo not in self._modules:
            try:
                self._modules[repo] = _load_kernel(repo, self.device, trust=self.trust, fallback=self.reference)
            except _SKIPPABLE as e:
                warn_user(f"kernelize: skipping {repo.describe()} on {describe_device(self.device)}: {e}")
                self._modules[repo] = e
        return self._modules[repo]

    def ops_problem(self, repo: KernelRepository, layer: Any) -> str | None:
        """Why ``layer`` fails ``torch.library.opcheck`` (kernel-plugins-check's
        ``refusal``, which records it in the kernel's provenance), or None; once per class."""
        if layer not in self._op_checks:
            ops = import_tool("kernel_plugins_check.ops", "kernel-plugins-check", "kernelize(..., check_ops=True)")
            self._op_checks[layer] = ops.refusal(layer, self.device.torch_device, self.load(repo))
        return self._op_checks[layer]

    def implementation(self, cand: Candidate, module: Any) -> tuple[Any, KernelTraits] | str:
        """The validated kernel member and its traits, or why it is unavailable."""
        key = (cand.repo, type(module))
        if key not in self._traits:
            found = self._validated(cand, module)
            if isinstance(found, str):
                return found
            self._traits[key] = found
        impl, traits = self._traits[key]
        check_registered_mode(traits, cand.mode, where=f"{cand.repo.describe()} (for `{cand.layer_name}`)")
        return impl, traits

    def _validated(self, cand: Candidate, module: Any) -> tuple[Any, KernelTraits] | str:
        cls: Any = type(module)
        func = original_function(module)
        kmod = self.load(cand.repo)
        if isinstance(kmod, Exception):
            return f"could not be loaded: {kmod}"
        where, impl = cand.repo.describe(), _member(kmod, cand.repo)
        if cand.repo.kind == "layer":  # for a marked function: forward(self, *function args)
            return impl, validate_layer(impl, cls, where=where, original_forward=func)
        # a function replaces the whole forward: compare with it, without ``self``
        original = func if func is not None else functools.partial(cls.forward, None)
        return impl, validate_function(impl, original, where=where, module=kmod, name=cand.repo.member)


def _layer_class(kmod: types.ModuleType, member: str, where: str) -> Any:
    """``kmod.layers.<member>``, or a LayerError listing the layers that exist."""
    layers = getattr(kmod, "layers", None)
    if layers is None:
        raise LayerError(f"{where}: the kernel module {kmod.__name__} has no `layers` attribute")
    if (impl := getattr(layers, member, None)) is not None:
        return impl
    names = sorted(n for n, v in getattr(layers, "__dict__", {}).items()
                   if inspect.isclass(v) and not n.startswith("_"))
    raise LayerError(f"{where}: the kernel module {kmod.__name__} has no layer `{member}` "
                     f"(layers: {', '.join(names) or 'none'})")
