"""Running a benchmark: load, choose functions and reference, time, compare."""

from __future__ import annotations

import sys
import time
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from types import ModuleType
from typing import TYPE_CHECKING, Any

from kernel_plugins.errors import KernelPluginsError

from ._errors import BenchmarkError
from .inputs import BenchmarkInputs, FunctionSpec, description, function_specs
from .measure import TOLERANCES, Check, Timer, compare, tolerance_for
from .report import BenchmarkReport, CaseResult

if TYPE_CHECKING:
    import torch

    from kernel_plugins.device import DeviceInfo

__all__ = ["benchmark", "benchmark_module"]


def _dtype(name: str) -> torch.dtype:
    import torch

    value = getattr(torch, name, None)
    if not isinstance(value, torch.dtype) or not value.is_floating_point:
        raise BenchmarkError(
            f"unknown floating-point dtype {name!r}; use one of {', '.join(TOLERANCES)}"
        )
    return value


def _reference_module(
    desc: Mapping[str, Any], kernel_name: str | None, info: DeviceInfo
) -> tuple[ModuleType | None, dict[str, Any] | None]:
    from kernel_plugins.loader import load
    from kernel_plugins.reference import reference_repo

    if "reference" in desc and desc["reference"] is None:
        return None, None
    value = desc.get("reference", kernel_name)
    if isinstance(value, ModuleType):
        return value, {
            "name": value.__name__,
            "module": value.__name__,
            "path": getattr(value, "__file__", None),
        }
    path = reference_repo(value, (info.backend,)) if isinstance(value, str) else None
    if path is None:
        if "reference" in desc:
            raise BenchmarkError(
                f"__benchmark__['reference'] = {value!r} names no bundled reference kernel "
                "(see kernel_plugins.reference.reference_names()); give a module or None"
            )
        return None, None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        module = load(path, device=info)
    return module, {"name": value, "module": module.__name__, "path": str(path)}


def _reference_fn(spec: FunctionSpec, ref_module: ModuleType | None) -> Callable[..., Any] | None:
    value = spec.reference
    if callable(value):
        return value
    name = value if isinstance(value, str) else spec.name
    if ref_module is None:
        if isinstance(value, str):
            raise BenchmarkError(
                f"{spec.name}: its reference {value!r} names a function, but there is no "
                "reference module to take it from"
            )
        return None
    fn = getattr(ref_module, name, None)
    if fn is None and isinstance(value, str):
        raise BenchmarkError(f"{spec.name}: the reference module has no function {value!r}")
    return fn if callable(fn) else None


def _build(
    spec: FunctionSpec, shape: tuple[int, ...], dtype: torch.dtype, device: torch.device
) -> BenchmarkInputs:
    import torch

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        try:
            inputs = spec.build(shape, dtype, device)
        except (ValueError, RuntimeError, TypeError) as e:
            raise BenchmarkError(
                f"{spec.name}: cannot build inputs of shape {shape} ({spec.builder} builder): {e}"
            ) from e
    if not isinstance(inputs, BenchmarkInputs):
        raise BenchmarkError(
            f"{spec.name}: the builder returned {type(inputs).__name__}, expected BenchmarkInputs"
        )
    return inputs


def _run_case(
    spec: FunctionSpec,
    fn: Callable[..., Any],
    ref: Callable[..., Any] | None,
    shape: tuple[int, ...],
    dtype_name: str,
    device: torch.device,
    timer: Timer,
    rtol: float | None,
    atol: float | None,
) -> CaseResult:
    inputs = _build(spec, shape, _dtype(dtype_name), device)
    tol = tolerance_for(
        dtype_name, spec.rtol if rtol is None else rtol, spec.atol if atol is None else atol
    )
    mine = inputs.clone()
    try:
        got = mine.results(fn(*mine.args, **mine.kwargs))
    except Exception as e:  # noqa: BLE001 - reported as this case's failure
        msg = f"the kernel raised {type(e).__name__}: {e}"
        return CaseResult(
            spec.name, shape, dtype_name, None, None, Check("error", *tol, message=msg)
        )
    ref_stats = None
    if ref is None:
        check = Check("skipped", *tol, message="no reference function")
    else:
        theirs = inputs.clone()
        try:
            want = theirs.results(ref(*theirs.args, **theirs.kwargs))
        except Exception as e:  # noqa: BLE001
            msg = f"the reference raised {type(e).__name__}: {e}"
            return CaseResult(
                spec.name, shape, dtype_name, None, None, Check("error", *tol, message=msg)
            )
        check = compare(got, want, *tol)
        ref_stats = timer.measure(ref, inputs.clone())
    return CaseResult(spec.name, shape, dtype_name, timer.measure(fn, inputs), ref_stats, check)


def benchmark_module(
    module: ModuleType,
    *,
    device: object = None,
    functions: Iterable[str] | None = None,
    shapes: Sequence[Sequence[int]] | None = None,
    dtypes: Sequence[str] = ("float32",),
    warmup: int = 10,
    iterations: int = 100,
    min_sample_s: float = 2e-4,
    rtol: float | None = None,
    atol: float | None = None,
    progress: bool = False,
) -> BenchmarkReport:
    """Benchmark the functions of an already loaded kernel module.

    :param module: the kernel module (from :func:`kernel_plugins.load`).
    :param device: where to run (default: the device the kernel was loaded for).
    :param functions: names to benchmark (default: all that can be, see the module docs).
    :param shapes: shapes for every selected function (default: each function's own).
    :param dtypes: floating-point dtype names, e.g. ``("float32", "bfloat16")``.
    :param warmup: calls before timing. :param iterations: timed samples per case.
    :param min_sample_s: a sample lasts at least this long (calls are repeated inside it).
    :param rtol: relative tolerance override. :param atol: absolute tolerance override.
    :param progress: show progress on stderr: a bar on a terminal (with tqdm), else a
        line every few seconds.
    :return: the report; check :attr:`BenchmarkReport.ok` or call ``raise_for_failures``.
    :raises BenchmarkError: unknown function names, bad shapes or dtypes.
    """
    import torch

    from kernel_plugins.detection import get_device
    from kernel_plugins.metadata import read_metadata
    from kernel_plugins.plugins import get_manager

    if warmup < 0 or iterations < 1:
        raise BenchmarkError(f"need warmup >= 0 and iterations >= 1, got {warmup}, {iterations}")
    prov = getattr(module, "__kernel_provenance__", None)
    if device is None and prov is not None:
        device = prov.backend
    info = get_device(device)
    kernel_name = None
    if prov is not None:
        try:
            from pathlib import Path

            kernel_name = read_metadata(Path(prov.path)).name
        except KernelPluginsError:
            kernel_name = None
    specs, skipped = function_specs(module, kernel_name)
    if functions is not None:
        wanted = list(dict.fromkeys(functions))
        known = {s.name for s in specs}
        unknown = [f for f in wanted if f not in known]
        if unknown:
            why = {s["function"]: s["reason"] for s in skipped}
            details = "; ".join(
                f"{f}: {why.get(f, 'not a function of the kernel')}" for f in unknown
            )
            raise BenchmarkError(
                f"cannot benchmark {', '.join(unknown)} ({details}). Functions that can be "
                f"benchmarked: {', '.join(sorted(known)) or 'none'}"
            )
        specs = [s for s in specs if s.name in wanted]
        skipped = []
    for name in dtypes:
        _dtype(name)
    ref_module, ref_info = _reference_module(description(module), kernel_name, info)
    manager = get_manager()
    record = manager.record(info.backend)
    timer = Timer(lambda: manager.synchronize(info), warmup, iterations, min_sample_s)
    torch_device = torch.device(info.torch_device)
    cases = [
        (spec, tuple(int(s) for s in shape), dtype)
        for spec in specs
        for shape in (shapes if shapes else spec.shapes)
        for dtype in dtypes
    ]
    bar = _progress(len(cases), progress)
    results = []
    try:
        for spec, shape, dtype in cases:
            if bar is not None:
                bar.set_postfix_str(f"{spec.name} {shape} {dtype}")
            ref = _reference_fn(spec, ref_module)
            results.append(
                _run_case(
                    spec,
                    getattr(module, spec.name),
                    ref,
                    shape,
                    dtype,
                    torch_device,
                    timer,
                    rtol,
                    atol,
                )
            )
            if bar is not None:
                bar.update(1)
    finally:
        if bar is not None:
            bar.close()
    return BenchmarkReport(
        kernel=prov.to_dict() if prov is not None else {"repo_id": module.__name__},
        reference=ref_info,
        device={
            "torch_device": info.torch_device,
            "backend": info.backend,
            "device_type": info.device_type,
            "emulated": bool(info.emulated),
            "summary": info.summary(),
            "synchronize": f"the synchronize hook of {record.origin()}",
            "sync_calls": timer.sync_calls,
        },
        settings={
            "dtypes": list(dtypes),
            "warmup": warmup,
            "iterations": iterations,
            "min_sample_s": min_sample_s,
            "timer": "time.perf_counter",
            "rtol": rtol,
            "atol": atol,
        },
        results=results,
        skipped=skipped,
    )


class _Lines:
    """Progress as lines on stderr (not a terminal, or no tqdm): one every few seconds,
    so a long run shows it is alive and a short one prints nothing."""

    def __init__(self, total: int, every_s: float = 5.0) -> None:
        self.total, self.done, self.every_s = total, 0, every_s
        self.what = ""
        self.last = time.monotonic()

    def set_postfix_str(self, what: str) -> None:
        self.what = what

    def update(self, n: int) -> None:
        self.done += n
        now = time.monotonic()
        if now - self.last >= self.every_s and self.done < self.total:
            self.last = now
            print(f"benchmark: {self.done}/{self.total} cases done (last: {self.what})",
                  file=sys.stderr, flush=True)

    def close(self) -> None:
        """Nothing to clean up."""


def _progress(total: int, enabled: bool) -> Any:
    if not enabled or total == 0:
        return None
    if not sys.stderr.isatty():
        return _Lines(total)
    try:
        from tqdm import tqdm
    except ImportError:
        return _Lines(total)
    return tqdm(total=total, file=sys.stderr, unit="case", desc="benchmark", leave=False)


def benchmark(
    target: str,
    *,
    device: object = None,
    load_options: Mapping[str, Any] | None = None,
    **options: Any,
) -> BenchmarkReport:
    """Load ``target`` with :func:`kernel_plugins.load` and :func:`benchmark_module` it.

    :param target: a Hub repo id, short name or local path, as for ``load``.
    :param device: the device to load for and run on.
    :param load_options: more keyword arguments for ``load`` (revision, version...).
    :param options: keyword arguments of :func:`benchmark_module`.
    """
    from kernel_plugins.loader import load

    module = load(target, device=device, **dict(load_options or {}))
    return benchmark_module(module, device=device, **options)
