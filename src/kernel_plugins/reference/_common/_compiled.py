"""The compiled tier of the fast path: a reference formula fused by ``torch.compile``.

Inductor turns the formula into one loop that reads each input once and writes each output
once (C++ built from ATen's own vector math on the CPU, Triton on CUDA, ROCm and XPU, and
whatever a vendor registers for its device). It is trusted per (kernel, device type,
dtype) only after a *probe*: the kernel's own check that the compiled code gives bitwise
the plain formula's results on a large, value-covering input. A compiler that is missing,
fails, or rounds differently leaves that key on the uncompiled fast path, which computes
the same bits more slowly; :func:`status` says which and why.

Compiling costs about a second per key on first use (``benchmarks/`` reports it); inductor
keeps what it built in its on-disk cache, so later processes start faster.
``KERNEL_PLUGINS_REFERENCE_FAST=nocompile`` keeps this tier off; ``_fast.status()`` reports it.
"""

from __future__ import annotations

import logging
import threading
import time
import types
from collections.abc import Callable
from typing import Any

import torch

from ._fast import record, status_key

__all__ = ["OPTIONS", "compiled", "inductor_backend"]

_log = logging.getLogger("kernel_plugins.reference")

OPTIONS: dict[str, Any] = {"emulate_precision_casts": True}
"""Inductor options: round half-precision intermediates as eager PyTorch does."""

Probe = Callable[[Callable[..., Any]], "str | None"]
"""Runs a compiled function on a probe input: ``None`` when bitwise right, else the problem."""

_LOCK = threading.Lock()
_STATE: dict[tuple[str, str, str], Callable[..., bool] | str] = {}


def inductor_backend(device_type: str) -> str | None:
    """``None`` when inductor can generate code for ``device_type``, else why not."""
    try:
        import torch._dynamo

        if torch._dynamo.config.disable or not torch._dynamo.is_dynamo_supported():
            return "torch.compile is disabled (TORCHDYNAMO_DISABLE) or unsupported here"
        from torch._inductor.codegen.common import (
            get_scheduling_for_device,
            init_backend_registration,
        )

        init_backend_registration()
        if get_scheduling_for_device(device_type) is None:
            return f"inductor has no code generator for device type {device_type!r}"
    except Exception as exc:  # an inductor that cannot even be imported
        return f"inductor is unavailable: {type(exc).__name__}: {exc}"
    return None


def _own_code(fn: Callable[..., Any], label: str) -> Callable[..., Any]:
    """A copy of ``fn`` with a code object of its own, so that each kernel has its own
    ``torch.compile`` cache (dynamo caches per code object, and closures share theirs)."""
    code = fn.__code__.replace(co_name=label)
    copy = types.FunctionType(code, fn.__globals__, label, fn.__defaults__, fn.__closure__)
    copy.__kwdefaults__ = fn.__kwdefaults__
    return copy


def _build(
    name: str, fn: Callable[..., Any], device_type: str, probe: Probe
) -> tuple[Callable[..., Any] | str, float]:
    """The compiled function or the reason it cannot be used, and the seconds it took."""
    missing = inductor_backend(device_type)
    if missing is not None:
        return missing, 0.0
    started = time.perf_counter()
    try:
        fused = torch.compile(
            _own_code(fn, f"fused_{name}"), dynamic=True, fullgraph=True, options=OPTIONS
        )
        problem = probe(fused)
    except Exception as exc:
        problem = f"compiling failed: {type(exc).__name__}: {str(exc).strip()[:300]}"
    seconds = time.perf_counter() - started
    if problem is not None:
        return problem, seconds
    return fused, seconds


def _guarded(key: tuple[str, str, str], fused: Callable[..., Any]) -> Callable[..., bool]:
    """``fused`` returning True, or False when it raised: a layout that does not compile,
    or dynamo's recompile limit. The key is then taken off the compiled tier for the rest
    of the process (so no call pays for a failing compilation twice) and the caller takes
    the uncompiled path, which also reports any genuine error in the arguments. Compiled
    code writes its outputs only once it runs, so a call that raised wrote nothing."""

    def call(*args: Any) -> bool:
        try:
            fused(*args)
        except Exception as exc:
            reason = f"a compiled call failed: {type(exc).__name__}: {str(exc).strip()[:300]}"
            _STATE[key] = reason
            record(key, "uncompiled", 0.0, reason)
            _log.info("%s on %s (%s) is no longer compiled: %s", *key, reason)
            return False
        return True

    return call


def compiled(
    name: str, fn: Callable[..., Any], device_type: str, dtype: torch.dtype, probe: Probe
) -> Callable[..., bool] | None:
    """``fn`` compiled for ``device_type`` and ``dtype`` once it passed ``probe``, else None.

    The first call per key compiles and probes (under a lock, once per process); the
    outcome is kept, so a key that failed is not tried again. The function returned
    reports whether it ran (see :func:`_guarded`).
    """
    key = status_key(name, device_type, dtype)
    state = _STATE.get(key)
    if state is None:
        with _LOCK:
            state = _STATE.get(key)
            if state is None:
                state, seconds = _build(name, fn, device_type, probe)
                if callable(state):
                    state = _guarded(key, state)
                _STATE[key] = state
                if callable(state):
                    record(key, "compiled", seconds)
                else:
                    record(key, "uncompiled", seconds, state)
                    _log.info("%s on %s (%s) is not compiled: %s", *key, state)
    return state if callable(state) else None
