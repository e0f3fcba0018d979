"""Where a mapped kernel lives, and which layer class or function of it serves a name.

Layer repositories name a class in the kernel's ``layers`` module (used for classes
marked with :func:`~kernel_plugins.layers.use_kernel_forward_from_hub`); function
repositories name a top-level function of the kernel module (used for marked functions).

=====================================  ==============================================
class                                  loaded with
=====================================  ==============================================
``LayerRepository(repo_id, ...)``      ``load(repo_id, revision=... | version=...)``
``LocalLayerRepository(path, ...)``    ``load(path)`` (a folder holding ``build/``)
``LockedLayerRepository(repo_id, ...)``  ``load(repo_id, lockfile=...)``
=====================================  ==============================================

and the same three with ``Func`` instead of ``Layer`` (``func_name=`` instead of
``layer_name=``). Nothing is downloaded or resolved when a repository is created: that
happens in :func:`~kernel_plugins.layers.kernelize`. Repositories are immutable and
hashable, so they can be compared and cached.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, ClassVar

from .._record import KW_ONLY, field, record
from ._errors import MappingError

__all__ = ["KernelRepository", "LayerRepository", "LocalLayerRepository", "LockedLayerRepository",
           "FuncRepository", "LocalFuncRepository", "LockedFuncRepository", "LOCKFILE_NAME"]

#: The lock file a locked repository uses when none is given.
LOCKFILE_NAME = "kernels.lock"


def _check_str(value: object, what: str, cls: str) -> None:
    if not isinstance(value, str) or not value.strip():
        raise MappingError(f"{cls}: {what} must be a non-empty string, got {value!r}")


def _check_revision_version(revision: object, version: object, cls: str) -> None:
    if revision is not None and version is not None:
        raise MappingError(f"{cls}: give either revision={revision!r} or version={version!r}, not both")
    if revision is not None:
        _check_str(revision, "revision", cls)
    if version is not None and (isinstance(version, bool) or not isinstance(version, int) or version < 0):
        raise MappingError(f"{cls}: version must be a non-negative int (the v<N> branch), got {version!r}")


class KernelRepository:
    """Base class of the repository types; subclasses are frozen dataclasses.

    Attributes:
        kind: ``"layer"`` (a class in ``layers``) or ``"function"`` (a module function).
    """

    kind: ClassVar[str] = "layer"
    #: The argument naming :attr:`member` (``layer_name`` or ``func_name``), for messages.
    _member_arg: ClassVar[str] = "layer_name"

    @property
    def member(self) -> str:
        """The layer class name or function name this repository serves."""
        raise NotImplementedError

    def target(self) -> str | Path:
        """The first argument for :func:`kernel_plugins.load`: a repo id, or a folder as a
        :class:`~pathlib.Path` (so it can never be read as a repo id)."""
        raise NotImplementedError

    def load_options(self) -> dict[str, Any]:
        """Keyword arguments for :func:`kernel_plugins.load` (revision, version, lockfile)."""
        return {}

    def _trusted(self) -> bool:
        """Whether this repository grants ``trust_remote_code`` (only ``True`` itself does)."""
        return getattr(self, "trust_remote_code", None) is True

    def describe(self) -> str:
        """``layer `SiluAndMul` of `org/activation` (version 1)``, for messages."""
        opts = ", ".join(f"{k} {v}" for k, v in self.load_options().items()
                         if v is not None and k != "trust_remote_code")
        where = f"`{self.target()}`" + (f" ({opts})" if opts else "")
        return f"{self.kind} `{self.member}` of {where}"


@record
class _HubRepo(KernelRepository):
    repo_id: str
    _: KW_ONLY
    revision: str | None = None
    version: int | None = None
    trust_remote_code: bool = False

    def __post_init__(self) -> None:
        cls = type(self).__name__
        _check_str(self.repo_id, "repo_id", cls)
        _check_str(self.member, self._member_arg, cls)
        _check_revision_version(self.revision, self.version, cls)

    def target(self) -> str:
        """The Hub repository id."""
        return self.repo_id

    def load_options(self) -> dict[str, Any]:
        """``revision`` / ``version`` as given (at most one is set), ``trust_remote_code``."""
        return {"revision": self.revision, "version": self.version, "trust_remote_code": self._trusted()}


@record
class _LocalRepo(KernelRepository):
    repo_path: Path
    _: KW_ONLY
    package_name: str | None = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        cls = type(self).__name__
        if not isinstance(self.repo_path, (str, Path)):
            raise MappingError(f"{cls}: repo_path must be a str or Path, got {self.repo_path!r}")
        object.__setattr__(self, "repo_path", Path(self.repo_path).expanduser())
        _check_str(self.member, self._member_arg, cls)

    def target(self) -> Path:
        """The folder, as a Path: always a local folder to ``load``."""
        return self.repo_path


@record
class _LockedRepo(KernelRepository):
    repo_id: str
    _: KW_ONLY
    lockfile: Path | None = None
    trust_remote_code: bool = False
    origin: str | None = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        cls = type(self).__name__
        _check_str(self.repo_id, "repo_id", cls)
        _check_str(self.member, self._member_arg, cls)
        if self.lockfile is not None:
            if not isinstance(self.lockfile, (str, Path)):
                raise MappingError(f"{cls}: lockfile must be a str or Path, got {self.lockfile!r}")
            object.__setattr__(self, "lockfile", Path(self.lockfile).expanduser())
        elif self.origin is None:
            from ..lock import caller_file

            object.__setattr__(self, "origin", caller_file())

    def target(self) -> str:
        """The Hub repository id."""
        return self.repo_id

    def resolve_lockfile(self) -> os.PathLike[str]:
        """The lock file given, else the one found (and read) for the file that created this
        repository (:mod:`kernel_plugins.lock._discovery`).

        Raises :class:`~kernel_plugins.errors.LockfileError` when none is found, or the one
        found may have been written by someone else.
        """
        if self.lockfile is not None:
            return self.lockfile
        from ..lock import find_lockfile

        return find_lockfile(self.origin, what=f"{type(self).__name__}({self.repo_id!r})")

    def load_options(self) -> dict[str, Any]:
        """``lockfile``: the resolved lock file, and ``trust_remote_code``."""
        return {"lockfile": self.resolve_lockfile(), "trust_remote_code": self._trusted()}

    def describe(self) -> str:
        """Like the base, without resolving the lock file (messages must not fail)."""
        lock = self.lockfile if self.lockfile is not None else f"nearest {LOCKFILE_NAME}"
        return f"{self.kind} `{self.member}` of `{self.repo_id}` (locked by {lock})"


@record
class _LayerMember:
    """Mixin: the repository serves a layer class of the kernel's ``layers`` module."""

    kind: ClassVar[str] = "layer"
    _member_arg: ClassVar[str] = "layer_name"
    _: KW_ONLY
    layer_name: str

    @property
    def member(self) -> str:
        """The layer class name."""
        return self.layer_name


@record
class _FuncMember:
    """Mixin: the repository serves a top-level function of the kernel module."""

    kind: ClassVar[str] = "function"
    _member_arg: ClassVar[str] = "func_name"
    _: KW_ONLY
    func_name: str

    @property
    def member(self) -> str:
        """The function name."""
        return self.func_name


@record
class LayerRepository(_LayerMember, _HubRepo):
    """A layer class of a Hub kernel repository.

    Args:
        repo_id: ``org/name`` on the Hub.
        layer_name: class name in the kernel's ``layers`` module.
        revision: branch, tag or commit sha; cannot be combined with ``version``.
        version: kernel major version (the tip of branch ``v<N>``).
        trust_remote_code: allow this repository although its organisation is not trusted
            (see :mod:`kernel_plugins.trust`); only ``True`` itself allows it.

    Example::

        LayerRepository("kernels-community/activation", layer_name="SiluAndMul", version=1)
    """


@record
class LocalLayerRepository(_LayerMember, _LocalRepo):
    """A layer class of a kernel repository folder on disk (a folder holding ``build/``).

    Args:
        repo_path: the folder.
        layer_name: class name in the kernel's ``layers`` module.
        package_name: accepted for compatibility with the ``kernels`` package and ignored
            (the module name comes from the variant's ``metadata.json``).
    """


@record
class LockedLayerRepository(_LayerMember, _LockedRepo):
    """A layer class of a Hub kernel repository pinned by a lock file.

    Args:
        repo_id: ``org/name`` on the Hub.
        layer_name: class name in the kernel's ``layers`` module.
        lockfile: the ``kernels.lock`` to use; None: the nearest one above the file that
            creates this repository (then above the working directory), found at load time.
        trust_remote_code: allow this repository although its organisation is not trusted.
    """


@record
class FuncRepository(_FuncMember, _HubRepo):
    """A top-level function of a Hub kernel repository (for marked functions).

    Args:
        repo_id: ``org/name`` on the Hub.
        func_name: function name in the kernel module.
        revision: branch, tag or commit sha; cannot be combined with ``version``.
        version: kernel major version.
        trust_remote_code: allow this repository although its organisation is not trusted.
    """


@record
class LocalFuncRepository(_FuncMember, _LocalRepo):
    """A top-level function of a kernel repository folder on disk."""


@record
class LockedFuncRepository(_FuncMember, _LockedRepo):
    """A top-level function of a Hub kernel repository pinned by a lock file."""
