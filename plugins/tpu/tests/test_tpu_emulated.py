"""The tpu backend on an EMULATED device (PrivateUse1 on the CPU, not real hardware).

One fresh interpreter runs ``tpu_scenario.py`` (the PrivateUse1 rename is once per
process). The standard checks come from the conformance suite
(:class:`~kernel_plugins_testing.conformance.EmulatedBackendConformance`); the tests
below it are the TPU-specific ones.
"""

from __future__ import annotations

from pathlib import Path

from kernel_plugins_testing.conformance import EmulatedBackendConformance, Expected


class TestTpuEmulated(EmulatedBackendConformance):
    """Two emulated TPU v6 lite chips with libtpu 0.0.51; TPU kernels are noarch only."""

    scenario = Path(__file__).resolve().with_name("tpu_scenario.py")
    expected = Expected(
        backend="tpu",
        runtime_version="0.0.51",
        capability=None,
        device_name="TPU v6 lite",
        no_variant_reason="loads no arch variants",
        arch_variants=False,
        noarch_key="load_universal",
        noarch_variant="torch-universal",
        cli_variants=("torch-tpu", "torch-universal"),
    )

    def test_the_stack_shows_what_torch_tpu_sets(self) -> None:
        vendor = self.recorded("vendor")
        assert vendor["backends_tpu"] is True  # torch.backends.tpu, marked emulated
        assert vendor["privateuse1"] == "tpu"
        assert vendor["name"] == "TPU v6 lite"
        assert vendor["is_tpu"] is True

    def test_libtpu_shows_its_0x_version_and_no_code(self) -> None:
        vendor = self.recorded("vendor")
        assert vendor["libtpu"] == "0.0.51"
        assert vendor["libtpu_code"] is False  # only the metadata is emulated

    def test_tpu_is_the_preferred_device(self) -> None:
        assert self.recorded("default_device") == "tpu"

    def test_missing_jax_says_how_to_install_it(self) -> None:
        missing = self.recorded("missing_jax")
        assert missing.get("error") == "MissingDependencyError"
        assert "pip install jax" in missing["text"]
