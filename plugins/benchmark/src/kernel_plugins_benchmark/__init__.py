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

Without a ``functions`` entry every public function of the module is considered; a
function without ``inputs`` (listed or not) gets its builder from the built-in rules:

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
``settings`` (``{"dtypes", "warmup", "iterations", "min_sample_s", "timer", "rtol",
"atol"}``; rtol/atol are the overrides given, or null),
``environment`` (``{"python", "torch", "kernel_plugins", "platform"}``), ``results``
(list, one per function x shape x dtype: ``function``, ``shape`` (list of int),
``dtype``, ``kernel`` and ``reference`` timing stats or null (``samples``, ``inner``,
``median_us``, ``mean_us``, ``std_us``, ``min_us``, ``iqr_us``), ``speedup`` (reference
median / kernel median, or null), ``check`` (``status``: ``pass``, ``fail``, ``error``
or ``skipped``; ``max_abs_error``, ``max_rel_error``, ``mismatched``, ``elements``,
``rtol``, ``atol``, ``message``)) and ``skipped`` (``[{"function", "reason"}]``).

A repository's own ``benchmarks/benchmark*.py`` classes (the ``kernels benchmark``
format) run with :func:`run_scripts` (``kernel-plugins benchmark --scripts``); see
:mod:`kernel_plugins_benchmark.scripts`.

Example::

    from kernel_plugins_benchmark import benchmark
    report = benchmark("kernels-community/activation", device="mlu", iterations=50)
    print(report.format_table())
    report.raise_for_failures()
"""

from __future__ import annotations

from ._errors import BenchmarkError, CorrectnessError
from .inputs import (
    BUILDERS,
    DEFAULT_SHAPES,
    BenchmarkInputs,
    Builder,
    FunctionSpec,
    function_specs,
    randn,
)
from .measure import TOLERANCES, Check, Stats, tolerance_for
from .report import SCHEMA, BenchmarkReport, CaseResult, plot_report
from .runner import benchmark, benchmark_module
from .scripts import ScriptsReport, run_scripts

__all__ = [
    "SCHEMA",
    "TOLERANCES",
    "BUILDERS",
    "DEFAULT_SHAPES",
    "BenchmarkError",
    "CorrectnessError",
    "BenchmarkInputs",
    "Builder",
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
    "run_scripts",
    "ScriptsReport",
]
