"""Check a kernel layer's ``can_torch_compile`` claim with ``torch.library.opcheck``.

A layer that declares ``can_torch_compile = True`` says that the custom operators its
``forward`` calls work with fake tensors and have what ``torch.compile`` needs (schema,
autograd registration, AOT dispatch). :func:`check_layer` runs the layer's ``forward``
once on sample inputs, records every custom operator it calls (a ``TorchFunctionMode``
sees the operators it calls itself, a ``TorchDispatchMode`` those reached below
autograd), and runs ``torch.library.opcheck`` on each with the arguments it was called
with. ``kernel-plugins check --ops TARGET`` and ``kernelize(..., check_ops=True)`` in
``TORCH_COMPILE`` mode use it.

Sample inputs, in this order:

1. declared by the kernel: its ``layers`` module may hold ``__kernel_samples__ =
   {"RMSNorm": samples}`` where ``samples(device)`` returns a list of calls, each
   ``(args, kwargs, attributes)`` (``kwargs`` and ``attributes`` may be left out): the
   arguments of ``forward`` and the attributes it reads from the model's module
   (``weight``, say), set on a fresh instance of the layer class;
2. derived from ``forward``'s signature: each positional parameter without a default
   gets a ``float32`` tensor of shape ``(2, 8)`` on the device (requiring grad when the
   layer has a backward), on a fresh instance of the layer class.

Limits: only the operators reached with those inputs are checked (a branch taken for
other shapes or dtypes is not); a ``forward`` that needs keyword-only or non-tensor
arguments, or attributes of the model's module, needs declared samples, and without
them the layer is reported as not checked; built-in (``aten``) operators are not
checked; a layer whose ``forward`` calls no custom operator passes (there is nothing for
``opcheck`` to check). A check runs real kernels on the device, once per operator and
test; it is opt-in and never part of a plain load.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass, field
from typing import Any

__all__ = ["OpResult", "LayerCheck", "check_layer", "check_kernel_ops", "refusal", "SAMPLE_SHAPE"]

#: Shape of the tensors derived from a forward's signature.
SAMPLE_SHAPE = (2, 8)
_BUILTIN = ("aten", "prim", "prims")


@dataclass(frozen=True)
class OpResult:
    """One operator's ``opcheck``: ``op`` (``namespace::name.overload``) and, per failed
    test (``test_faketensor``...), the first line of its error."""

    op: str
    failed: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class LayerCheck:
    """The check of one layer class: the operators checked, or why it could not be."""

    layer: str
    ops: tuple[OpResult, ...] = ()
    problem: str | None = None

    @property
    def ok(self) -> bool:
        """Checked, and every operator passed every test."""
        return self.problem is None and not any(o.failed for o in self.ops)

    def summary(self) -> str:
        """One line: ``passed opcheck: ops ...``, the failed op and test, or why unchecked."""
        if self.problem is not None:
            return f"torch.compile claim not checked: {self.problem}"
        bad = [f"op {o.op} failed {test}: {err}" for o in self.ops for test, err in o.failed.items()]
        if bad:
            return "torch.compile claim fails torch.library.opcheck: " + "; ".join(bad)
        names = ", ".join(o.op for o in self.ops) or "none (it calls no custom operator)"
        return f"passed torch.library.opcheck: ops {names}"

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {"layer": self.layer, "ok": self.ok, "problem": self.problem,
                "ops": [{"op": o.op, "failed": dict(o.failed)} for o in self.ops]}


Call = tuple[Any, tuple[Any, ...], dict[str, Any]]


def _recorders(calls: dict[str, Call]) -> tuple[Any, Any]:
    """A torch-function mode and a dispatch mode that put each custom operator called
    (``namespace::name.overload``) into ``calls``, with its first arguments."""
    import torch
    from torch.overrides import TorchFunctionMode
    from torch.utils._python_dispatch import TorchDispatchMode

    def record(func: Any, args: tuple[Any, ...], kwargs: dict[str, Any] | None) -> Any:
        op = getattr(func, "default", None) if isinstance(func, torch._ops.OpOverloadPacket) else func
        if isinstance(op, torch._ops.OpOverload) and op.namespace not in _BUILTIN:
            calls.setdefault(op.name(), (op, args, dict(kwargs or {})))
        return func(*args, **(kwargs or {}))

    class Calls(TorchFunctionMode):
        def __torch_function__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
            return record(func, args, kwargs)

    class Below(TorchDispatchMode):
        def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
            return record(func, args, kwargs)

    return Calls(), Below()


def _samples(cls: type, module: Any, device: str) -> list[Call]:
    """``(layer, args, kwargs)`` for each sample call of ``forward`` (see the module
    docs); raises when none can be made."""
    import torch

    declared = (getattr(module, "__kernel_samples__", None) or {}).get(cls.__name__)
    if declared is not None:
        calls = []
        for args, kwargs, attributes in ((*s, {}, {})[:3] for s in declared(torch.device(device))):
            layer = cls()
            for name, value in attributes.items():
                setattr(layer, name, value)
            calls.append((layer, tuple(args), dict(kwargs)))
        return calls
    layer = cls()
    grad = bool(getattr(cls, "has_backward", True))
    args = []
    for p in list(inspect.signature(getattr(cls, "forward")).parameters.values())[1:]:  # noqa: B009
        if p.default is not p.empty or p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            continue
        if p.kind is p.KEYWORD_ONLY:
            raise ValueError(f"forward's keyword-only parameter `{p.name}` has no default")
        args.append(torch.randn(*SAMPLE_SHAPE, device=device, requires_grad=grad))
    return [(layer, tuple(args), {})]


def check_layer(cls: type, device: str = "cpu", *, module: Any = None) -> LayerCheck:
    """Run ``opcheck`` on every custom operator ``cls.forward`` calls (see the module docs).

    :param cls: a kernel layer class. :param device: the torch device to run on.
    :param module: the kernel's ``layers`` module (for ``__kernel_samples__``; default:
        the module ``cls`` is defined in).
    :return: a :class:`LayerCheck`; never raises for a failing kernel.
    """
    import sys

    import torch

    name = cls.__name__
    module = module if module is not None else sys.modules.get(cls.__module__)
    try:
        samples = _samples(cls, module, device)
    except Exception as e:  # noqa: BLE001 - reported as the reason it is not checked
        return LayerCheck(name, problem=f"no sample inputs for {name}.forward ({_first_line(e)}); "
                          "declare them in the layers module's __kernel_samples__")
    calls: dict[str, Call] = {}
    for layer, args, kwargs in samples:
        above, below = _recorders(calls)
        try:
            with above, below:
                layer(*args, **kwargs)
        except Exception as e:  # noqa: BLE001
            return LayerCheck(name, problem=f"{name}.forward failed on its sample inputs "
                              f"({_first_line(e)}); declare __kernel_samples__")
    results = []
    for op_name, (op, args, kwargs) in sorted(calls.items()):
        report = torch.library.opcheck(op, args, kwargs, raise_exception=False)
        results.append(OpResult(op_name, {test: _first_line(err)[:300] for test, err in report.items()
                                          if err != "SUCCESS"}))
    return LayerCheck(name, tuple(results))


def _first_line(e: object) -> str:
    text = str(e).strip()
    return f"{type(e).__name__}: {text.splitlines()[0]}" if text else type(e).__name__


def refusal(layer: type, device: str, kernel: Any) -> str | None:
    """``kernelize(..., check_ops=True)``'s question: why ``layer`` (of the loaded kernel
    module ``kernel``) may not serve ``TORCH_COMPILE``, or None when its check passed. The
    summary goes into the kernel's provenance (``op_checks``)."""
    result = check_layer(layer, device)
    prov = getattr(kernel, "__kernel_provenance__", None)
    if prov is not None:
        prov.op_checks[layer.__name__] = result.summary()
    return None if result.ok else result.summary()


def check_kernel_ops(kernel: Any, device: str = "cpu") -> list[LayerCheck]:
    """:func:`check_layer` for every layer class of a loaded kernel module that declares
    ``can_torch_compile = True`` (in ``kernel.layers``), sorted by name."""
    import torch

    layers = getattr(kernel, "layers", None)
    found = sorted((n, c) for n, c in (vars(layers) if layers is not None else {}).items() if inspect.isclass(c)
                   and issubclass(c, torch.nn.Module) and getattr(c, "can_torch_compile", False) is True
                   and c.__module__ == getattr(layers, "__name__", None))
    return [check_layer(c, device, module=layers) for _, c in found]
