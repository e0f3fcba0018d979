"""The mlu plugin against the conformance suite, with the Cambricon facts of conformance.toml.

The suite (:mod:`kernel_plugins_testing.conformance`) runs every standard check with
these facts: detection with stand-ins put in place by ``monkeypatch``, variant names and
reasons, resolution, and a scenario on an EMULATED device in a fresh interpreter. The
methods below are the checks only this plugin has.
"""

from __future__ import annotations

import sys
import types
from pathlib import Path

import pytest
from kernel_plugins.device import DeviceInfo, SystemInfo
from kernel_plugins.errors import PluginError
from kernel_plugins.resolving import resolve
from kernel_plugins_testing.conformance import declared_suites

from kernel_plugins_mlu.hooks import MLU

SUITES = declared_suites(MLU, Path(__file__).with_name("conformance.toml"))
assert SUITES.emulated is not None


class TestMluPlugin(SUITES.plugin):  # type: ignore[name-defined,misc]
    """Hook-level checks of the mlu plugin."""

    def test_vendor_without_torch_mlu_module_is_an_error(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        self.plugin.hide(monkeypatch)
        fake = types.ModuleType("torch_mlu")
        fake.__spec__ = None
        monkeypatch.setitem(sys.modules, "torch_mlu", fake)
        with pytest.raises(PluginError, match="torch.mlu does not exist"):
            MLU.detect_device()

    def test_resolve_with_the_hooks_directly(self) -> None:
        device = DeviceInfo(backend="mlu", device_type="mlu", count=1, runtime_version="5.0.0")
        system = SystemInfo(cpu="x86_64", os="linux", torch_version=(2, 13), cxx11_abi=True)
        res = resolve(
            ["torch213-cxx11-mlu50-x86_64-linux", "torch213-cxx11-mlu313-x86_64-linux",
             "torch-universal"],
            device,
            system,
            MLU.list_variants(device, system),
            explain=lambda v: MLU.explain_variant(device, system, v),
        )
        assert res.best == "torch213-cxx11-mlu50-x86_64-linux"
        assert res.accepted[-1] == "torch-universal"


class TestMluEmulated(SUITES.emulated):  # type: ignore[name-defined,misc]
    """Two emulated MLU590s with CNToolkit 3.13.5."""
