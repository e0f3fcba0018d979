"""Error types of the benchmark engine."""

from __future__ import annotations

from kernel_plugins.errors import KernelPluginsError

__all__ = ["BenchmarkError", "CorrectnessError"]


class BenchmarkError(KernelPluginsError):
    """A benchmark cannot run as asked: unknown function, bad shape or dtype, no builder."""


class CorrectnessError(BenchmarkError):
    """A kernel's outputs differ from the reference's beyond the tolerance (or it raised)."""
