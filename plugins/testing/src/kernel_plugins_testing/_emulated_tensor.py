"""The tensors of an emulated PrivateUse1 device: :class:`EmulatedTensor`, a wrapper
subclass holding a hidden CPU tensor, and the dispatch that runs every aten op on the CPU
after checking that the inputs share one device (as real hardware does).

This module imports torch; import it lazily (through :mod:`._privateuse1`).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import torch

__all__ = ["EmulatedTensor", "is_emulated_tensor"]

aten = torch.ops.aten

_STATE: dict[str, Any] = {"name": None, "count": 0, "module": None}


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
