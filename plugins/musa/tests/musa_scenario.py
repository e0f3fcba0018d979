"""Full-emulation scenario of the musa backend (run by ``test_musa_emulated.py``).

See :mod:`kernel_plugins_testing.plugin_checks` for the generic checks.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from kernel_plugins_testing import plugin_checks as pc
from kernel_plugins_testing.kernel_repos import make_repo


def main() -> pc.Recorder:
    """Emulate two MUSA GPUs (QY1, SDK 4.3.0) and exercise detection, models, loading."""
    rec = pc.start_scenario("musa", devices=2, device_name="MTT S80", capability=(2, 1))

    import torch

    def vendor() -> dict[str, Any]:
        import torch_musa

        return {
            "is_torch_musa": torch_musa is torch.musa,
            "version": torch_musa.__version__,
            "version_musa": torch.version.musa,
            "arch_list": torch.musa.get_arch_list(),
            "name": torch.musa.get_device_properties(1).name,
            "bf16": torch.musa.is_bf16_supported(),
            "is_musa": torch.ones(1, device="musa:1").is_musa,
        }

    rec.check("vendor", vendor)
    pc.check_model_forward(rec, "musa")
    tmp = Path(tempfile.mkdtemp(prefix="kp-musa-scenario-"))
    pc.check_variant_selection(rec, "musa", arch_token="musa43", other_token="musa42", workdir=tmp)
    low = make_repo(tmp / "qy1", ["torch-musa"], name="qy1")
    high = make_repo(tmp / "qy2", ["torch-musa"], name="qy2")
    pc.check_capability_range(rec, "musa", (low, (2, 1)), (high, (2, 2)))
    pc.check_synchronize(rec, "musa")
    pc.check_cli(rec, "musa")
    return rec


if __name__ == "__main__":
    main().emit()
