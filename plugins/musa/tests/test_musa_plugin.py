"""The musa plugin against the conformance suite, with the Moore Threads facts of conformance.toml.

The suite (:mod:`kernel_plugins_testing.conformance`) runs every standard check with
these facts; the method below is the check only this plugin has.
"""

from __future__ import annotations

import sys
import types
from pathlib import Path

import pytest
import torch
from kernel_plugins_testing.conformance import declared_suites

from kernel_plugins_musa.hooks import MUSA

SUITES = declared_suites(MUSA, Path(__file__).with_name("conformance.toml"))
assert SUITES.emulated is not None


class TestMusaPlugin(SUITES.plugin):  # type: ignore[name-defined,misc]
    """Hook-level checks of the musa plugin."""

    def test_an_unavailable_stack_is_no_device(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.plugin.hide(monkeypatch)
        vendor = types.ModuleType("torch_musa")
        vendor.is_available = lambda: False  # type: ignore[attr-defined]
        monkeypatch.setitem(sys.modules, "torch_musa", vendor)
        monkeypatch.setattr(torch, "musa", vendor, raising=False)
        assert MUSA.detect_device() is None


class TestMusaEmulated(SUITES.emulated):  # type: ignore[name-defined,misc]
    """Two emulated MTT S80s; ``list-backends --emulate musa`` joins that set-up."""
