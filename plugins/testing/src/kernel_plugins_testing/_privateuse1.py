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

from ._errors import EmulationError

__all__ = [
    "EmulatedTensor",
    "install_privateuse1_device",
    "installed_privateuse1_device",
    "is_emulated_tensor",
]

aten = torch.ops.aten

_LOCK = threading.Lock()
_STATE: dict[str, Any] = {"name": None, "count": 0, "module": None}
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

# Ops that move data between devices: mixed devices are their purpose.
_COPY_OPS = frozenset(
    {
        aten.copy_.default,
        aten.copy.default,
        aten._to_copy.default,
        aten._copy_from.default,
        aten._copy_from_and_resize.default,
    }
)
# Ops whose index tensors may live on the host, as on real hardware.
_INDEX_OPS = frozenset(
    {
        aten.index.Tensor,
        aten.index_put.default,
        aten.index_put_.default,
        aten._index_put_impl_.default,
        aten._unsafe_index.Tensor,
        aten._unsafe_index_put.default,
    }
)


class EmulatedTensor(torch.Tensor):
    """A tensor on the emulated device; its values live in a hidden CPU tensor.

    Never construct one directly: use ``torch.ones(3, device="<name>")`` or ``.to()``.
    """

    _inner: torch.Tensor

    @staticmethod
    def __new__(cls, inner: torch.Tensor, device: torch.device) -> EmulatedTensor:
        """Wrap the CPU tensor ``inner`` as a tensor on ``device``."""
        r = torch.Tensor._make_wrapper_subclass(
            cls,
            inner.size(),
            strides=inner.stride(),
            storage_offset=inner.storage_offset(),
            dtype=inner.dtype,
            layout=inner.layout,
            device=device,
            requires_grad=False,
            dispatch_sizes_strides_policy="sizes",
        )
        r._inner = inner
        return r

    def __init__(self, inner: torch.Tensor, device: torch.device) -> None:
        """Nothing to do: :meth:`__new__` built the wrapper."""

    @classmethod
    def __torch_dispatch__(  # type: ignore[override]
        cls,
        func: Any,
        types: Any,
        args: tuple[Any, ...] = (),
        kwargs: dict[str, Any] | None = None,
    ) -> Any:
        """Run ``func`` on the hidden CPU tensors and wrap the results on the device."""
        return _dispatch(func, args, kwargs or {})

    # Traceable-subclass protocol: lets torch.compile see through the wrapper.
    def __tensor_flatten__(self) -> tuple[list[str], torch.device]:
        """The inner tensor's attribute name and the device (the wrapper's metadata)."""
        return ["_inner"], self.device

    @staticmethod
    def __tensor_unflatten__(
        inner_tensors: dict[str, torch.Tensor],
        meta: torch.device,
        outer_size: Any,
        outer_stride: Any,
    ) -> EmulatedTensor:
        """Rebuild a wrapper from :meth:`__tensor_flatten__`'s parts."""
        return EmulatedTensor(inner_tensors["_inner"], meta)

    # ``p.data = new`` copies the TensorImpl only; keep the hidden tensor in step.
    @property
    def data(self) -> torch.Tensor:  # type: ignore[override]
        """A detached alias of this tensor (as ``torch.Tensor.data``)."""
        return torch.Tensor.data.__get__(self)  # type: ignore[attr-defined]

    @data.setter
    def data(self, new: torch.Tensor) -> None:
        torch.Tensor.data.__set__(self, new)  # type: ignore[attr-defined]
        if isinstance(new, EmulatedTensor):
            self._inner = new._inner

    def numpy(self, *, force: bool = False) -> Any:
        """Refuse like real hardware: device memory cannot be viewed as a NumPy array."""
        raise TypeError(
            f"can't convert {self.device} device type tensor to numpy. Use Tensor.cpu() to "
            "copy the tensor to host memory first."
        )

    def __array__(self, dtype: Any = None, copy: Any = None) -> Any:
        """Refuse like :meth:`numpy`."""
        return self.numpy()

    def tolist(self) -> Any:
        """The values as (nested) Python lists, copied to the host first."""
        return self.cpu().tolist()

    def __repr__(self, *, tensor_contents: Any = None) -> str:  # type: ignore[override]
        """Like a real device tensor: the values plus ``device='<name>:<i>'``."""
        with torch._C.DisableTorchFunctionSubclass():
            text = repr(self._inner.detach())
        dev = f"device='{self.device}'"
        at = text.rfind("dtype=")
        if at >= 0:  # torch prints the device before the dtype
            text = f"{text[:at]}{dev}, {text[at:]}"
        elif text.endswith(")"):
            text = text[:-1] + f", {dev})"
        if self.grad_fn is not None:
            text = text[:-1] + f", grad_fn=<{type(self.grad_fn).__name__}>)"
        elif self.requires_grad:
            text = text[:-1] + ", requires_grad=True)"
        return text


def is_emulated_tensor(t: object) -> bool:
    """Whether ``t`` is a tensor on the emulated device."""
    return isinstance(t, EmulatedTensor)


def _inner_of(t: Any) -> Any:
    return t._inner if isinstance(t, EmulatedTensor) else t


def _resolve_device(device: Any) -> torch.device:
    """The full ``<name>:<i>`` device for a request on the emulated type; checks the index."""
    name: str = _STATE["name"]
    count: int = _STATE["count"]
    dev = torch.device(device) if device is not None else torch.device(name)
    index = dev.index
    if index is None:
        module = _STATE["module"]
        index = int(module.current_device()) if module is not None else 0
    if count <= 0:
        raise RuntimeError(
            f"No {name} devices are available (the {name} device is emulated with 0 devices)."
        )
    if not 0 <= index < count:
        raise RuntimeError(
            f"{name} error: invalid device ordinal {index}: the emulated {name} stack has "
            f"{count} device(s) (valid indices 0..{count - 1})."
        )
    return torch.device(name, index)


def _device_mismatch(a: torch.device, b: torch.device, func: Any) -> RuntimeError:
    return RuntimeError(
        f"Expected all tensors to be on the same device, but found at least two devices, "
        f"{a} and {b}! (when running {func} on the emulated {_STATE['name']} device)"
    )


def _leaves(values: Any) -> Iterator[Any]:
    """Arguments of an aten op, one level of lists flattened (aten never nests deeper)."""
    for v in values:
        if isinstance(v, (list, tuple)):
            yield from v
        else:
            yield v


def _unwrap(v: Any) -> Any:
    if isinstance(v, EmulatedTensor):
        return v._inner
    if isinstance(v, (list, tuple)) and any(isinstance(x, EmulatedTensor) for x in v):
        return type(v)(x._inner if isinstance(x, EmulatedTensor) else x for x in v)
    return v


def _check_devices(func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """The common device of the wrapped inputs; raises on a mix like real hardware."""
    indices: Any = ()
    if func in _INDEX_OPS and len(args) > 1:
        indices = args[1]
        args = (args[0], *args[2:])
    checked = [*_leaves(args), *_leaves(kwargs.values())]
    device = None
    copy_op = func in _COPY_OPS
    for a in checked:
        if isinstance(a, EmulatedTensor):
            if device is None:
                device = a.device
            elif a.device != device and not copy_op:
                raise _device_mismatch(device, a.device, func)
    if device is None:
        if any(isinstance(i, EmulatedTensor) for i in indices or ()):
            raise RuntimeError(
                "indices should be either on cpu or on the same device as the indexed tensor "
                f"(cpu) (emulated {_STATE['name']} device)"
            )
        return None
    if not copy_op:
        for a in checked:
            if (
                isinstance(a, torch.Tensor)
                and not isinstance(a, EmulatedTensor)
                and a.dim() != 0
                and a.device.type not in ("meta", _STATE["name"])  # fake tensors under compile
            ):
                raise _device_mismatch(device, a.device, func)
    return device


def _dispatch(func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    target = _check_devices(func, args, kwargs)
    requested = kwargs.get("device")
    if requested is not None:
        requested = torch.device(requested)
        if requested.type == _STATE["name"]:
            target = _resolve_device(requested)
            kwargs = {**kwargs, "device": torch.device("cpu")}
        else:
            target = None
    out = func(*[_unwrap(a) for a in args], **{k: _unwrap(v) for k, v in kwargs.items()})
    if isinstance(out, torch.Tensor):
        return _rewrap(out, target, args, kwargs)
    if isinstance(out, (list, tuple)):
        return type(out)(
            _rewrap(o, target, args, kwargs) if isinstance(o, torch.Tensor) else o for o in out
        )
    return out


def _rewrap(
    t: torch.Tensor, target: torch.device | None, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> torch.Tensor:
    """Wrap an op's result; an input returned as is (in-place, out=) is handed back as is."""
    for a in _leaves((*args, *kwargs.values())):
        if a is t or (isinstance(a, EmulatedTensor) and a._inner is t):
            return a
    if target is None or isinstance(t, EmulatedTensor):
        return t
    return EmulatedTensor(t, target)


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
            raise EmulationError(
                f"{name!r} is a device type PyTorch itself knows; emulate an out-of-tree name"
            )
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
