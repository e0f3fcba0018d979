"""A full accelerator emulated on the CPU through PyTorch's PrivateUse1 key.

:func:`install_privateuse1_device` renames PrivateUse1 (once per process), registers
a ``torch.<name>`` module and makes tensors on ``<name>:<i>`` work: factories,
``.to()``, ``model.to()``, forward, backward, optimizers and ``torch.autocast``.

Every device tensor is an :class:`EmulatedTensor`, a wrapper subclass that holds a
hidden CPU tensor (``_inner``). Its ``__torch_dispatch__`` unwraps the inputs, checks
that they share one device (as real hardware does), runs the aten op on the CPU and
wraps the results on the input's device, index included. Factory functions and
host/device copies reach explicit PrivateUse1 kernels registered here.

What it proves and what it does not: routing, device bookkeeping, dtype handling and
error paths of the code under test; never vendor kernels, collectives or speed. Not
available: ``torch.Generator(<name>)`` (random numbers come from the CPU generator),
pinned memory, ``data_ptr()`` (0), storage access, ``torch.accelerator.set_device_index``
and ``torch.accelerator.synchronize()``.

This module imports torch; import it lazily.
"""

from __future__ import annotations

import functools
import threading
import types
from collections.abc import Callable, Iterator
from typing import Any

import torch
from torch.utils import _pytree as pytree

from ._emulated_tensor import (
    _STATE,
    EmulatedTensor,
    _dispatch,
    _inner_of,
    _resolve_device,
    is_emulated_tensor,
)
from ._errors import EmulationError

__all__ = [
    "EmulatedTensor",
    "install_privateuse1_device",
    "installed_privateuse1_device",
    "is_emulated_tensor",
]

aten = torch.ops.aten

_LOCK = threading.Lock()
# Library objects must stay alive for their registrations to stay in place.
_LIBRARIES: list[torch.library.Library] = []
_RESERVED = frozenset(
    {
        "cpu",
        "cuda",
        "hip",
        "mps",
        "xpu",
        "meta",
        "xla",
        "lazy",
        "ipu",
        "mtia",
        "hpu",
        "ve",
        "vulkan",
        "metal",
        "fpga",
        "maia",
        "ort",
        "mkldnn",
        "opengl",
        "opencl",
        "ideep",
        "privateuseone",
        "msnpu",
        "mlc",
        "cuda_graph",
    }
)


# --------------------------------------------------------------- PrivateUse1 kernels
def _k_empty(size: Any, **kw: Any) -> torch.Tensor:
    device = _resolve_device(kw.pop("device", None))
    kw.pop("pin_memory", None)
    return EmulatedTensor(aten.empty.memory_format(size, device="cpu", **kw), device)


def _k_empty_strided(size: Any, stride: Any, **kw: Any) -> torch.Tensor:
    device = _resolve_device(kw.pop("device", None))
    kw.pop("pin_memory", None)
    return EmulatedTensor(aten.empty_strided.default(size, stride, device="cpu", **kw), device)


def _k_copy_from(src: torch.Tensor, dst: torch.Tensor, non_blocking: bool = False) -> Any:
    _inner_of(dst).copy_(_inner_of(src))
    return dst


def _k_copy_from_and_resize(src: torch.Tensor, dst: torch.Tensor) -> Any:
    inner = _inner_of(dst)
    inner.resize_(_inner_of(src).shape)
    inner.copy_(_inner_of(src))
    return dst


def _k_copy_(dst: torch.Tensor, src: torch.Tensor, non_blocking: bool = False) -> Any:
    _inner_of(dst).copy_(_inner_of(src))
    return dst


def _fallback(op: Any, *args: Any, **kwargs: Any) -> Any:
    """PrivateUse1 kernel for any other op reached without a wrapper (e.g. a factory)."""
    return _dispatch(op, args, kwargs)


# Ops AMP runs in lower precision (a subset of CUDA's list, enough for matmul-heavy code).
_AUTOCAST_LOWER = (
    "mm",
    "bmm",
    "addmm",
    "addbmm",
    "baddbmm",
    "matmul",
    "linear",
    "conv1d",
    "conv2d",
    "conv3d",
    "conv_transpose1d",
    "conv_transpose2d",
    "conv_transpose3d",
    "prelu",
    "_convolution",
    "convolution",
    "addmv",
    "mv",
    "chain_matmul",
)


def _autocast_kernel(op: Any) -> Callable[..., Any]:
    keyset = torch._C.DispatchKeySet(
        torch._C.DispatchKey.AutocastPrivateUse1  # type: ignore[attr-defined]
    )

    def kernel(*args: Any, **kwargs: Any) -> Any:
        dtype = torch.get_autocast_dtype(_STATE["name"])

        def cast(t: torch.Tensor) -> torch.Tensor:
            if isinstance(t, EmulatedTensor) and t.is_floating_point() and t.dtype != torch.float64:
                return t.to(dtype)
            return t

        args, kwargs = pytree.tree_map_only(torch.Tensor, cast, (args, kwargs))
        with torch._C._ExcludeDispatchKeyGuard(keyset):
            return op(*args, **kwargs)

    return kernel


def _cpu_kernel_ops() -> Iterator[tuple[str, Any]]:
    """aten ops with both a CPU kernel and a CompositeImplicitAutograd decomposition.

    A backend without its own kernel for them gets the decomposition (e.g. silu_backward
    as sigmoid arithmetic), whose last bits differ from the CPU kernel; the emulated
    device registers the CPU kernel for them so results match the CPU bit for bit.
    """
    has = torch._C._dispatch_has_kernel_for_dispatch_key
    for qualified in torch._C._dispatch_get_all_op_names():
        if not qualified.startswith("aten::"):
            continue
        if not (has(qualified, "CompositeImplicitAutograd") and has(qualified, "CPU")):
            continue
        name = qualified[len("aten::") :]
        base, _, overload = name.partition(".")
        packet = getattr(aten, base, None)
        op = getattr(packet, overload or "default", None) if packet is not None else None
        if op is not None:
            yield name, op


def _cpu_kernel(op: Any) -> Callable[..., Any]:
    def kernel(*args: Any, **kwargs: Any) -> Any:
        return _dispatch(op, args, kwargs)

    return kernel


def _register_kernels() -> None:
    impl = torch.library.Library("aten", "IMPL")
    for name, op in _cpu_kernel_ops():
        impl.impl(name, _cpu_kernel(op), "PrivateUse1")
    impl.impl("empty.memory_format", _k_empty, "PrivateUse1")
    impl.impl("empty_strided", _k_empty_strided, "PrivateUse1")
    impl.impl("_copy_from", _k_copy_from, "PrivateUse1")
    impl.impl("_copy_from_and_resize", _k_copy_from_and_resize, "PrivateUse1")
    impl.impl("copy_", _k_copy_, "PrivateUse1")
    for op_name in _AUTOCAST_LOWER:
        packet = getattr(aten, op_name, None)
        if packet is None:
            continue
        for overload in packet.overloads():
            op = getattr(packet, overload)
            qualified = op_name if overload == "default" else f"{op_name}.{overload}"
            impl.impl(qualified, _autocast_kernel(op), "AutocastPrivateUse1")
    glob = torch.library.Library("_", "IMPL")
    glob.fallback(_fallback, "PrivateUse1")
    glob.fallback(torch.library.fallthrough_kernel, "AutocastPrivateUse1")
    _LIBRARIES.extend([impl, glob])


class _Hooks(torch._C._acc.PrivateUse1Hooks):  # type: ignore[misc]
    """Answers PyTorch's availability questions for the emulated backend."""

    def is_available(self) -> bool:
        return int(_STATE["count"]) > 0

    def has_primary_context(self, dev_id: int) -> bool:
        return 0 <= dev_id < int(_STATE["count"])

    def is_built(self) -> bool:
        return True


class _Guard(torch._C._acc.DeviceGuard):  # type: ignore[misc]
    """The device guard PyTorch asks for the backend's type."""

    def type_(self) -> Any:
        return torch._C._autograd.DeviceType.PrivateUse1


def _single_threaded_backward() -> None:
    """Run every backward pass in the calling thread (not on per-device autograd threads).

    PyTorch's Python-registered PrivateUse1 device guard always reports one device, so
    the autograd engine creates one device queue and asserts for a graph on ``<name>:1``
    and above. Without multithreading the engine uses the caller's CPU queue for every
    device, which is also what happens for CPU tensors.
    """
    import torch.autograd.graph as graph

    original = graph._engine_run_backward
    if getattr(original, "__kernel_plugins_emulated__", False):
        return

    @functools.wraps(original)
    def run_backward(*args: Any, **kwargs: Any) -> Any:
        with torch.autograd.set_multithreading_enabled(False):
            return original(*args, **kwargs)

    run_backward.__kernel_plugins_emulated__ = True  # type: ignore[attr-defined]
    graph._engine_run_backward = run_backward
    torch.autograd._engine_run_backward = run_backward  # type: ignore[attr-defined]


def installed_privateuse1_device() -> tuple[str, int] | None:
    """``(name, count)`` of the device this module installed, or None."""
    name = _STATE["name"]
    return None if name is None else (name, int(_STATE["count"]))


def install_privateuse1_device(name: str, count: int, module: types.ModuleType) -> None:
    """Rename PrivateUse1 to ``name``, register ``module`` as ``torch.<name>``, enable tensors.

    Once per process: the same name again is a no-op (the first count and module stay);
    another name raises :class:`EmulationError`, as does a name a real backend owns.

    Args:
        name: the device type, a lowercase identifier such as ``"mlu"``.
        count: number of devices; tensors work on ``<name>:0`` .. ``<name>:<count-1>``
            (0 emulates a stack without devices: creating a tensor raises).
        module: the ``torch.<name>`` module (see :func:`make_device_module`); its
            ``current_device()`` picks the index when a request names none.
    """
    with _LOCK:
        current = _STATE["name"]
        if current is not None:
            if current == name:
                return
            raise EmulationError(
                f"cannot emulate device {name!r}: this process already emulates {current!r}, "
                "and PyTorch allows one PrivateUse1 device name per process. Run the code for "
                f"{name!r} in a fresh interpreter (kernel_plugins_testing."
                "run_in_fresh_interpreter, or one pytest run per device)."
            )
        if count < 0:
            raise EmulationError(f"device count must be >= 0, got {count}")
        if name in _RESERVED:
            from kernel_plugins.emulation_registry import in_tree_reason

            raise EmulationError(f"cannot emulate {name!r}: " + (
                in_tree_reason(name) or "PyTorch uses this name itself; emulate an out-of-tree name"))
        existing = torch._C._get_privateuse1_backend_name()
        if existing != "privateuseone":
            raise EmulationError(
                f"cannot emulate {name!r}: PrivateUse1 is already named {existing!r} in this "
                "process (a real vendor extension is loaded?). Emulate in a fresh interpreter "
                "without the vendor package, e.g. with TORCH_DEVICE_BACKEND_AUTOLOAD=0."
            )
        if hasattr(torch, name):
            raise EmulationError(
                f"cannot emulate {name!r}: torch.{name} already exists; pick another name"
            )
        torch.utils.rename_privateuse1_backend(name)
        _STATE.update(name=name, count=int(count), module=module)
        torch.utils.generate_methods_for_privateuse1_backend()
        torch._register_device_module(name, module)
        torch._C._acc.register_python_privateuseone_hook(_Hooks())
        torch._C._acc.register_python_privateuseone_device_guard(_Guard())
        _register_kernels()
        _single_threaded_backward()
        # Saved device tensors reload with torch.load's default weights_only=True.
        torch.serialization.add_safe_globals([EmulatedTensor])
