"""Full-emulation scenario of the mlu backend (run by ``test_mlu_emulated.py``).

See :mod:`kernel_plugins_testing.plugin_checks` for the generic checks.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from kernel_plugins_testing import plugin_checks as pc
from kernel_plugins_testing.kernel_repos import make_repo


def main() -> pc.Recorder:
    """Emulate two MLUs and exercise detection, models, loading, fallback and the CLI."""
    rec = pc.start_scenario("mlu", devices=2)

    import torch

    def vendor() -> dict[str, Any]:
        import torch_mlu

        props = torch.mlu.get_device_properties(1)
        return {
            "version": torch_mlu.__version__,
            "version_mlu_is_none": hasattr(torch.version, "mlu") and torch.version.mlu is None,
            "cluster_count": props.cluster_count,
            "name": props.name,
            "bf16": torch.mlu.is_bf16_supported(),
            "is_mlu": torch.ones(1, device="mlu:1").is_mlu,
        }

    rec.check("vendor", vendor)
    pc.check_model_forward(rec, "mlu")
    tmp = Path(tempfile.mkdtemp(prefix="kp-mlu-scenario-"))
    pc.check_variant_selection(rec, "mlu", arch_token="mlu313", other_token="mlu312", workdir=tmp)
    low = make_repo(tmp / "mlu3x", ["torch-mlu"], name="mlu3x")
    high = make_repo(tmp / "mlu5x", ["torch-mlu"], name="mlu5x")
    pc.check_capability_range(rec, "mlu", (low, (3, 9)), (high, (5, 0)))
    pc.check_synchronize(rec, "mlu")
    pc.check_cli(rec, "mlu")
    return rec


if __name__ == "__main__":
    main().emit()
