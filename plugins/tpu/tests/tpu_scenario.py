"""Full-emulation scenario of the tpu backend (run by ``test_tpu_emulated.py``).

See :mod:`kernel_plugins_testing.plugin_checks` for the generic checks.
"""

from __future__ import annotations

import importlib.util
import tempfile
from importlib import metadata
from pathlib import Path
from typing import Any

from kernel_plugins_testing import plugin_checks as pc
from kernel_plugins_testing.kernel_repos import make_repo


def main() -> pc.Recorder:
    """Emulate two TPU chips and exercise detection, models, loading and the CLI."""
    rec = pc.start_scenario("tpu", devices=2)

    import kernel_plugins
    import torch
    from kernel_plugins.errors import MissingDependencyError

    def vendor() -> dict[str, Any]:
        import torch_tpu

        return {
            "version": torch_tpu.__version__,
            "backends_tpu": bool(torch.backends.tpu.__kernel_plugins_emulated__),
            "privateuse1": torch._C._get_privateuse1_backend_name(),
            "libtpu": metadata.version("libtpu"),
            "libtpu_code": importlib.util.find_spec("libtpu") is not None,
            "name": torch.tpu.get_device_properties(1).name,
            "is_tpu": torch.ones(1, device="tpu:1").is_tpu,
        }

    rec.check("default_device", lambda: kernel_plugins.get_device().backend)
    rec.check("vendor", vendor)
    pc.check_model_forward(rec, "tpu")

    # TPU kernels are noarch (Pallas): an arch variant with a tpu token is refused.
    arch = pc.arch_variant("tpu")
    cuda_arch = pc.arch_variant("cu128")
    tmp = Path(tempfile.mkdtemp(prefix="kp-tpu-scenario-"))
    full = make_repo(tmp / "full", [arch, cuda_arch, "torch-tpu", "torch-cuda", "torch-universal"])
    universal = make_repo(tmp / "universal", [arch, "torch-universal"])
    cuda_only = make_repo(tmp / "cuda-only", [cuda_arch, arch, "torch-cuda"])
    needs_jax = make_repo(tmp / "needs-jax", ["torch-tpu"], python_depends=["jax"])
    pc.check_load(rec, "tpu", full)
    pc.check_loaded_variant(rec, "load_universal", "tpu", universal)

    def missing_jax() -> dict[str, Any]:
        try:
            kernel_plugins.load(needs_jax, device="tpu")
        except MissingDependencyError as e:
            return {"error": "MissingDependencyError", "text": str(e)}
        return {"loaded": True}

    rec.check("missing_jax", missing_jax)
    pc.check_no_variant(rec, "tpu", cuda_only)
    pc.check_reference_fallback(rec, "tpu", cuda_only)
    pc.check_kernelize(rec, "tpu", full)
    pc.check_synchronize(rec, "tpu")
    pc.check_cli(rec, "tpu")
    return rec


if __name__ == "__main__":
    main().emit()
