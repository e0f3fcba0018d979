"""Full-emulation scenario of the neuron backend (run by ``test_neuron_emulated.py``).

See :mod:`kernel_plugins_testing.plugin_checks` for the generic checks.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from kernel_plugins_testing import plugin_checks as pc
from kernel_plugins_testing.kernel_repos import make_repo


def main() -> pc.Recorder:
    """Emulate two Neuron devices and exercise detection, models, loading and the CLI."""
    rec = pc.start_scenario("neuron", devices=2)

    import kernel_plugins
    import torch
    from kernel_plugins.errors import MissingDependencyError

    def vendor() -> dict[str, Any]:
        import torch_neuronx

        return {
            "version": torch_neuronx.__version__,
            "privateuse1": torch._C._get_privateuse1_backend_name(),
            "accelerator": str(torch.accelerator.current_accelerator()),
            "accelerator_count": torch.accelerator.device_count(),
            "name": torch.neuron.get_device_properties(1).name,
            "is_neuron": torch.ones(1, device="neuron:1").is_neuron,
        }

    rec.check("default_device", lambda: kernel_plugins.get_device().backend)
    rec.check("vendor", vendor)
    pc.check_model_forward(rec, "neuron")

    # Neuron kernels are noarch (NKI): an arch variant with a neuron token is refused.
    arch = pc.arch_variant("neuron")
    cuda_arch = pc.arch_variant("cu128")
    tmp = Path(tempfile.mkdtemp(prefix="kp-neuron-scenario-"))
    full = make_repo(
        tmp / "full", [arch, cuda_arch, "torch-neuron", "torch-cuda", "torch-universal"]
    )
    universal = make_repo(tmp / "universal", [arch, "torch-universal"])
    cuda_only = make_repo(tmp / "cuda-only", [cuda_arch, arch, "torch-cuda"])
    needs_nki = make_repo(tmp / "needs-nki", ["torch-neuron"], python_depends=["nki"])
    pc.check_load(rec, "neuron", full)
    pc.check_loaded_variant(rec, "load_universal", "neuron", universal)

    def missing_nki() -> dict[str, Any]:
        try:
            kernel_plugins.load(needs_nki, device="neuron")
        except MissingDependencyError as e:
            return {"error": "MissingDependencyError", "text": str(e)}
        return {"loaded": True}

    rec.check("missing_nki", missing_nki)
    pc.check_no_variant(rec, "neuron", cuda_only)
    pc.check_reference_fallback(rec, "neuron", cuda_only)
    pc.check_kernelize(rec, "neuron", full)
    pc.check_synchronize(rec, "neuron")
    pc.check_cli(rec, "neuron")
    return rec


if __name__ == "__main__":
    main().emit()
