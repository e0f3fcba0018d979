"""The npu plugin against the conformance suite, with the Huawei Ascend facts of conformance.toml.

The suite (:mod:`kernel_plugins_testing.conformance`) runs every standard check with
these facts: detection with stand-ins, variant names and reasons, resolution, and a
scenario on an EMULATED device in a fresh interpreter.
"""

from __future__ import annotations

from pathlib import Path

from kernel_plugins_testing.conformance import declared_suites

from kernel_plugins_npu.hooks import NPU

SUITES = declared_suites(NPU, Path(__file__).with_name("conformance.toml"))
assert SUITES.emulated is not None


class TestNpuPlugin(SUITES.plugin):  # type: ignore[name-defined,misc]
    """Hook-level checks of the npu plugin."""


class TestNpuEmulated(SUITES.emulated):  # type: ignore[name-defined,misc]
    """Two emulated Ascend 910B2s."""
