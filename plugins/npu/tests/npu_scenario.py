"""Full-emulation scenario of the npu backend (run by ``test_npu_emulated.py``).

See :mod:`kernel_plugins_testing.plugin_checks` for the generic checks.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from kernel_plugins_testing import plugin_checks as pc


def main() -> pc.Recorder:
    """Emulate two Ascend NPUs and exercise detection, models, loading, fallback and the CLI."""
    rec = pc.start_scenario("npu", devices=2)

    import torch

    def vendor() -> dict[str, Any]:
        import torch_npu

        props = torch.npu.get_device_properties(1)
        return {
            "version": torch_npu.__version__,
            "cann": torch.version.cann,
            "soc": torch.npu.get_soc_version(),
            "cube_core_num": props.cube_core_num,
            "name": props.name,
            "is_npu": torch.ones(1, device="npu:1").is_npu,
        }

    rec.check("vendor", vendor)

    def vendor_ops() -> dict[str, Any]:
        from torch_npu import npu_fusion_attention  # what transformers imports

        try:
            npu_fusion_attention(torch.ones(1, device="npu:1"))
        except Exception as e:  # noqa: BLE001 - recorded for the test
            return {"raised": type(e).__name__, "text": str(e)}
        return {"raised": None}

    rec.check("vendor_ops", vendor_ops)
    pc.check_model_forward(rec, "npu")
    tmp = Path(tempfile.mkdtemp(prefix="kp-npu-scenario-"))
    pc.check_variant_selection(rec, "npu", arch_token="cann83", other_token="cann82", workdir=tmp)
    pc.check_synchronize(rec, "npu")
    pc.check_cli(rec, "npu")
    return rec


if __name__ == "__main__":
    main().emit()
