"""The torch releases kernel-plugins supports, checked when a kernel is loaded: installing
kernel-plugins never installs or replaces torch (the ``torch`` extra brings one)."""

from __future__ import annotations

from collections.abc import Iterable

from .backends.torchinfo import major_minor, torch_version_string
from .errors import MissingDependencyError

__all__ = ["SUPPORTED_TORCH", "INSTALL_TORCH", "torch_problem", "torch_note", "require_torch"]

#: The supported torch releases: the lowest ``(major, minor)`` and the first one beyond.
SUPPORTED_TORCH = ((2, 5), (3, 0))
_RANGE = "torch >= {}.{}, < {}".format(*SUPPORTED_TORCH[0], SUPPORTED_TORCH[1][0])
INSTALL_TORCH = (
    "install the torch build for your device first: for an accelerator the one its vendor "
    "pairs with its extension, for the CPU pip install torch --index-url "
    "https://download.pytorch.org/whl/cpu; or pip install torch (PyPI's default build, on Linux "
    "the CUDA one)"
)


def torch_problem(version: str | None, paired: Iterable[str] = ()) -> str | None:
    """Why torch ``version`` (None: not installed) cannot load kernels, or None.

    :param paired: the backends' ``paired_torch`` answers, named in the message.
    """
    if version is None:
        from . import device

        if device.torch_import_error:
            return (f"loading a kernel needs torch ({_RANGE}); the installed torch cannot be imported "
                    f"({device.torch_import_error}): reinstall it, or install the library it names "
                    f"(a vendor's torch needs its runtime, e.g. CUDA's cuDNN): {INSTALL_TORCH}")
        return f"loading a kernel needs torch ({_RANGE}), which is not installed: {INSTALL_TORCH}"
    have = major_minor(version)
    if have is None or SUPPORTED_TORCH[0] <= have < SUPPORTED_TORCH[1]:
        return None
    msg = f"the installed torch {version} is outside the releases kernel-plugins supports ({_RANGE})"
    if paired := list(paired):
        return (f"{msg}; {'; '.join(paired)}: upgrade the vendor extension together with its "
                "torch, as the vendor's instructions say (another torch alone breaks the stack)")
    return f"{msg}; install a torch in that range"


def torch_note() -> str | None:
    """:func:`torch_problem` of the installed torch, naming what the vendor stacks need."""
    from .plugins import get_manager

    version = torch_version_string()
    if torch_problem(version) is None:
        return None
    return torch_problem(version, get_manager().paired_torch() if version else ())


def require_torch() -> None:
    """Raise :class:`MissingDependencyError` when the installed torch cannot load kernels."""
    if (problem := torch_note()) is not None:
        raise MissingDependencyError(problem)
