"""The mlu backend on an EMULATED device (PrivateUse1 on the CPU, not real hardware).

One fresh interpreter runs ``mlu_scenario.py`` (the PrivateUse1 rename is once per
process). The standard checks come from the conformance suite
(:class:`~kernel_plugins_testing.conformance.EmulatedBackendConformance`); the tests
below it are the Cambricon-specific ones.
"""

from __future__ import annotations

from pathlib import Path

from kernel_plugins_testing.conformance import EmulatedBackendConformance, Expected


class TestMluEmulated(EmulatedBackendConformance):
    """Two emulated MLU590s with CNToolkit 3.13.5."""

    scenario = Path(__file__).resolve().with_name("mlu_scenario.py")
    expected = Expected(
        backend="mlu",
        runtime_version="3.13.5",
        capability=(5, 0),
        device_name="MLU590-H8",
        no_variant_reason="CNToolkit 3.12 does not match the system's CNToolkit 3.13",
    )

    def test_vendor_facts(self) -> None:
        vendor = self.recorded("vendor")
        assert vendor["version"].startswith("1.22.0+torch")
        assert vendor["version_mlu_is_none"] is True
        assert vendor["cluster_count"] == 12
        assert vendor["name"] == "MLU590-H8"
        assert vendor["bf16"] is True
        assert vendor["is_mlu"] is True

    def test_capability_range_picks_the_mlu5_kernel(self) -> None:
        """The emulated MLU590 has capability 5.0: the 5.x mapping entry wins over 3.x."""
        path = self.recorded("capability_range")["path"]
        assert path is not None and "/mlu5x/" in path
