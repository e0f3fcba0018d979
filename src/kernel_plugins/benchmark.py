"""Time a kernel's functions against a reference, on any backend, and check their outputs.

For every function and shape: warm-up calls, then ``iterations`` timed samples. Each
sample is one timed region: the owning backend's ``synchronize`` hook, ``inner``
back-to-back calls, the hook again (``inner`` is calibrated so a region lasts at least
``min_sample_s``; the sample is the region's time divided by ``inner``). The same is
done for the reference function on identical inputs; the outputs of both are compared
with a dtype-dependent tolerance (:data:`TOLERANCES`) and a mismatch is a failure.

How inputs are built: the ``__benchmark__`` convention
------------------------------------------------------
A kernel module may describe its functions in a module attribute::

    __benchmark__ = {
        "reference": "activation",       # optional: a bundled reference kernel name,
                                         # a module, or None (no reference at all)
        "functions": {                   # optional: which functions, and how
            "silu_and_mul": {
                "inputs": "gated",       # a built-in builder name (BUILDERS) or a callable
                "shapes": [(16, 1024), (128, 4096)],   # optional: default shapes
                "reference": my_silu_and_mul,          # optional: callable, or the name of
                                                       # a function of the reference module
                "rtol": 1e-4, "atol": 1e-5,            # optional: tolerance override
            },
        },
    }

A builder is ``build(shape, dtype, device) -> BenchmarkInputs``: the positional and
keyword arguments of one call, and which positional arguments are outputs the function
writes (``outputs``; when empty the return value is compared). It should create random
tensors with :func:`randn` (seeded by the engine). ``shape`` means what the builder
documents (see :data:`BUILDERS`).

Without ``__benchmark__`` (or for functions it does not list) the built-in rules apply:

* functions of the bundled reference kernels ``rmsnorm`` and ``rotary`` (and of any
  kernel with the same metadata ``name``) have built-in builders;
* the activation API ``f(out, x, ...)``: ``gated`` when the name contains ``_and_``
  (``silu_and_mul``: ``x`` is ``(tokens, 2*d)``, ``out`` ``(tokens, d)``), else ``unary``;
* any other function is skipped, with the reason in the report.

The reference defaults to the bundled reference kernel whose name is the kernel's
metadata ``name`` (:mod:`kernel_plugins.reference`), function of the same name.

JSON report (``BenchmarkReport.to_dict()``, ``kernel-plugins benchmark --json``)
-----------------------------------------------------------------------------------
``schema`` (``"kernel-plugins-benchmark/1"``), ``ok`` (bool: every check passed),
``emulated`` (bool), ``note`` (str or null: says emulated times describe no hardware),
``kernel`` (provenance dict of the loaded kernel: source, repo_id, variant, path...),
``reference`` (``{"name", "module", "path"}`` or null), ``device`` (``{"torch_device",
"backend", "device_type", "emulated", "summary", "synchronize", "sync_calls"}``),
``settings`` (``{"dtypes", "warmup", "iterations", "min_sample_s", "timer"}``),
``environment`` (``{"python", "torch", "kernel_plugins", "platform"}``), ``results``
(list, one per function x shape x dtype: ``function``, ``shape`` (list of int),
``dtype``, ``kernel`` and ``reference`` timing stats or null (``samples``, ``inner``,
``median_us``, ``mean_us``, ``std_us``, ``min_us``, ``iqr_us``), ``speedup`` (reference
median / kernel median, or null), ``check`` (``status``: ``pass``, ``fail``, ``error``
or ``skipped``; ``max_abs_error``, ``max_rel_error``, ``mismatched``, ``elements``,
``rtol``, ``atol``, ``message``)) and ``skipped`` (``[{"function", "reason"}]``).

Example::

    from kernel_plugins.benchmark import benchmark
    report = benchmark("kernels-community/activation", device="mlu", iterations=50)
    print(report.format_table())
    report.raise_for_failures()
"""

from __future__ import annotations

import inspect
import math
import platform
import statistics
import sys
import time
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from types import ModuleType
from typing import TYPE_CHECKING, Any

from .errors import KernelPluginsError

if TYPE_CHECKING:
    import torch

    from .device import DeviceInfo

__all__ = [
    "SCHEMA",
    "TOLERANCES",
    "BUILDERS",
    "DEFAULT_SHAPES",
    "BenchmarkError",
    "CorrectnessError",
    "BenchmarkInputs",
    "FunctionSpec",
    "Stats",
    "Check",
    "CaseResult",
    "BenchmarkReport",
    "randn",
    "tolerance_for",
    "function_specs",
    "benchmark",
    "benchmark_module",
    "plot_report",
]

#: Identifier and version of the JSON report layout.
SCHEMA = "kernel-plugins-benchmark/1"

#: Default ``(rtol, atol)`` per dtype: an output passes when, element-wise,
#: ``|kernel - reference| <= atol + rtol * |reference|`` (NaN where the reference is NaN).
TOLERANCES: dict[str, tuple[float, float]] = {
    "float64": (1e-7, 1e-7),
    "float32": (1.3e-5, 1e-5),
    "float16": (1e-3, 1e-3),
    "bfloat16": (1.6e-2, 1e-2),
}
_MAX_INNER = 10_000


class BenchmarkError(KernelPluginsError):
    """A benchmark cannot run as asked: unknown function, bad shape or dtype, no builder."""


class CorrectnessError(BenchmarkError):
    """A kernel's outputs differ from the reference's beyond the tolerance (or it raised)."""


# --------------------------------------------------------------------------- inputs


@dataclass(frozen=True)
class BenchmarkInputs:
    """The arguments of one call, and where its results are.

    Attributes:
        args: positional arguments. kwargs: keyword arguments.
        outputs: indices of positional arguments the function writes (``out`` tensors);
            empty: the return value (a tensor or a tuple of tensors) is the result.
    """

    args: tuple[Any, ...]
    kwargs: Mapping[str, Any] = field(default_factory=dict)
    outputs: tuple[int, ...] = ()

    def results(self, returned: Any) -> list[Any]:
        """The values to compare after a call that returned ``returned``."""
        if self.outputs:
            return [self.args[i] for i in self.outputs]
        if isinstance(returned, (tuple, list)):
            return list(returned)
        return [returned]

    def clone(self) -> BenchmarkInputs:
        """A copy whose tensors are cloned (so two calls see identical, separate inputs)."""
        return BenchmarkInputs(
            tuple(_clone(a) for a in self.args),
            {k: _clone(v) for k, v in self.kwargs.items()},
            self.outputs,
        )


Builder = Callable[[tuple[int, ...], "torch.dtype", "torch.device"], BenchmarkInputs]


def _clone(value: Any) -> Any:
    import torch

    return value.clone() if isinstance(value, torch.Tensor) else value


def randn(shape: Sequence[int], dtype: torch.dtype, device: torch.device) -> torch.Tensor:
    """Standard-normal values made on the CPU in float32 (seeded), then cast and moved.

    The same seed gives the same values on every device, emulated ones included.
    """
    import torch

    return torch.randn(tuple(shape), dtype=torch.float32).to(dtype=dtype).to(device)


def _empty(shape: Sequence[int], dtype: torch.dtype, device: torch.device) -> torch.Tensor:
    import torch

    return torch.zeros(tuple(shape), dtype=dtype).to(device)


def _need_rank(name: str, shape: tuple[int, ...], rank: int, meaning: str) -> None:
    if len(shape) != rank or any(s <= 0 for s in shape):
        raise ValueError(f"builder {name!r} needs {rank} positive sizes {meaning}, got {shape}")


def build_unary(shape: tuple[int, ...], dtype: torch.dtype, device: torch.device) -> BenchmarkInputs:
    """``f(out, x)`` element-wise: ``x`` and ``out`` have ``shape``."""
    if not shape or any(s <= 0 for s in shape):
        raise ValueError(f"builder 'unary' needs positive sizes, got {shape}")
    return BenchmarkInputs((_empty(shape, dtype, device), randn(shape, dtype, device)), outputs=(0,))


def build_gated(shape: tuple[int, ...], dtype: torch.dtype, device: torch.device) -> BenchmarkInputs:
    """``f(out, x)`` gated (``silu_and_mul``): ``x`` has ``shape``, ``out`` half its last dim."""
    if not shape or any(s <= 0 for s in shape) or shape[-1] % 2:
        raise ValueError(f"builder 'gated' needs positive sizes with an even last one, got {shape}")
    out_shape = (*shape[:-1], shape[-1] // 2)
    return BenchmarkInputs(
        (_empty(out_shape, dtype, device), randn(shape, dtype, device)), outputs=(0,)
    )


def build_rms_norm(
    shape: tuple[int, ...], dtype: torch.dtype, device: torch.device
) -> BenchmarkInputs:
    """``apply_rms_norm(input, weight, eps)``: ``input`` is ``(tokens, hidden)``."""
    _need_rank("rms_norm", shape, 2, "(tokens, hidden)")
    weight = (1.0 + 0.1 * randn(shape[-1:], dtype, device)).to(dtype)
    return BenchmarkInputs((randn(shape, dtype, device), weight, 1e-6))


def build_rotary(shape: tuple[int, ...], dtype: torch.dtype, device: torch.device) -> BenchmarkInputs:
    """``apply_rotary(x1, x2, cos, sin, out1, out2, conj)``: ``shape`` is ``(tokens, heads, d)``.

    ``cos``/``sin`` are ``(tokens, 1, d)``; ``out1``/``out2`` are the results.
    """
    _need_rank("rotary", shape, 3, "(tokens, heads, rotary_dim/2)")
    tokens, _, d = shape
    angles = randn((tokens, 1, d), dtype, device).float()
    cos, sin = angles.cos().to(dtype), angles.sin().to(dtype)
    args = (
        randn(shape, dtype, device), randn(shape, dtype, device), cos, sin,
        _empty(shape, dtype, device), _empty(shape, dtype, device), False,
    )
    return BenchmarkInputs(args, outputs=(4, 5))


def build_rotary_transformers(
    shape: tuple[int, ...], dtype: torch.dtype, device: torch.device
) -> BenchmarkInputs:
    """``apply_rotary_transformers(q, k, cos, sin)``: ``shape`` is ``(batch, heads, seq, dim)``.

    ``cos``/``sin`` are ``(batch, seq, dim)``; the returned ``(q, k)`` are the results.
    """
    _need_rank("rotary_transformers", shape, 4, "(batch, heads, seq, head_dim)")
    batch, _, seq, dim = shape
    angles = randn((batch, seq, dim), dtype, device).float()
    return BenchmarkInputs(
        (randn(shape, dtype, device), randn(shape, dtype, device),
         angles.cos().to(dtype), angles.sin().to(dtype))
    )


#: Built-in argument builders, by the name ``__benchmark__`` may use.
BUILDERS: dict[str, Builder] = {
    "unary": build_unary,
    "gated": build_gated,
    "rms_norm": build_rms_norm,
    "rotary": build_rotary,
    "rotary_transformers": build_rotary_transformers,
}

#: Default shapes per built-in builder.
DEFAULT_SHAPES: dict[str, tuple[tuple[int, ...], ...]] = {
    "unary": ((16, 1024), (128, 4096), (1024, 4096)),
    "gated": ((16, 1024), (128, 4096), (1024, 4096)),
    "rms_norm": ((16, 1024), (128, 4096), (1024, 4096)),
    "rotary": ((16, 8, 32), (128, 32, 64), (1024, 32, 64)),
    "rotary_transformers": ((1, 8, 16, 64), (1, 32, 128, 128), (2, 32, 512, 128)),
}

# Built-in builders of the bundled reference kernels (by metadata name, then function).
_KNOWN: dict[str, dict[str, str]] = {
    "rmsnorm": {"apply_rms_norm": "rms_norm"},
    "rotary": {"apply_rotary": "rotary", "apply_rotary_transformers": "rotary_transformers"},
}


@dataclass(frozen=True)
class FunctionSpec:
    """How to benchmark one function: its builder, default shapes, reference, tolerance."""

    name: str
    build: Builder
    shapes: tuple[tuple[int, ...], ...]
    builder: str = "custom"
    reference: Callable[..., Any] | str | None = None
    rtol: float | None = None
    atol: float | None = None


def tolerance_for(dtype: str, rtol: float | None = None, atol: float | None = None) -> tuple[float, float]:
    """``(rtol, atol)`` for a dtype name, with explicit values taking precedence."""
    base_rtol, base_atol = TOLERANCES.get(dtype, TOLERANCES["float32"])
    return (base_rtol if rtol is None else rtol, base_atol if atol is None else atol)


def _public_functions(module: ModuleType) -> list[str]:
    return sorted(
        n for n in dir(module)
        if not n.startswith("_") and (inspect.isfunction(getattr(module, n))
                                      or inspect.isbuiltin(getattr(module, n)))
    )


def _activation_builder(fn: Callable[..., Any], name: str) -> str | None:
    try:
        params = list(inspect.signature(fn).parameters)
    except (TypeError, ValueError):
        return None
    if params[:2] == ["out", "x"] or params[:2] == ["out", "input"]:
        return "gated" if "_and_" in name else "unary"
    return None


def _builder_of(value: object, where: str) -> tuple[Builder, str]:
    if isinstance(value, str):
        if value not in BUILDERS:
            raise BenchmarkError(
                f"{where}: unknown builder {value!r}; use one of {', '.join(BUILDERS)} or a "
                "callable build(shape, dtype, device) -> BenchmarkInputs"
            )
        return BUILDERS[value], value
    if callable(value):
        return value, getattr(value, "__name__", "custom")  # type: ignore[return-value]
    raise BenchmarkError(f"{where}: 'inputs' must be a builder name or a callable, got {value!r}")


def _shapes(value: object, where: str) -> tuple[tuple[int, ...], ...]:
    try:
        shapes = tuple(tuple(int(s) for s in shape) for shape in value)  # type: ignore[union-attr]
    except (TypeError, ValueError) as e:
        raise BenchmarkError(f"{where}: 'shapes' must be a list of int tuples, got {value!r}") from e
    if not shapes:
        raise BenchmarkError(f"{where}: 'shapes' is empty")
    return shapes


def _description(module: ModuleType) -> dict[str, Any]:
    desc = getattr(module, "__benchmark__", None)
    if desc is None:
        return {}
    if not isinstance(desc, Mapping):
        raise BenchmarkError(
            f"{module.__name__}.__benchmark__ must be a dict (see kernel_plugins.benchmark), got "
            f"{type(desc).__name__}"
        )
    return dict(desc)


def function_specs(
    module: ModuleType, kernel_name: str | None = None
) -> tuple[list[FunctionSpec], list[dict[str, str]]]:
    """The functions of ``module`` that can be benchmarked, and the skipped ones with why.

    :param module: a loaded kernel module.
    :param kernel_name: its metadata ``name`` (selects built-in builders of a known kernel).
    """
    desc = _description(module)
    described = desc.get("functions") or {}
    names = list(described) if described else _public_functions(module)
    specs: list[FunctionSpec] = []
    skipped: list[dict[str, str]] = []
    for name in names:
        fn = getattr(module, name, None)
        where = f"{module.__name__}.__benchmark__['functions'][{name!r}]"
        if not callable(fn):
            raise BenchmarkError(f"{where}: the kernel module has no function {name!r}")
        entry = dict(described.get(name) or {})
        builder_value = entry.get("inputs")
        if builder_value is None:
            builder_value = _KNOWN.get(kernel_name or "", {}).get(name) or _activation_builder(
                fn, name
            )
        if builder_value is None:
            skipped.append({
                "function": name,
                "reason": "no argument builder: describe it in the kernel's __benchmark__",
            })
            continue
        build, builder_name = _builder_of(builder_value, where)
        shapes = (
            _shapes(entry["shapes"], where) if "shapes" in entry
            else DEFAULT_SHAPES.get(builder_name, ())
        )
        if not shapes:
            raise BenchmarkError(f"{where}: a custom builder needs 'shapes'")
        specs.append(FunctionSpec(
            name, build, shapes, builder_name, entry.get("reference"),
            entry.get("rtol"), entry.get("atol"),
        ))
    return specs, skipped


# --------------------------------------------------------------------------- timing


@dataclass(frozen=True)
class Stats:
    """Per-call times of one function on one input, in seconds."""

    samples: int
    inner: int
    median: float
    mean: float
    std: float
    min: float
    iqr: float

    @classmethod
    def of(cls, times: Sequence[float], inner: int) -> Stats:
        """Statistics of per-call times (one per timed sample)."""
        values = sorted(times)
        if len(values) >= 2:
            q1, _, q3 = statistics.quantiles(values, n=4, method="inclusive")
            std = statistics.stdev(values)
        else:
            q1 = q3 = values[0]
            std = 0.0
        return cls(len(values), inner, statistics.median(values), statistics.fmean(values),
                   std, values[0], q3 - q1)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready, times in microseconds."""
        us = {k: getattr(self, k) * 1e6 for k in ("median", "mean", "std", "min", "iqr")}
        return {"samples": self.samples, "inner": self.inner,
                **{f"{k}_us": round(v, 4) for k, v in us.items()}}


class _Timer:
    def __init__(self, sync: Callable[[], object], warmup: int, iterations: int,
                 min_sample_s: float) -> None:
        self.sync = sync
        self.warmup = warmup
        self.iterations = iterations
        self.min_sample_s = min_sample_s
        self.sync_calls = 0

    def _sync(self) -> None:
        self.sync_calls += 1
        self.sync()

    def _region(self, fn: Callable[..., Any], inputs: BenchmarkInputs, inner: int) -> float:
        args, kwargs = inputs.args, inputs.kwargs
        self._sync()
        start = time.perf_counter()
        for _ in range(inner):
            fn(*args, **kwargs)
        self._sync()
        return time.perf_counter() - start

    def measure(self, fn: Callable[..., Any], inputs: BenchmarkInputs) -> Stats:
        for _ in range(self.warmup):
            fn(*inputs.args, **inputs.kwargs)
        inner = 1
        while inner < _MAX_INNER:
            took = self._region(fn, inputs, inner)
            if took >= self.min_sample_s:
                break
            grow = self.min_sample_s / max(took, 1e-9) * 1.2
            inner = min(_MAX_INNER, max(inner * 2, math.ceil(inner * grow)))
        times = [self._region(fn, inputs, inner) / inner for _ in range(self.iterations)]
        return Stats.of(times, inner)


# ----------------------------------------------------------------------- correctness


@dataclass(frozen=True)
class Check:
    """The comparison of a kernel's outputs with the reference's."""

    status: str  # pass | fail | error | skipped
    rtol: float | None = None
    atol: float | None = None
    max_abs_error: float | None = None
    max_rel_error: float | None = None
    mismatched: int = 0
    elements: int = 0
    message: str = ""

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready."""
        return dict(self.__dict__)


def _compare(got: list[Any], want: list[Any], rtol: float, atol: float) -> Check:
    import torch

    if len(got) != len(want):
        return Check("fail", rtol, atol, message=f"{len(got)} results, the reference has {len(want)}")
    max_abs = max_rel = 0.0
    bad = total = 0
    for i, (a, b) in enumerate(zip(got, want)):
        if not isinstance(b, torch.Tensor):
            if not isinstance(a, torch.Tensor) and a == b:
                continue
            return Check("fail", rtol, atol, message=f"result {i} is {a!r}, reference {b!r}")
        if not isinstance(a, torch.Tensor) or tuple(a.shape) != tuple(b.shape):
            shape = tuple(a.shape) if isinstance(a, torch.Tensor) else type(a).__name__
            return Check("fail", rtol, atol, message=f"result {i} has shape {shape}, reference "
                         f"{tuple(b.shape)}")
        x = a.detach().to("cpu").to(torch.float64)
        y = b.detach().to("cpu").to(torch.float64)
        diff = (x - y).abs()
        ok = torch.isclose(x, y, rtol=rtol, atol=atol, equal_nan=True)
        finite = torch.isfinite(diff)
        if bool(finite.any()):
            max_abs = max(max_abs, float(diff[finite].max()))
            rel = diff[finite] / y.abs()[finite].clamp_min(1e-30)
            max_rel = max(max_rel, float(rel.max()))
        bad += int((~ok).sum())
        total += ok.numel()
    status = "pass" if bad == 0 else "fail"
    msg = "" if bad == 0 else f"{bad} of {total} elements outside the tolerance"
    return Check(status, rtol, atol, max_abs, max_rel, bad, total, msg)


# --------------------------------------------------------------------------- report


@dataclass(frozen=True)
class CaseResult:
    """One function on one shape and dtype."""

    function: str
    shape: tuple[int, ...]
    dtype: str
    kernel: Stats | None
    reference: Stats | None
    check: Check

    @property
    def speedup(self) -> float | None:
        """Reference median / kernel median (> 1: the kernel is faster)."""
        if self.kernel is None or self.reference is None or self.kernel.median <= 0:
            return None
        return self.reference.median / self.kernel.median

    def describe_failure(self) -> str:
        """``silu_and_mul, shape (16, 1024), float32: max abs error ... > tolerance ...``."""
        head = f"{self.function}, shape {self.shape}, {self.dtype}"
        c = self.check
        if c.status == "error":
            return f"{head}: {c.message}"
        errs = ""
        if c.max_abs_error is not None:
            errs = f"max abs error {c.max_abs_error:.3g}, max rel error {c.max_rel_error:.3g}; "
        return (f"{head}: {errs}{c.message} (tolerance rtol={c.rtol:g}, atol={c.atol:g}: "
                "|kernel - reference| <= atol + rtol*|reference|)")

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready."""
        speedup = self.speedup
        return {
            "function": self.function,
            "shape": list(self.shape),
            "dtype": self.dtype,
            "kernel": self.kernel.to_dict() if self.kernel else None,
            "reference": self.reference.to_dict() if self.reference else None,
            "speedup": None if speedup is None else round(speedup, 4),
            "check": self.check.to_dict(),
        }


@dataclass
class BenchmarkReport:
    """Everything one benchmark run measured; see the module docstring for the JSON layout."""

    kernel: dict[str, Any]
    reference: dict[str, Any] | None
    device: dict[str, Any]
    settings: dict[str, Any]
    results: list[CaseResult] = field(default_factory=list)
    skipped: list[dict[str, str]] = field(default_factory=list)

    @property
    def emulated(self) -> bool:
        """Whether the device was emulated (times then describe no hardware)."""
        return bool(self.device.get("emulated"))

    @property
    def failures(self) -> list[CaseResult]:
        """Cases whose check failed or raised."""
        return [r for r in self.results if r.check.status in ("fail", "error")]

    @property
    def ok(self) -> bool:
        """True when no check failed."""
        return not self.failures

    def note(self) -> str | None:
        """The warning printed with emulated results, else None."""
        if not self.emulated:
            return None
        return (f"device {self.device['device_type']!r} is EMULATED on the CPU: these times say "
                "nothing about any hardware")

    def raise_for_failures(self) -> None:
        """Raise :class:`CorrectnessError` naming every failed function and shape."""
        if self.ok:
            return
        lines = "\n".join(f"  - {r.describe_failure()}" for r in self.failures)
        raise CorrectnessError(
            f"{len(self.failures)} benchmark case(s) of {self.kernel.get('repo_id')} do not match "
            f"the reference {self.reference and self.reference.get('name')}:\n{lines}\nFix the "
            "kernel, or pass a looser --rtol/--atol if the difference is expected."
        )

    def to_dict(self) -> dict[str, Any]:
        """The JSON report."""
        import torch

        from . import __version__

        return {
            "schema": SCHEMA,
            "ok": self.ok,
            "emulated": self.emulated,
            "note": self.note(),
            "kernel": self.kernel,
            "reference": self.reference,
            "device": self.device,
            "settings": self.settings,
            "environment": {
                "python": platform.python_version(),
                "torch": torch.__version__,
                "kernel_plugins": __version__,
                "platform": platform.platform(),
            },
            "results": [r.to_dict() for r in self.results],
            "skipped": list(self.skipped),
        }

    def table_rows(self) -> list[list[str]]:
        """Rows for :meth:`format_table` (header: :data:`TABLE_HEADERS`)."""
        rows = []
        for r in self.results:
            k, ref, s = r.kernel, r.reference, r.speedup
            c = r.check
            check = c.status if c.max_abs_error is None else f"{c.status} ({c.max_abs_error:.2g})"
            rows.append([
                r.function, "x".join(map(str, r.shape)), r.dtype,
                *(_fmt_time(getattr(k, a)) if k else "-" for a in ("median", "mean", "std",
                                                                   "min", "iqr")),
                _fmt_time(ref.median) if ref else "-",
                f"{s:.2f}x" if s is not None else "-",
                check,
            ])
        return rows

    def format_table(self) -> str:
        """The human-readable report."""
        out = []
        if self.note():
            out.append(f"NOTE: {self.note()}")
        k = self.kernel
        out.append(f"kernel     {k.get('repo_id')} (variant {k.get('variant')}, source "
                   f"{k.get('source')})")
        ref = self.reference
        out.append(f"reference  {ref['name']} ({ref['path']})" if ref else "reference  none")
        d = self.device
        out.append(f"device     {d['summary']}; synchronised by {d['synchronize']}")
        st = self.settings
        out.append(f"settings   warm-up {st['warmup']}, {st['iterations']} samples per case, "
                   f">= {st['min_sample_s'] * 1e3:g} ms per sample; times per call")
        out.append(_format_table(TABLE_HEADERS, self.table_rows()))
        for dtype in self.settings["dtypes"]:
            rtol, atol = tolerance_for(dtype)
            out.append(f"tolerance  {dtype}: rtol={rtol:g} atol={atol:g} (|kernel - reference| <= "
                       "atol + rtol*|reference|, element-wise; overrides shown per case in --json)")
        for s in self.skipped:
            out.append(f"skipped    {s['function']}: {s['reason']}")
        if self.note():
            out.append(f"NOTE: {self.note()}")
        return "\n".join(out)


#: Column headers of the human-readable table.
TABLE_HEADERS = ["function", "shape", "dtype", "median", "mean", "std", "min", "IQR",
                 "ref median", "speed-up", "check (max abs err)"]


def _format_table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    widths = [max([len(h), *(len(r[i]) for r in rows)]) for i, h in enumerate(headers)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(headers, widths)).rstrip(),
             "  ".join("-" * w for w in widths)]
    lines += ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows]
    return "\n".join(lines)


def _fmt_time(seconds: float) -> str:
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if seconds >= scale:
            return f"{seconds / scale:.3g} {unit}"
    return f"{seconds / 1e-9:.3g} ns"


# ------------------------------------------------------------------------ running


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
    from .loader import load
    from .reference import reference_repo

    if "reference" in desc and desc["reference"] is None:
        return None, None
    value = desc.get("reference", kernel_name)
    if isinstance(value, ModuleType):
        return value, {"name": value.__name__, "module": value.__name__,
                       "path": getattr(value, "__file__", None)}
    path = reference_repo(value) if isinstance(value, str) else None
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


def _build(spec: FunctionSpec, shape: tuple[int, ...], dtype: torch.dtype,
           device: torch.device) -> BenchmarkInputs:
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
    spec: FunctionSpec, fn: Callable[..., Any], ref: Callable[..., Any] | None,
    shape: tuple[int, ...], dtype_name: str, device: torch.device, timer: _Timer,
    rtol: float | None, atol: float | None,
) -> CaseResult:
    inputs = _build(spec, shape, _dtype(dtype_name), device)
    tol = tolerance_for(dtype_name, spec.rtol if rtol is None else rtol,
                        spec.atol if atol is None else atol)
    mine = inputs.clone()
    try:
        got = mine.results(fn(*mine.args, **mine.kwargs))
    except Exception as e:  # noqa: BLE001 - reported as this case's failure
        msg = f"the kernel raised {type(e).__name__}: {e}"
        return CaseResult(spec.name, shape, dtype_name, None, None, Check("error", *tol, message=msg))
    ref_stats = None
    if ref is None:
        check = Check("skipped", *tol, message="no reference function")
    else:
        theirs = inputs.clone()
        try:
            want = theirs.results(ref(*theirs.args, **theirs.kwargs))
        except Exception as e:  # noqa: BLE001
            msg = f"the reference raised {type(e).__name__}: {e}"
            return CaseResult(spec.name, shape, dtype_name, None, None,
                              Check("error", *tol, message=msg))
        check = _compare(got, want, *tol)
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
    :param progress: show a progress bar on stderr (needs tqdm).
    :return: the report; check :attr:`BenchmarkReport.ok` or call ``raise_for_failures``.
    :raises BenchmarkError: unknown function names, bad shapes or dtypes.
    """
    import torch

    from .detection import get_device
    from .metadata import read_metadata
    from .plugins import get_manager

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
            details = "; ".join(f"{f}: {why.get(f, 'not a function of the kernel')}" for f in unknown)
            raise BenchmarkError(
                f"cannot benchmark {', '.join(unknown)} ({details}). Functions that can be "
                f"benchmarked: {', '.join(sorted(known)) or 'none'}"
            )
        specs = [s for s in specs if s.name in wanted]
        skipped = []
    for name in dtypes:
        _dtype(name)
    ref_module, ref_info = _reference_module(_description(module), kernel_name, info)
    manager = get_manager()
    record = manager.record(info.backend)
    timer = _Timer(lambda: manager.synchronize(info), warmup, iterations, min_sample_s)
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
            results.append(_run_case(spec, getattr(module, spec.name), ref, shape, dtype,
                                     torch_device, timer, rtol, atol))
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
        settings={"dtypes": list(dtypes), "warmup": warmup, "iterations": iterations,
                  "min_sample_s": min_sample_s, "timer": "time.perf_counter",
                  "rtol": rtol, "atol": atol},
        results=results,
        skipped=skipped,
    )


def _progress(total: int, enabled: bool) -> Any:
    if not enabled or total == 0:
        return None
    try:
        from tqdm.auto import tqdm
    except ImportError:
        return None
    return tqdm(total=total, file=sys.stderr, unit="case", desc="benchmark", leave=False)


def benchmark(target: str, *, device: object = None, load_options: Mapping[str, Any] | None = None,
              **options: Any) -> BenchmarkReport:
    """Load ``target`` with :func:`kernel_plugins.load` and :func:`benchmark_module` it.

    :param target: a Hub repo id, short name or local path, as for ``load``.
    :param device: the device to load for and run on.
    :param load_options: more keyword arguments for ``load`` (revision, version...).
    :param options: keyword arguments of :func:`benchmark_module`.
    """
    from .loader import load

    module = load(target, device=device, **dict(load_options or {}))
    return benchmark_module(module, device=device, **options)


def plot_report(report: BenchmarkReport, path: str) -> None:
    """Write a PNG bar chart (median per call, IQR as error bars, kernel vs reference).

    :raises BenchmarkError: matplotlib is not installed (``pip install matplotlib``).
    """
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as e:
        raise BenchmarkError(
            "--plot needs matplotlib, which is not installed: pip install matplotlib"
        ) from e
    rows = [r for r in report.results if r.kernel is not None]
    labels = [f"{r.function}\n{'x'.join(map(str, r.shape))} {r.dtype}" for r in rows]
    fig, ax = plt.subplots(figsize=(max(6.0, 0.9 * len(rows) + 2), 4.5))
    xs = list(range(len(rows)))
    width = 0.4
    kern = [r.kernel.median * 1e6 for r in rows]  # type: ignore[union-attr]
    kerr = [r.kernel.iqr * 1e6 / 2 for r in rows]  # type: ignore[union-attr]
    ax.bar([x - width / 2 for x in xs], kern, width, yerr=kerr, label="kernel")
    ref = [r.reference.median * 1e6 if r.reference else 0.0 for r in rows]
    rerr = [r.reference.iqr * 1e6 / 2 if r.reference else 0.0 for r in rows]
    ax.bar([x + width / 2 for x in xs], ref, width, yerr=rerr, label="reference")
    ax.set_xticks(xs, labels, rotation=60, ha="right", fontsize=7)
    ax.set_ylabel("median time per call (us), IQR bars")
    if any(v > 0 for v in kern + ref):
        ax.set_yscale("log")
    title = f"{report.kernel.get('repo_id')} on {report.device['torch_device']}"
    if report.emulated:
        title += " (EMULATED: times describe no hardware)"
    ax.set_title(title, fontsize=9)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
