"""kernel-plugins errors raised through the ``kernels`` API also have the built-in type
``kernels`` raises in the same case, so ``except ValueError`` in code written for
``kernels`` keeps working, and the message keeps the phrase ``kernels`` uses.

=================================  ===================  ===========================================
kernel-plugins error               also                 message starts with
=================================  ===================  ===========================================
TrustError                         ValueError           ``<repo> is not from a trusted publisher``
VersionNotFoundError               ValueError           ``Version <n> not found``
RevisionError (both given, ...)    ValueError           (its own)
NoCompatibleVariantError           FileNotFoundError    ``Cannot find a build variant``
(the same, builds refused for      and RuntimeError     ``A build of <repo> does not support
their architectures: check_arch)                        the current device``
(no version nor revision given)    ValueError           ``A kernel version or revision must be
                                                        specified``
=================================  ===================  ===========================================
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

from ..errors import NoCompatibleVariantError, RevisionError, TrustError, VersionNotFoundError

__all__ = ["as_kernels_errors", "need_version_or_revision", "translated"]

F = TypeVar("F", bound=Callable[..., Any])


_CLASSES: dict[tuple[type[BaseException], type[BaseException]], type[BaseException]] = {}


def _with_builtin(cls: type[BaseException], *builtins: type[BaseException]) -> type[BaseException]:
    """``cls`` that is also each of ``builtins`` (one class per combination)."""
    key = (cls, *builtins)
    if key not in _CLASSES:
        _CLASSES[key] = type(cls.__name__, key, {"__module__": cls.__module__})  # type: ignore[index]
    return _CLASSES[key]  # type: ignore[index]


def _translate(e: BaseException, repo_id: str, version: object) -> BaseException | None:
    if isinstance(e, TrustError) and not isinstance(e, ValueError):
        return _with_builtin(type(e), ValueError)(f"{repo_id} is not from a trusted publisher. {e}")
    if isinstance(e, VersionNotFoundError) and not isinstance(e, ValueError):
        return _with_builtin(type(e), ValueError)(f"Version {version} not found. {e}")
    if isinstance(e, RevisionError) and not isinstance(e, ValueError):  # both given, bad, unknown
        return _with_builtin(type(e), ValueError)(str(e))
    if isinstance(e, NoCompatibleVariantError) and not isinstance(e, FileNotFoundError):
        if getattr(e.resolution, "refused", ()):  # kernels' check_arch refusal is a RuntimeError
            return _with_builtin(type(e), FileNotFoundError, RuntimeError)(
                f"A build of {repo_id} does not support the current device: pass `check_arch=False` "
                f"to skip this check (the kernel may fail or crash the process). {e}")
        return _with_builtin(type(e), FileNotFoundError)(f"Cannot find a build variant for this system in {repo_id}. "
                                                         f"{e}")
    return None


@contextmanager
def as_kernels_errors(repo_id: str, version: object = None) -> Iterator[None]:
    """Re-raise the errors of the table above with their ``kernels`` type and phrase."""
    try:
        yield
    except (TrustError, VersionNotFoundError, RevisionError, NoCompatibleVariantError) as e:
        new = _translate(e, repo_id, version)
        if new is None:
            raise
        raise new from e


@contextmanager
def kernels_advice() -> Iterator[None]:
    """Warnings in the spelling of this API: ``kernels`` has no ``fallback=`` argument, so
    the reference-fallback warning names ``KERNEL_PLUGINS_STRICT=1`` to refuse it."""
    caught: list[warnings.WarningMessage] = []
    try:
        with warnings.catch_warnings(record=True) as caught:  # type: ignore[assignment]
            warnings.simplefilter("always")
            yield
    finally:
        for w in caught:
            text = str(w.message).replace("Pass fallback='error' to refuse.", "Set KERNEL_PLUGINS_STRICT=1 to refuse.")
            warnings.warn_explicit(text, w.category, w.filename, w.lineno)


def translated(func: F) -> F:
    """Decorate a loader taking ``repo_id`` first (and ``version=``) with
    :func:`as_kernels_errors`."""

    @functools.wraps(func)
    def wrapper(repo_id: Any, *args: Any, **kwargs: Any) -> Any:
        with as_kernels_errors(str(repo_id), kwargs.get("version")):
            return func(repo_id, *args, **kwargs)

    return wrapper  # type: ignore[return-value]


def need_version_or_revision(revision: object, version: object) -> None:
    """``kernels`` (0.17 and later) needs one of them for Hub loads (no implicit newest version)."""
    if revision is None and version is None:
        raise ValueError("A kernel version or revision must be specified (version=N for the v<N> branch, "
                         "or revision='main' / a tag / a commit sha)")
