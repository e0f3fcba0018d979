"""One measurement in a fresh process, for either package (run by the harness, not imported).

Usage: ``python probe.py '<json task>'``. Needs only the standard library, torch and the
package measured (``kernel_plugins`` or ``kernels``), so the same file runs in both
virtual environments. Prints one line ``@@PROBE@@ <json>`` with the results.

Every task imports torch first (timed apart) and then collects its garbage (untimed,
:func:`_import_torch`), so that no timed region of either package pays for sweeping torch.

Tasks:

* ``load``: import torch (timed apart), then import the package and load ``repo_id`` at
  ``revision`` or ``version`` (timed: ``load_s``); call the kernel once to prove it works.
* ``local``: import torch (timed apart), then import the package and load the local
  repository ``repo_path`` (timed together: ``first_s``, and as CPU time ``first_cpu_s``;
  apart: ``import_s``, ``load_s``).
* ``inproc``: in one process, kernelize a model with ``layers`` marked layers (first call,
  which loads the kernel; then ``repeats`` fresh models of that size with the kernel
  loaded: ``loaded_s``; then the first model ``repeats`` times again: ``again_s``; each
  also as CPU time of the process, ``*_cpu_s``), time calls of a kernelized layer against
  calling the kernel's forward directly, and resolve the variant names in ``names_file``
  (first, then repeats).

``profile`` (optional) names a file: the region named by ``profile_region`` (``load``,
``local``, ``kernelize-first``, ``kernelize`` (one more fresh model, kernel loaded),
``resolution``) then runs under cProfile and the top functions are written there.
"""

from __future__ import annotations

import contextlib
import cProfile
import gc
import io
import json
import pstats
import statistics
import sys
import time
from pathlib import Path
from typing import Any

MARK = "@@PROBE@@"


@contextlib.contextmanager
def _maybe_profile(task: dict[str, Any], region: str):  # type: ignore[no-untyped-def]
    path = task.get("profile")
    if not path or task.get("profile_region", "load") != region:
        yield
        return
    prof = cProfile.Profile()
    prof.enable()
    try:
        yield
    finally:
        prof.disable()
        out = io.StringIO()
        stats = pstats.Stats(prof, stream=out)
        stats.sort_stats("cumulative").print_stats(30)
        stats.sort_stats("tottime").print_stats(20)
        Path(path).write_text(out.getvalue())


@contextlib.contextmanager
def _full_collections(into: list[float]):  # type: ignore[no-untyped-def]
    """Time the full (generation 2) garbage collections inside the block. The first one after
    torch is imported sweeps torch's objects (about 0.1 s) and lands in whichever code
    allocates enough; the report says how much of a load it was."""
    started: list[float] = []

    def note(phase: str, info: dict[str, int]) -> None:
        if info["generation"] == 2 and phase == "start":
            started.append(time.perf_counter())
        elif info["generation"] == 2 and started:
            into.append(time.perf_counter() - started.pop())

    gc.callbacks.append(note)
    try:
        yield
    finally:
        gc.callbacks.remove(note)


def _import_torch() -> float:
    """Import torch (the seconds it took), then collect its garbage, untimed: the first full
    collection after the import sweeps torch's objects (about 0.1 s) and would otherwise land
    in whichever timed code of either package allocates enough first."""
    t0 = time.perf_counter()
    import torch  # noqa: F401

    took = time.perf_counter() - t0
    gc.collect()
    return took


def _load(task: dict[str, Any]) -> dict[str, Any]:
    torch_s = _import_torch()
    import torch

    kwargs = {k: task[k] for k in ("revision", "version") if task.get(k) is not None}
    collections: list[float] = []
    t1 = time.perf_counter()
    with _maybe_profile(task, "load"), _full_collections(collections):
        if task["package"] == "kernel_plugins":
            import kernel_plugins

            module = kernel_plugins.load(task["repo_id"], trust_remote_code=True, **kwargs)
        else:
            import kernels

            module = kernels.get_kernel(task["repo_id"], trust_remote_code=True, **kwargs)
    load_s = time.perf_counter() - t1
    out = torch.empty(2, 4)
    module.silu_and_mul(out, torch.ones(2, 8))
    return {"torch_s": torch_s, "load_s": load_s, "full_gc_s": sum(collections),
            "variant": Path(module.__file__).parent.name}


def _local(task: dict[str, Any]) -> dict[str, Any]:
    torch_s = _import_torch()
    import torch

    c1 = time.process_time()
    t1 = time.perf_counter()
    with _maybe_profile(task, "local"):
        if task["package"] == "kernel_plugins":
            import kernel_plugins

            t2 = time.perf_counter()
            module = kernel_plugins.load(Path(task["repo_path"]), device="cpu")
        else:
            import kernels

            t2 = time.perf_counter()
            module = kernels.get_local_kernel(Path(task["repo_path"]))
    t3 = time.perf_counter()
    cpu = time.process_time() - c1
    out = torch.empty(2, 4)
    module.silu_and_mul(out, torch.ones(2, 8))
    return {
        "torch_s": torch_s,
        "import_s": t2 - t1,
        "load_s": t3 - t2,
        "first_s": t3 - t1,
        "first_cpu_s": cpu,
        "variant": Path(module.__file__).parent.name,
        "heavy_modules": sorted(m for m in ("pydantic", "huggingface_hub") if m in sys.modules),
    }


def _api(package: str) -> Any:
    """The layer API of the package as a namespace."""
    if package == "kernel_plugins":
        from kernel_plugins import layers as api
    else:
        import kernels as api
    return api


def _kernelize(task: dict[str, Any], api: Any) -> tuple[dict[str, Any], Any]:
    import torch
    from torch import nn

    @api.use_kernel_forward_from_hub("SiluAndMul")
    class SiluAndMul(nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            d = x.shape[-1] // 2
            return nn.functional.silu(x[..., :d]) * x[..., d:]

    class Block(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.up = nn.Linear(4, 8)
            self.act = SiluAndMul()

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.act(self.up(x))

    def timed(model: Any) -> tuple[float, float]:
        c, t = time.process_time(), time.perf_counter()
        api.kernelize(model, mode=api.Mode.INFERENCE, device="cpu")
        return time.perf_counter() - t, time.process_time() - c

    def build() -> Any:
        return nn.Sequential(*[Block() for _ in range(task["layers"])])

    model = build()
    repo = api.LocalLayerRepository(Path(task["repo_path"]), layer_name="SiluAndMul")
    api.register_kernel_mapping({"SiluAndMul": {"cpu": repo}})
    with _maybe_profile(task, "kernelize-first"):
        first, first_cpu = timed(model)
    out: dict[str, Any] = {"first_s": first, "first_cpu_s": first_cpu}
    for key, make in (("loaded", build), ("again", lambda: model)):
        runs = [timed(make()) for _ in range(task["repeats"])]
        out[f"{key}_s"] = [w for w, _ in runs]
        out[f"{key}_cpu_s"] = [c for _, c in runs]
    if task.get("profile") and task.get("profile_region") == "kernelize":
        with _maybe_profile(task, "kernelize"):  # a profiled run of its own, only when asked
            timed(build())
    out["replaced"] = sum(
        1 for b in model if getattr(b.act.forward, "__func__", None) is not SiluAndMul.forward
    )
    return out, model[0].act


def _per_call(fn: Any, n: int) -> float:
    t = time.perf_counter()
    fn(n)
    return (time.perf_counter() - t) / n


def _call_overhead(layer: Any, calls: int, repeats: int) -> dict[str, Any]:
    import torch
    from torch import nn

    x = torch.randn(2, 8)
    fwd = layer.forward.__func__
    plain = type("Plain", (nn.Module,), {"forward": fwd})()

    def direct(n: int) -> None:
        f, m = fwd, layer
        for _ in range(n):
            f(m, x)

    def bound(n: int) -> None:
        f = layer.forward
        for _ in range(n):
            f(x)

    def module(n: int) -> None:
        m = layer
        for _ in range(n):
            m(x)

    def plain_module(n: int) -> None:
        m = plain
        for _ in range(n):
            m(x)

    kinds = {"direct": direct, "bound": bound, "module": module, "plain_module": plain_module}
    for fn in kinds.values():
        fn(max(10, calls // 10))
    samples: dict[str, list[float]] = {k: [] for k in kinds}
    order = list(kinds)
    for i in range(repeats):
        for name in order[i % len(order) :] + order[: i % len(order)]:  # rotate the order
            samples[name].append(_per_call(kinds[name], calls))
    return {k: v for k, v in samples.items()}


def _resolution(task: dict[str, Any]) -> dict[str, Any]:
    names = json.loads(Path(task["names_file"]).read_text())
    archs = json.loads(Path(task["names_file"]).with_name("variant-archs.json").read_text())
    if task["package"] == "kernel_plugins":
        from kernel_plugins import resolve_variants

        resolve_variants(["torch-cpu"], "cpu")  # loads plugins and detects the device once

        def run() -> tuple[str | None, int]:
            res = resolve_variants(names, "cpu", archs=archs["cpu"])  # with the arch step
            return res.best, len(res.accepted)
    else:
        from kernels.variants import parse_variant, resolve_variants

        resolve_variants([parse_variant("torch-cpu")], "cpu")

        def run() -> tuple[str | None, int]:
            accepted, _ = resolve_variants([parse_variant(n) for n in names], "cpu")
            return (accepted[0].variant_str if accepted else None), len(accepted)

    with _maybe_profile(task, "resolution"):
        t = time.perf_counter()
        best, count = run()
        first = time.perf_counter() - t
    again = []
    for _ in range(task["repeats"]):
        t = time.perf_counter()
        run()
        again.append(time.perf_counter() - t)
    out = {"first_s": first, "again_s": again, "best": best, "accepted": count, "names": len(names)}
    if task["package"] == "kernel_plugins":
        out["cuda_arch_step"] = _cuda_arch_step(names, archs["cuda"], task["repeats"])
    return out


def _cuda_arch_step(names: list[str], archs: dict[str, list[str]], repeats: int) -> dict[str, Any]:
    """kernel-plugins only: the names on a described CUDA 8.0 device whose best builds the
    architecture step refuses; then the same with every reason written (the trace)."""
    from kernel_plugins import DeviceInfo, resolve_variants

    gpu = DeviceInfo(backend="cuda", device_type="cuda", count=1, runtime_version="12.8",
                     capability=(8, 0))
    t = time.perf_counter()
    res = resolve_variants(names, gpu, archs=archs)
    first = time.perf_counter() - t
    reasons = []
    for _ in range(repeats):
        t = time.perf_counter()
        resolve_variants(names, gpu, archs=archs).trace()
        reasons.append(time.perf_counter() - t)
    return {"first_s": first, "best": res.best, "refused": len(res.refused), "with_reasons_s": reasons}


def _inproc(task: dict[str, Any]) -> dict[str, Any]:
    torch_s = _import_torch()
    t1 = time.perf_counter()
    api = _api(task["package"])
    import_s = time.perf_counter() - t1
    kern, layer = _kernelize(task, api)
    calls = _call_overhead(layer, task["calls"], task["call_repeats"])
    res = _resolution(task)
    return {
        "torch_s": torch_s,
        "import_s": import_s,
        "kernelize": kern,
        "call": calls,
        "resolution": res,
        "median_call_s": {k: statistics.median(v) for k, v in calls.items()},
    }


def main() -> int:
    """Run the task given as JSON in argv[1]; print the result line."""
    import warnings

    warnings.simplefilter("ignore")
    task = json.loads(sys.argv[1])
    result = {"load": _load, "local": _local, "inproc": _inproc}[task["task"]](task)
    sys.stdout.write(f"{MARK} {json.dumps(result)}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
