"""The musa backend on an EMULATED device (PrivateUse1 on the CPU, not real hardware).

One fresh interpreter runs ``musa_scenario.py`` (the PrivateUse1 rename is once per
process). The standard checks come from the conformance suite
(:class:`~kernel_plugins_testing.conformance.EmulatedBackendConformance`); the tests
below it are the MUSA-specific ones.
"""

from __future__ import annotations

from pathlib import Path

from kernel_plugins_testing.conformance import EmulatedBackendConformance, Expected


class TestMusaEmulated(EmulatedBackendConformance):
    """Two emulated MTT S80s (QY1, arch 21) with MUSA SDK 4.3.0.

    The scenario emulates with its own facts; ``list-backends --emulate musa`` in the same
    process joins that set-up.
    """

    scenario = Path(__file__).resolve().with_name("musa_scenario.py")
    expected = Expected(
        backend="musa",
        runtime_version="4030",
        capability=(2, 1),
        device_name="MTT S80",
        no_variant_reason="MUSA 4.2 does not match the system's MUSA 4.3",
    )

    def test_vendor_facts(self) -> None:
        vendor = self.recorded("vendor")
        assert vendor["is_torch_musa"] is True
        assert vendor["version"] == "2.7.1+5ee0a64"
        assert vendor["version_musa"] == "4030"
        assert vendor["arch_list"] == ["mp_21"]
        assert vendor["name"] == "MTT S80"
        assert vendor["bf16"] is False  # QY1 (arch 21) has no BF16
        assert vendor["is_musa"] is True

    def test_capability_range_picks_the_qy1_kernel(self) -> None:
        """The emulated MTT S80 is arch 21 (QY1): the range up to 2.1 wins over 2.2+."""
        path = self.recorded("capability_range")["path"]
        assert path is not None and "/qy1/" in path
