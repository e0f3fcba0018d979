"""The npu backend on an EMULATED device (PrivateUse1 on the CPU, not real hardware).

One fresh interpreter runs ``npu_scenario.py`` (the PrivateUse1 rename is once per
process). The standard checks come from the conformance suite
(:class:`~kernel_plugins_testing.conformance.EmulatedBackendConformance`); the test
below it is the Ascend-specific one.
"""

from __future__ import annotations

from pathlib import Path

from kernel_plugins_testing.conformance import EmulatedBackendConformance, Expected


class TestNpuEmulated(EmulatedBackendConformance):
    """Two emulated Ascend 910B2s with CANN 8.3.RC1 (no compute capability)."""

    scenario = Path(__file__).resolve().with_name("npu_scenario.py")
    expected = Expected(
        backend="npu",
        runtime_version="8.3.RC1",
        capability=None,
        device_name="Ascend910B2",
        no_variant_reason="CANN 8.2 does not match the system's CANN 8.3",
    )

    def test_vendor_operators_import_and_refuse_to_run(self) -> None:
        ops = self.recorded("vendor_ops")
        assert ops["raised"] == "EmulationError"
        assert "torch_npu.npu_fusion_attention is a vendor kernel" in ops["text"]

    def test_vendor_facts(self) -> None:
        vendor = self.recorded("vendor")
        assert vendor["cann"] == "8.3.RC1"
        assert vendor["soc"] == 222
        assert vendor["cube_core_num"] == 24
        assert vendor["name"] == "Ascend910B2"
        assert vendor["is_npu"] is True
