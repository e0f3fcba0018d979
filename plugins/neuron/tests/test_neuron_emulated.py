"""The neuron backend on an EMULATED device (PrivateUse1 on the CPU, not real hardware).

One fresh interpreter runs ``neuron_scenario.py`` (the PrivateUse1 rename is once per
process). The emulation matches the native TorchNeuron backend only, never the older
XLA stack. The standard checks come from the conformance suite
(:class:`~kernel_plugins_testing.conformance.EmulatedBackendConformance`); the tests
below it are the Neuron-specific ones.
"""

from __future__ import annotations

from pathlib import Path

from kernel_plugins_testing.conformance import EmulatedBackendConformance, Expected


class TestNeuronEmulated(EmulatedBackendConformance):
    """Two emulated Trainium2 devices; Neuron kernels are noarch (NKI) only."""

    scenario = Path(__file__).resolve().with_name("neuron_scenario.py")
    expected = Expected(
        backend="neuron",
        runtime_version=None,
        capability=None,
        device_name="Trainium2",
        no_variant_reason="loads no arch variants",
        arch_variants=False,
        noarch_key="load_universal",
        noarch_variant="torch-universal",
        cli_variants=("torch-neuron", "torch-universal"),
    )

    def test_native_backend_stand_ins(self) -> None:
        vendor = self.recorded("vendor")
        assert vendor["privateuse1"] == "neuron"
        assert vendor["accelerator"] == "neuron"
        assert vendor["accelerator_count"] == 2
        assert vendor["name"] == "Trainium2"
        assert vendor["is_neuron"] is True

    def test_neuron_is_the_preferred_device(self) -> None:
        assert self.recorded("default_device") == "neuron"

    def test_missing_nki_says_how_to_install_it(self) -> None:
        missing = self.recorded("missing_nki")
        assert missing.get("error") == "MissingDependencyError"
        assert "pip install nki" in missing["text"]
