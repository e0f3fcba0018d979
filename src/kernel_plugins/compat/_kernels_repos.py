"""The repository classes of the ``kernels`` API, as kernel-plugins repositories.

Each is a subclass of the core class of the same name, so it works in any kernel-plugins
mapping, and adds what ``kernels`` callers rely on: ``trust_remote_code`` (a bool or a
list of repository ids), ``user_agent`` (accepted, not sent), a required ``revision`` or
``version`` for Hub repositories, and ``.load()`` returning the layer class.
"""

from __future__ import annotations

import inspect
import logging
from dataclasses import dataclass, field
from typing import Any

from .. import layers as core
from .._warn import warn_user

log = logging.getLogger("kernel_plugins.compat.kernels")


def resolve_trust(repo_id: str, trust_remote_code: object) -> bool:
    """``kernels``' trust argument for one repository: True, False, or an allow-list."""
    if isinstance(trust_remote_code, bool):
        return trust_remote_code
    if isinstance(trust_remote_code, (list, tuple)) and all(
        isinstance(r, str) for r in trust_remote_code
    ):
        return repo_id in trust_remote_code
    raise TypeError(
        f"trust_remote_code must be a bool or a list of repository ids, got {trust_remote_code!r}"
    )


def func_layer(func: Any) -> type:
    """A stateless layer class whose ``forward(self, *args)`` calls ``func(*args)``."""
    import torch.nn as nn

    def forward(self: Any, *args: Any, **kwargs: Any) -> Any:
        return func(*args, **kwargs)

    sig = inspect.signature(func)
    self_param = inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)
    forward.__signature__ = sig.replace(  # type: ignore[attr-defined]
        parameters=[self_param, *sig.parameters.values()]
    )
    members = {
        "forward": forward,
        "has_backward": getattr(func, "has_backward", True),
        "can_torch_compile": getattr(func, "can_torch_compile", False),
    }
    return type("Func", (nn.Module,), members)


def kernels_would_refuse(layer: object, where: str) -> None:
    """Warn when HF ``kernels`` 0.17.2 refuses the layer class: members beyond ``forward``,
    ``has_backward`` and ``can_torch_compile`` (kernel-plugins also takes ``kernel_properties``)."""
    import torch.nn as nn

    allowed = {*dir(nn.Module), "has_backward", "can_torch_compile"}
    extra = sorted(set(dir(layer)) - allowed) if isinstance(layer, type) else []
    if extra:
        warn_user(f"{where}: HF kernels 0.17.2 refuses this layer class (\"must not contain additional "
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


def _no_package_name(repo: Any) -> None:
    if repo.package_name is not None:
        warn_user(f"{type(repo).__name__}(package_name=...): HF kernels 0.17.2 has no package_name "
                  "and raises TypeError on it; drop it (kernel-plugins ignores it)", DeprecationWarning)


class _Trusting:
    """Mixin: ``trust_remote_code`` as ``kernels`` takes it, kept as a tuple when a list."""

    repo_id: str
    trust_remote_code: bool | tuple[str, ...]

    def _normalise_trust(self) -> None:
        value = self.trust_remote_code
        if isinstance(value, list):
            object.__setattr__(self, "trust_remote_code", tuple(value))
        resolve_trust(self.repo_id, self.trust_remote_code)

    def _trusted(self) -> bool:
        """``trust_remote_code`` resolved for this repository (a list names repositories)."""
        return resolve_trust(self.repo_id, self.trust_remote_code)


def _need_revision_or_version(repo: Any) -> None:
    if repo.revision is not None and repo.version is not None:
        raise ValueError("Either a revision or a version must be specified, not both.")
    if repo.revision is None and repo.version is None:
        raise ValueError("Either a revision or a version must be specified.")


@dataclass(frozen=True)
class LayerRepository(_Trusting, core.LayerRepository):
    """A layer of a Hub kernel: ``LayerRepository(repo_id, *, layer_name, revision=None,
    version=None, trust_remote_code=False, user_agent=None)``; one of revision/version."""

    trust_remote_code: bool | tuple[str, ...] = field(default=False, kw_only=True)  # type: ignore[assignment]
    user_agent: Any = field(default=None, compare=False, repr=False, kw_only=True)

    def __post_init__(self) -> None:
        _need_revision_or_version(self)
        super().__post_init__()
        self._normalise_trust()

    def load(self) -> type:
        """Load the kernel for this machine's device and return the layer class."""
        return _load_member(self)  # type: ignore[no-any-return]


@dataclass(frozen=True)
class LocalLayerRepository(core.LocalLayerRepository):
    """A layer of a kernel repository folder: ``LocalLayerRepository(repo_path, *, layer_name)``."""

    def __post_init__(self) -> None:
        super().__post_init__()
        _no_package_name(self)

    def load(self) -> type:
        """Load the kernel from the folder and return the layer class."""
        return _load_member(self)  # type: ignore[no-any-return]


@dataclass(frozen=True)
class LockedLayerRepository(_Trusting, core.LockedLayerRepository):
    """A layer of a Hub kernel pinned by ``kernels.lock``: ``LockedLayerRepository(repo_id,
    *, lockfile=None, layer_name, trust_remote_code=False)``."""

    trust_remote_code: bool | tuple[str, ...] = field(default=False, kw_only=True)  # type: ignore[assignment]

    def __post_init__(self) -> None:
        super().__post_init__()
        self._normalise_trust()

    def load(self) -> type:
        """Load the locked kernel and return the layer class."""
        return _load_member(self)  # type: ignore[no-any-return]


def _deprecated(name: str, instead: str) -> None:
    log.warning("%s is deprecated in kernels and will be removed; use %s instead.", name, instead)


@dataclass(frozen=True)
class FuncRepository(_Trusting, core.FuncRepository):
    """A function of a Hub kernel (deprecated in ``kernels``; use LayerRepository)."""

    trust_remote_code: bool | tuple[str, ...] = field(default=False, kw_only=True)  # type: ignore[assignment]

    def __post_init__(self) -> None:
        _deprecated("FuncRepository", "LayerRepository")
        _need_revision_or_version(self)
        super().__post_init__()
        self._normalise_trust()

    def load(self) -> type:
        """Load the kernel and return a layer class calling the function."""
        return func_layer(_load_member(self))


@dataclass(frozen=True)
class LocalFuncRepository(core.LocalFuncRepository):
    """A function of a kernel repository folder (deprecated in ``kernels``)."""

    def __post_init__(self) -> None:
        _deprecated("LocalFuncRepository", "LocalLayerRepository")
        super().__post_init__()
        _no_package_name(self)

    def load(self) -> type:
        """Load the kernel and return a layer class calling the function."""
        return func_layer(_load_member(self))


@dataclass(frozen=True)
class LockedFuncRepository(_Trusting, core.LockedFuncRepository):
    """A function of a locked Hub kernel (deprecated in ``kernels``)."""

    trust_remote_code: bool | tuple[str, ...] = field(default=False, kw_only=True)  # type: ignore[assignment]

    def __post_init__(self) -> None:
        _deprecated("LockedFuncRepository", "LockedLayerRepository")
        super().__post_init__()
        self._normalise_trust()

    def load(self) -> type:
        """Load the locked kernel and return a layer class calling the function."""
        return func_layer(_load_member(self))
