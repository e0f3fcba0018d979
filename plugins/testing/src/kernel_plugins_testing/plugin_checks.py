"""Checks a backend plugin runs against its EMULATED device, in a scenario script.

A plugin proves itself end to end by emulating its device (PyTorch allows one
PrivateUse1 name per process, so in a fresh interpreter) and exercising detection,
models, kernel loading, the reference fallback, kernelize, synchronize and the CLI.
Those steps are the same for every backend; this module has them, parameterised by
the device type, so that a plugin's scenario script holds only its vendor checks and
the variant names its kernels use.

Every check records its value, or the error it raised, in a :class:`Recorder` under
a fixed key (documented per function), so one failure does not hide the others;
:meth:`Recorder.emit` prints them as one ``RESULT:<json>`` line for the test that ran
the script. Importing this module does not import torch; the checks do.

Example (a scenario script)::

    rec = start_scenario("mlu", devices=2)
    repo = make_repo(tmp / "full", [arch_variant("mlu313"), "torch-mlu"])
    check_load(rec, "mlu", repo)
    check_synchronize(rec, "mlu")
    rec.emit()
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = [
    "Recorder",
    "arch_variant",
    "check_capability_range",
    "check_arch_step",
    "check_cli",
    "check_device",
    "check_kernelize",
    "check_load",
    "check_loaded_variant",
    "check_model_forward",
    "check_no_variant",
    "check_reference_fallback",
    "check_synchronize",
    "check_variant_selection",
    "start_scenario",
]


@dataclass
class Recorder:
    """Values (or errors) of a scenario's checks, by key.

    Attributes:
        results: key -> the check's value, or ``{"error": <type name>, "message": ...}``.
    """

    results: dict[str, Any] = field(default_factory=dict)

    def check(self, key: str, fn: Callable[[], Any]) -> None:
        """Store ``fn()`` under ``key``, or the error it raised."""
        try:
            self.results[key] = fn()
        except Exception as e:  # noqa: BLE001 - recorded so one failure does not hide the others
            self.results[key] = {"error": type(e).__name__, "message": str(e)}

    def emit(self) -> None:
        """Print the results as one ``RESULT:<json>`` line (non-JSON values as text)."""
        print("RESULT:" + json.dumps(self.results, default=str))


def start_scenario(device: str, devices: int = 2, **facts: Any) -> Recorder:
    """Emulate ``devices`` devices of type ``device`` and run the first checks.

    Silences NumPy's "Failed to initialize NumPy" warning, calls
    :func:`kernel_plugins_testing.emulate` with ``facts``, records ``stand_ins``
    (whether the plugin installed its vendor stand-ins), then :func:`check_device`.

    :return: the :class:`Recorder` for the scenario's further checks.
    """
    from . import emulate

    warnings.filterwarnings("ignore", message="Failed to initialize NumPy")
    rec = Recorder()
    rec.results["stand_ins"] = emulate(device, devices, **facts).vendor_stand_ins
    check_device(rec, device)
    return rec


def arch_variant(token: str) -> str:
    """The ABI-tagged arch variant name for ``token`` on this system.

    ``torch<major><minor>-<cxx11|cxx98>-<token>-<cpu>-<os>``, e.g.
    ``torch213-cxx11-mlu313-x86_64-linux`` (imports torch).
    """
    from kernel_plugins.loader import system_info

    s = system_info()
    if s.torch_version is None:
        raise RuntimeError("arch_variant needs torch installed (it names the torch version)")
    abi = "cxx11" if s.cxx11_abi else "cxx98"
    return f"torch{s.torch_version[0]}{s.torch_version[1]}-{abi}-{token}-{s.cpu}-{s.os}"


def check_device(rec: Recorder, device: str) -> None:
    """``device``: ``get_device(device).to_dict()``; ``device_index``: the index of ``<device>:1``."""
    from kernel_plugins.detection import get_device

    rec.check("device", lambda: get_device(device).to_dict())
    rec.check("device_index", lambda: get_device(f"{device}:1").index)


def check_model_forward(rec: Recorder, device: str) -> None:
    """``model``: a small MLP moved to ``device`` gives the CPU's output there.

    Records ``{"out_device", "param_device", "equal"}``.
    """
    import torch

    def run() -> dict[str, Any]:
        torch.manual_seed(0)
        model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.GELU(), torch.nn.Linear(16, 4))
        x = torch.randn(5, 8)
        with torch.no_grad():  # a live autograd graph blocks the emulated swap in .to()
            expected = model(x)
        model.to(device)
        y = model(x.to(device))
        return {
            "out_device": str(y.device),
            "param_device": str(next(model.parameters()).device),
            "equal": bool(torch.equal(y.cpu(), expected)),
        }

    rec.check("model", run)


def check_load(rec: Recorder, device: str, repo: Path, key: str = "load_arch") -> None:
    """``key``: load ``repo`` for ``device`` and run its ``double`` on ``<device>:1``.

    Records ``{"variant", "provenance" (as a dict), "out_device", "out"}``.
    """
    import torch

    from kernel_plugins.loader import load

    def run() -> dict[str, Any]:
        mod = load(repo, device=device)
        out = mod.double(torch.ones(2, device=f"{device}:1"))
        return {
            "variant": mod.VARIANT,
            "provenance": mod.__kernel_provenance__.to_dict(),
            "out_device": str(out.device),
            "out": out.cpu().tolist(),
        }

    rec.check(key, run)


def check_loaded_variant(rec: Recorder, key: str, device: str, repo: Path) -> None:
    """``key``: the ``VARIANT`` of ``repo`` as loaded for ``device``."""
    from kernel_plugins.loader import load

    rec.check(key, lambda: load(repo, device=device).VARIANT)


def check_no_variant(rec: Recorder, device: str, repo: Path) -> None:
    """``no_variant``: the text of the NoCompatibleVariantError for ``repo`` (or ``"loaded"``)."""
    from kernel_plugins.errors import NoCompatibleVariantError
    from kernel_plugins.loader import load

    def run() -> str:
        try:
            load(repo, device=device)
        except NoCompatibleVariantError as e:
            return str(e)
        return "loaded"

    rec.check("no_variant", run)


def check_reference_fallback(rec: Recorder, device: str, repo: Path) -> None:
    """``fallback``: ``activation`` served by ``repo`` (no variant for ``device``) falls back.

    ``LOCAL_KERNELS`` points ``kernels-community/activation`` at ``repo`` for the load.
    Records ``{"source", "emulated", "notes", "warnings", "out_device", "equal"}``.
    """
    import torch
    import torch.nn.functional as F

    from kernel_plugins.loader import load

    def run() -> dict[str, Any]:
        os.environ["LOCAL_KERNELS"] = f"kernels-community/activation={repo}"
        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                act = load("activation", device=device)
        finally:
            del os.environ["LOCAL_KERNELS"]
        x = torch.randn(3, 8)
        out = torch.empty(3, 4, device=device)
        act.silu_and_mul(out, x.to(device))
        prov = act.__kernel_provenance__
        return {
            "source": prov.source,
            "emulated": prov.emulated,
            "notes": list(prov.notes),
            "warnings": [str(w.message) for w in caught],
            "out_device": str(out.device),
            "equal": bool(torch.equal(out.cpu(), F.silu(x[..., :4]) * x[..., 4:])),
        }

    rec.check("fallback", run)


def _silu_and_mul_layer() -> Any:
    """A fresh ``SiluAndMul`` layer class, registered for kernels from the Hub."""
    import torch
    import torch.nn.functional as F

    from kernel_plugins.layers import use_kernel_forward_from_hub

    @use_kernel_forward_from_hub("SiluAndMul")
    class SiluAndMul(torch.nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            d = x.shape[-1] // 2
            return F.silu(x[..., :d]) * x[..., d:]

    return SiluAndMul


def check_kernelize(rec: Recorder, device: str, repo: Path) -> None:
    """``kernelize``: a model's ``SiluAndMul`` swapped for ``repo``'s layer on ``device``.

    Records ``{"uses_kernel", "variant", "emulated", "out_device", "equal"}``.
    """
    import torch

    from kernel_plugins import layers as kl

    def run() -> dict[str, Any]:
        torch.manual_seed(1)
        model = torch.nn.Sequential(torch.nn.Linear(8, 8), _silu_and_mul_layer()())
        x = torch.randn(4, 8)
        with torch.no_grad():
            expected = model(x)
        model.to(device)
        mapping = {"SiluAndMul": {device: kl.LocalLayerRepository(repo, layer_name="SiluAndMul")}}
        with kl.use_kernel_mapping(mapping):
            kl.kernelize(model, mode=kl.Mode.INFERENCE, device=device)
        y = model(x.to(device))
        choice = kl.kernel_choice(model[1])
        prov = getattr(choice, "provenance", None)
        return {
            "uses_kernel": bool(choice and choice.uses_kernel),
            "variant": getattr(prov, "variant", None),
            "emulated": getattr(prov, "emulated", None),
            "out_device": str(y.device),
            "equal": bool(torch.equal(y.cpu(), expected)),
        }

    rec.check("kernelize", run)


def check_capability_range(
    rec: Recorder,
    device: str,
    low: tuple[Path, tuple[int, int]],
    high: tuple[Path, tuple[int, int]],
) -> None:
    """``capability_range``: kernelize picks by the device's capability.

    :param low: a repository and the highest capability it serves.
    :param high: a repository and the lowest capability it serves.

    Records ``{"path"}``: the folder of the chosen kernel.
    """
    from kernel_plugins import layers as kl

    def run() -> dict[str, Any]:
        (low_repo, low_max), (high_repo, high_min) = low, high
        mapping = {"SiluAndMul": {device: {
            kl.CapabilityRange(max=low_max): kl.LocalLayerRepository(
                low_repo, layer_name="SiluAndMul"
            ),
            kl.CapabilityRange(min=high_min): kl.LocalLayerRepository(
                high_repo, layer_name="SiluAndMul"
            ),
        }}}
        layer = _silu_and_mul_layer()().to(device)
        with kl.use_kernel_mapping(mapping):
            kl.kernelize(layer, mode=kl.Mode.INFERENCE, device=device)
        choice = kl.kernel_choice(layer)
        return {"path": getattr(getattr(choice, "provenance", None), "path", None)}

    rec.check("capability_range", run)


def check_variant_selection(
    rec: Recorder, device: str, *, arch_token: str, other_token: str, workdir: Path
) -> None:
    """The loading checks of a backend whose arch variants carry a versioned token.

    Writes three repositories under ``workdir`` with :func:`make_repo
    <kernel_plugins_testing.kernel_repos.make_repo>` (``full``: both tokens, a CUDA
    arch variant, ``torch-<device>``, ``torch-cuda``, ``torch-universal``; ``noarch``:
    ``other_token``, ``torch-<device>``, universal; ``cuda-only``: nothing for
    ``device``) and records ``arch_variant`` (the name for ``arch_token``), then
    :func:`check_load` (``load_arch``), :func:`check_loaded_variant` (``load_noarch``),
    :func:`check_no_variant`, :func:`check_reference_fallback` and
    :func:`check_kernelize`.

    :param arch_token: the token the emulated system accepts, e.g. ``"mlu313"``.
    :param other_token: a token of another version it refuses, e.g. ``"mlu312"``.
    """
    from .kernel_repos import make_repo

    arch, other, cuda_arch = (arch_variant(t) for t in (arch_token, other_token, "cu128"))
    noarch = f"torch-{device}"
    full = make_repo(
        workdir / "full", [arch, other, cuda_arch, noarch, "torch-cuda", "torch-universal"]
    )
    fallback = make_repo(workdir / "noarch", [other, noarch, "torch-universal"])
    cuda_only = make_repo(workdir / "cuda-only", [cuda_arch, other, "torch-cuda"])
    rec.results["arch_variant"] = arch
    check_load(rec, device, full)
    check_loaded_variant(rec, "load_noarch", device, fallback)
    check_no_variant(rec, device, cuda_only)
    check_reference_fallback(rec, device, cuda_only)
    check_kernelize(rec, device, full)


def check_arch_step(
    rec: Recorder, device: str, *, arch_token: str, arch: str, other: str, workdir: Path
) -> None:
    """``arch_step``: the architecture step on the emulated device.

    The arch variant for ``arch_token`` built for ``other`` (an architecture the device
    does not run) is refused in favour of ``torch-<device>``; built for ``other`` and
    ``arch`` (the device's), it is chosen. Records ``{"device_arch", "refused",
    "chosen"}``: the device's architecture, and the variant loaded from each repository
    (for the refused one also its line of the resolution trace).
    """
    from kernel_plugins.detection import get_device
    from kernel_plugins.loader import load
    from kernel_plugins.resolving import resolve_variants

    from .kernel_repos import make_repo

    def run() -> dict[str, Any]:
        best, noarch = arch_variant(arch_token), f"torch-{device}"
        refused = make_repo(workdir / "arch-refused", [best, noarch], archs={best: [other]})
        chosen = make_repo(workdir / "arch-chosen", [best, noarch], archs={best: [other, arch]})
        trace = resolve_variants([best, noarch], device, archs={best: [other]}).trace()
        return {
            "device_arch": get_device(device).arch,
            "refused": [load(refused, device=device).VARIANT,
                        next(line.strip() for line in trace.splitlines() if best in line)],
            "chosen": load(chosen, device=device).VARIANT,
        }

    rec.check("arch_step", run)


def check_synchronize(rec: Recorder, device: str) -> None:
    """``synchronize``: ``[handled, synchronize calls the emulated module counted]``."""
    import torch

    from kernel_plugins.detection import get_device
    from kernel_plugins.plugins import get_manager

    def run() -> list[Any]:
        info = get_device(device)
        module = getattr(torch, device)
        before = module.synchronize_calls
        ok = get_manager().synchronize(info)
        return [ok, module.synchronize_calls - before]

    rec.check("synchronize", run)


def check_cli(rec: Recorder, device: str) -> None:
    """``cli``: ``list-backends --emulate <device> --json``.

    Records ``{"code", <device>: the backend's row, "stderr"}``.
    """

    def run() -> dict[str, Any]:
        from kernel_plugins.cli import main as cli_main

        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = cli_main(["list-backends", "--emulate", device, "--json"])
        rows = {r["name"]: r for r in json.loads(out.getvalue())["backends"]}
        return {"code": code, device: rows[device], "stderr": err.getvalue()}

    rec.check("cli", run)
