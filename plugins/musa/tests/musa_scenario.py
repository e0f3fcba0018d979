"""Full-emulation scenario for the musa backend, run in a fresh interpreter.

PyTorch allows one PrivateUse1 device name per process, so ``test_musa_emulated.py``
runs this file in a new interpreter. Every check stores its value (or the error it
raised) in ``RESULTS``, printed as one ``RESULT:<json>`` line at the end.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

RESULTS: dict[str, Any] = {}


def check(key: str, fn: Callable[[], Any]) -> None:
    """Store ``fn()`` under ``key``, or the error it raised."""
    try:
        RESULTS[key] = fn()
    except Exception as e:  # noqa: BLE001 - recorded so one failure does not hide the others
        RESULTS[key] = {"error": type(e).__name__, "message": str(e)}


def main() -> None:
    """Emulate two MUSA GPUs (QY1, SDK 4.3.0) and exercise detection, models, loading."""
    warnings.filterwarnings("ignore", message="Failed to initialize NumPy")
    import kernel_plugins
    import torch
    import torch.nn.functional as F
    from kernel_plugins.errors import NoCompatibleVariantError
    from kernel_plugins.loader import system_info
    from kernel_plugins.testing import emulate
    from musa_kernel_repos import make_repo

    emulated = emulate("musa", devices=2, device_name="MTT S80", capability=(2, 1))
    RESULTS["stand_ins"] = emulated.vendor_stand_ins
    check("device", lambda: kernel_plugins.get_device("musa").to_dict())
    check("device_index", lambda: kernel_plugins.get_device("musa:1").index)

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

    check("vendor", vendor)

    def model_forward() -> dict[str, Any]:
        torch.manual_seed(0)
        model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.GELU(), torch.nn.Linear(16, 4))
        x = torch.randn(5, 8)
        with torch.no_grad():  # a live autograd graph blocks the emulated swap in .to()
            expected = model(x)
        model.to("musa")
        y = model(x.to("musa"))
        return {
            "out_device": str(y.device),
            "param_device": str(next(model.parameters()).device),
            "equal": bool(torch.equal(y.cpu(), expected)),
        }

    check("model", model_forward)

    s = system_info()
    abi = "cxx11" if s.cxx11_abi else "cxx98"
    torch_tag = f"torch{s.torch_version[0]}{s.torch_version[1]}"  # type: ignore[index]
    arch = f"{torch_tag}-{abi}-musa43-{s.cpu}-{s.os}"
    other_sdk = f"{torch_tag}-{abi}-musa42-{s.cpu}-{s.os}"
    cuda_arch = f"{torch_tag}-{abi}-cu128-{s.cpu}-{s.os}"
    tmp = Path(tempfile.mkdtemp(prefix="kp-musa-scenario-"))
    full = make_repo(
        tmp / "full",
        [arch, other_sdk, cuda_arch, "torch-musa", "torch-cuda", "torch-universal"],
    )
    noarch = make_repo(tmp / "noarch", [other_sdk, "torch-musa", "torch-universal"])
    cuda_only = make_repo(tmp / "cuda-only", [cuda_arch, other_sdk, "torch-cuda"])
    RESULTS["arch_variant"] = arch

    def load_arch() -> dict[str, Any]:
        mod = kernel_plugins.load(full, device="musa")
        out = mod.double(torch.ones(2, device="musa:1"))
        return {
            "variant": mod.VARIANT,
            "provenance": mod.__kernel_provenance__.to_dict(),
            "out_device": str(out.device),
            "out": out.cpu().tolist(),
        }

    check("load_arch", load_arch)
    check("load_noarch", lambda: kernel_plugins.load(noarch, device="musa").VARIANT)

    def no_variant() -> str:
        try:
            kernel_plugins.load(cuda_only, device="musa")
        except NoCompatibleVariantError as e:
            return str(e)
        return "loaded"

    check("no_variant", no_variant)

    def reference_fallback() -> dict[str, Any]:
        os.environ["LOCAL_KERNELS"] = f"kernels-community/activation={cuda_only}"
        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                act = kernel_plugins.load("activation", device="musa")
        finally:
            del os.environ["LOCAL_KERNELS"]
        x = torch.randn(3, 8)
        out = torch.empty(3, 4, device="musa")
        act.silu_and_mul(out, x.to("musa"))
        prov = act.__kernel_provenance__
        return {
            "source": prov.source,
            "emulated": prov.emulated,
            "notes": list(prov.notes),
            "warnings": [str(w.message) for w in caught],
            "out_device": str(out.device),
            "equal": bool(torch.equal(out.cpu(), F.silu(x[..., :4]) * x[..., 4:])),
        }

    check("fallback", reference_fallback)

    def kernelized() -> dict[str, Any]:
        from kernel_plugins.layers import (
            LocalLayerRepository,
            Mode,
            kernel_choice,
            kernelize,
            use_kernel_forward_from_hub,
            use_kernel_mapping,
        )

        @use_kernel_forward_from_hub("SiluAndMul")
        class SiluAndMul(torch.nn.Module):
            def forward(self, x: torch.Tensor) -> torch.Tensor:
                d = x.shape[-1] // 2
                return F.silu(x[..., :d]) * x[..., d:]

        torch.manual_seed(1)
        model = torch.nn.Sequential(torch.nn.Linear(8, 8), SiluAndMul())
        x = torch.randn(4, 8)
        with torch.no_grad():
            expected = model(x)
        model.to("musa")
        mapping = {"SiluAndMul": {"musa": LocalLayerRepository(full, layer_name="SiluAndMul")}}
        with use_kernel_mapping(mapping):
            kernelize(model, mode=Mode.INFERENCE, device="musa")
        y = model(x.to("musa"))
        choice = kernel_choice(model[1])
        prov = getattr(choice, "provenance", None)
        return {
            "uses_kernel": bool(choice and choice.uses_kernel),
            "variant": getattr(prov, "variant", None),
            "emulated": getattr(prov, "emulated", None),
            "out_device": str(y.device),
            "equal": bool(torch.equal(y.cpu(), expected)),
        }

    check("kernelize", kernelized)

    def capability_range() -> dict[str, Any]:
        from kernel_plugins.layers import (
            CapabilityRange,
            LocalLayerRepository,
            Mode,
            kernel_choice,
            kernelize,
            use_kernel_forward_from_hub,
            use_kernel_mapping,
        )

        @use_kernel_forward_from_hub("SiluAndMul")
        class SiluAndMul(torch.nn.Module):
            def forward(self, x: torch.Tensor) -> torch.Tensor:
                d = x.shape[-1] // 2
                return F.silu(x[..., :d]) * x[..., d:]

        low = make_repo(tmp / "qy1", ["torch-musa"], name="qy1")
        high = make_repo(tmp / "qy2", ["torch-musa"], name="qy2")
        mapping = {"SiluAndMul": {"musa": {
            CapabilityRange(max=(2, 1)): LocalLayerRepository(low, layer_name="SiluAndMul"),
            CapabilityRange(min=(2, 2)): LocalLayerRepository(high, layer_name="SiluAndMul"),
        }}}
        layer = SiluAndMul().to("musa")
        with use_kernel_mapping(mapping):
            kernelize(layer, mode=Mode.INFERENCE, device="musa")
        choice = kernel_choice(layer)
        return {"path": getattr(getattr(choice, "provenance", None), "path", None)}

    check("capability_range", capability_range)

    def synchronize() -> list[Any]:
        info = kernel_plugins.get_device("musa")
        before = torch.musa.synchronize_calls
        ok = kernel_plugins.get_manager().synchronize(info)
        return [ok, torch.musa.synchronize_calls - before]

    check("synchronize", synchronize)


if __name__ == "__main__":
    main()
    print("RESULT:" + json.dumps(RESULTS, default=str))
