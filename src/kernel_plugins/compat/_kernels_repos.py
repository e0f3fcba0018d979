"""The repository classes of the ``kernels`` API, as kernel-plugins repositories.

Each is a subclass of the core class of the same name, so it works in any kernel-plugins
mapping, and adds what ``kernels`` callers rely on: ``trust_remote_code`` (a bool or a
list of repository ids), ``user_agent`` (accepted, not sent), a required ``revision`` or
``version`` for Hub repositories, and ``.load()`` returning the layer class.
"""

from __future__ import annotations

import inspect
import logging
from typing import TYPE_CHECKING, Any, ClassVar

from .. import layers as core
from .._record import field, record
from .._warn import warn_user

log = logging.getLogger("kernel_plugins.compat.kernels")


def resolve_trust(repo_id: str, trust_remote_code: object) -> bool:
    """``kernels``' trust argument for one repository: True, False, or an allow-list."""
    if isinstance(trust_remote_code, bool):
        return trust_remote_code
    if isinstance(trust_remote_code, (list, tuple)) and all(isinstance(r, str) for r in trust_remote_code):
        return repo_id in trust_remote_code
    raise TypeError(f"trust_remote_code must be a bool or a list of repository ids, got {trust_remote_code!r}")


def func_layer(func: Any) -> type:
    """A stateless layer class whose ``forward(self, *args)`` calls ``func(*args)``."""
    import torch.nn as nn

    def forward(self: Any, *args: Any, **kwargs: Any) -> Any:
        return func(*args, **kwargs)

    sig = inspect.signature(func)
    self_param = inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)
    forward.__signature__ = sig.replace(parameters=[self_param, *sig.parameters.values()])  # type: ignore[attr-defined]
    return type("Func", (nn.Module,), {"forward": forward, "has_backward": getattr(func, "has_backward", True),
                                       "can_torch_compile": getattr(func, "can_torch_compile", False)})


def kernels_would_refuse(layer: object, where: str) -> None:
    """Warn when HF ``kernels`` 0.19.1 refuses the layer class: members beyond ``forward``,
    ``has_backward``, ``can_torch_compile``, ``__copy__`` and ``__deepcopy__`` (kernel-plugins
    also takes ``kernel_properties``)."""
    import torch.nn as nn

    allowed = {*dir(nn.Module), "has_backward", "can_torch_compile", "__copy__", "__deepcopy__"}
    extra = sorted(set(dir(layer)) - allowed) if isinstance(layer, type) else []
    if extra:
        warn_user(f"{where}: HF kernels 0.19.1 refuses this layer class (\"must not contain additional "
                  f"members\"): {', '.join(extra)}. Declare properties in the layers module's "
                  "__kernel_properties__ table, and move other members out of the class.")


def _load_member(repo: Any) -> Any:
    from ..layers.kernelizing import load_member
    from ._kernels_errors import as_kernels_errors, kernels_advice

    with as_kernels_errors(repo.target(), getattr(repo, "version", None)), kernels_advice():
        member = load_member(repo)
    if repo.kind == "layer":
        kernels_would_refuse(member, repo.describe())
    return member


@record
class _Compat:
    """Mixin of the classes below: ``check_arch`` (True: refuse a build whose ``backend.archs``
    the device cannot run; False: skip that check), ``kernels``' checks when created, ``.load()``."""

    #: For a class ``kernels`` deprecates: the class to use instead.
    instead: ClassVar[str | None] = None
    check_arch: bool = field(default=True, kw_only=True)
    if TYPE_CHECKING:  # provided by the core classes, and trust_remote_code by _Trusting
        repo_id: str
        revision: str | None
        version: int | None
        trust_remote_code: Any

    def __post_init__(self) -> None:
        if self.instead:
            log.warning("%s is deprecated in kernels and will be removed; use %s instead.",
                        type(self).__name__, self.instead)
        if hasattr(self, "version"):  # a Hub repository: one of revision and version
            if (self.revision is None) == (self.version is None):
                raise ValueError("Either a revision or a version must be specified"
                                 + (", not both." if self.version is not None else "."))
        if not isinstance(self.check_arch, bool):
            raise TypeError(f"check_arch must be True or False, got {self.check_arch!r}")
        super().__post_init__()  # type: ignore[misc]
        if isinstance(getattr(self, "trust_remote_code", None), list):
            object.__setattr__(self, "trust_remote_code", tuple(self.trust_remote_code))
        if hasattr(self, "trust_remote_code"):
            resolve_trust(self.repo_id, self.trust_remote_code)
        if getattr(self, "package_name", None) is not None:
            warn_user(f"{type(self).__name__}(package_name=...): HF kernels 0.19.1 has no "
                      "package_name and raises TypeError on it; drop it (kernel-plugins ignores "
                      "it)", DeprecationWarning)

    def load_options(self) -> dict[str, Any]:
        """The core class's options, with ``check_arch=False`` when given."""
        return {**super().load_options(), **({} if self.check_arch else {"check_arch": False})}  # type: ignore[misc]

    def _trusted(self) -> bool:
        """``trust_remote_code`` resolved for this repository (a list names repositories)."""
        return resolve_trust(self.repo_id, self.trust_remote_code)

    def load(self) -> type:
        """Load the kernel for this machine's device; return the layer class (for a function:
        a layer class calling it)."""
        member = _load_member(self)
        return member if getattr(self, "kind", None) == "layer" else func_layer(member)  # type: ignore[no-any-return]


@record
class _Trusting(_Compat):
    """Mixin of the Hub classes: ``trust_remote_code`` may also be a list of repository ids."""

    trust_remote_code: bool | tuple[str, ...] = field(default=False, kw_only=True)


@record
class LayerRepository(_Trusting, core.LayerRepository):
    """A layer of a Hub kernel: ``LayerRepository(repo_id, *, layer_name, revision=None,
    version=None, trust_remote_code=False, user_agent=None, check_arch=True)``; one of
    revision/version."""

    user_agent: Any = field(default=None, compare=False, repr=False, kw_only=True)


@record
class LocalLayerRepository(_Compat, core.LocalLayerRepository):
    """A layer of a kernel repository folder: ``LocalLayerRepository(repo_path, *, layer_name)``."""


@record
class LockedLayerRepository(_Trusting, core.LockedLayerRepository):
    """A layer of a Hub kernel pinned by ``kernels.lock``: ``LockedLayerRepository(repo_id,
    *, lockfile=None, layer_name, trust_remote_code=False)``."""


@record
class FuncRepository(_Trusting, core.FuncRepository):
    """A function of a Hub kernel (deprecated in ``kernels``; use LayerRepository)."""

    instead = "LayerRepository"


@record
class LocalFuncRepository(_Compat, core.LocalFuncRepository):
    """A function of a kernel repository folder (deprecated in ``kernels``)."""

    instead = "LocalLayerRepository"


@record
class LockedFuncRepository(_Trusting, core.LockedFuncRepository):
    """A function of a locked Hub kernel (deprecated in ``kernels``)."""

    instead = "LockedLayerRepository"
