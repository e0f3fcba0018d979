"""Full-emulation scenario for the npu backend, run in a fresh interpreter.

PyTorch allows one PrivateUse1 device name per process, so ``test_npu_emulated.py``
runs this file in a new interpreter. Every check stores its value (or the error it
raised) in ``RESULTS``, printed as one ``RESULT:<json>`` line at the end.
"""

from __future__ import annotations

import contextlib
import io
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
    """Emulate two Ascend NPUs and exercise detection, models, loading, fallback and the CLI."""
    warnings.filterwarnings("ignore", message="Failed to initialize NumPy")
    import kernel_plugins
    import torch
    import torch.nn.functional as F
    from kernel_plugins.errors import NoCompatibleVariantError
    from kernel_plugins.loader import system_info
    from kernel_plugins.testing import emulate
    from npu_kernel_repos import make_repo

    emulated = emulate("npu", devices=2)
    RESULTS["stand_ins"] = emulated.vendor_stand_ins
    check("device", lambda: kernel_plugins.get_device("npu").to_dict())
    check("device_index", lambda: kernel_plugins.get_device("npu:1").index)

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

    check("vendor", vendor)

    def model_forward() -> dict[str, Any]:
        torch.manual_seed(0)
        model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.GELU(), torch.nn.Linear(16, 4))
        x = torch.randn(5, 8)
        with torch.no_grad():  # a live autograd graph blocks the emulated swap in .to()
            expected = model(x)
        model.to("npu")
        y = model(x.to("npu"))
        return {
            "out_device": str(y.device),
            "param_device": str(next(model.parameters()).device),
            "equal": bool(torch.equal(y.cpu(), expected)),
        }

    check("model", model_forward)

    s = system_info()
    abi = "cxx11" if s.cxx11_abi else "cxx98"
    torch_tag = f"torch{s.torch_version[0]}{s.torch_version[1]}"  # type: ignore[index]
    arch = f"{torch_tag}-{abi}-cann83-{s.cpu}-{s.os}"
    other_cann = f"{torch_tag}-{abi}-cann82-{s.cpu}-{s.os}"
    cuda_arch = f"{torch_tag}-{abi}-cu128-{s.cpu}-{s.os}"
    tmp = Path(tempfile.mkdtemp(prefix="kp-npu-scenario-"))
    full = make_repo(
        tmp / "full",
        [arch, other_cann, cuda_arch, "torch-npu", "torch-cuda", "torch-universal"],
    )
    noarch = make_repo(tmp / "noarch", [other_cann, "torch-npu", "torch-universal"])
    cuda_only = make_repo(tmp / "cuda-only", [cuda_arch, other_cann, "torch-cuda"])
    RESULTS["arch_variant"] = arch

    def load_arch() -> dict[str, Any]:
        mod = kernel_plugins.load(full, device="npu")
        out = mod.double(torch.ones(2, device="npu:1"))
        return {
            "variant": mod.VARIANT,
            "provenance": mod.__kernel_provenance__.to_dict(),
            "out_device": str(out.device),
            "out": out.cpu().tolist(),
        }

    check("load_arch", load_arch)
    check("load_noarch", lambda: kernel_plugins.load(noarch, device="npu").VARIANT)

    def no_variant() -> str:
        try:
            kernel_plugins.load(cuda_only, device="npu")
        except NoCompatibleVariantError as e:
            return str(e)
        return "loaded"

    check("no_variant", no_variant)

    def reference_fallback() -> dict[str, Any]:
        os.environ["LOCAL_KERNELS"] = f"kernels-community/activation={cuda_only}"
        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                act = kernel_plugins.load("activation", device="npu")
        finally:
            del os.environ["LOCAL_KERNELS"]
        x = torch.randn(3, 8)
        out = torch.empty(3, 4, device="npu")
        act.silu_and_mul(out, x.to("npu"))
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
        model.to("npu")
        mapping = {"SiluAndMul": {"npu": LocalLayerRepository(full, layer_name="SiluAndMul")}}
        with use_kernel_mapping(mapping):
            kernelize(model, mode=Mode.INFERENCE, device="npu")
        y = model(x.to("npu"))
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

    def synchronize() -> list[Any]:
        info = kernel_plugins.get_device("npu")
        before = torch.npu.synchronize_calls
        ok = kernel_plugins.get_manager().synchronize(info)
        return [ok, torch.npu.synchronize_calls - before]

    check("synchronize", synchronize)

    def cli() -> dict[str, Any]:
        from kernel_plugins.cli import main as cli_main

        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = cli_main(["list-backends", "--emulate", "npu", "--json"])
        rows = {r["name"]: r for r in json.loads(out.getvalue())["backends"]}
        return {"code": code, "npu": rows["npu"], "stderr": err.getvalue()}

    check("cli", cli)


if __name__ == "__main__":
    main()
    print("RESULT:" + json.dumps(RESULTS, default=str))
