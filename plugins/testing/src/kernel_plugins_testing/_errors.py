"""The error type of the emulation helpers (no torch import)."""

from __future__ import annotations

from kernel_plugins.errors import KernelPluginsError

__all__ = ["EmulationError"]


class EmulationError(KernelPluginsError):
    """An accelerator cannot be emulated as requested.

    Raised for an invalid device name or count, a second PrivateUse1 name in the same
    process (PyTorch allows one; use a fresh interpreter, e.g.
    :func:`kernel_plugins_testing.run_in_fresh_interpreter`), or a device type that a
    real vendor stack already owns.
    """
