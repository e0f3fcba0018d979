"""PyTorch custom operators of the reference activation kernel, in the namespace of this
variant's metadata ``id`` (so two builds load side by side). Per activation ``<name>``:

* ``<name>(Tensor(a!) out, Tensor x[, float threshold]) -> ()``: the Hub kernel's
  out-variant, ``CompositeImplicitAutograd`` over ``<name>_functional`` copied into ``out``
  (on large inputs outside autograd and tracing: the same ops straight into ``out``);
* ``<name>_functional(Tensor x[, float threshold]) -> Tensor``: an opaque custom op with a
  fake implementation and an autograd formula;
* ``<name>_backward(Tensor grad, Tensor x[, float threshold]) -> Tensor``: the gradient
  (opaque, with a fake implementation; no double backward).

Importing this module again in the same process registers nothing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import torch

from ._direct import WIDE_ONLY, act_into
from ._fast import may_alias, route
from ._namespace import NAMESPACE, add_op_namespace_prefix, has_op
from ._native import ACTIVATIONS, Activation

if TYPE_CHECKING:
    from torch import Tensor

__all__ = ["NAMESPACE", "ops", "add_op_namespace_prefix"]


def _split(x: Tensor) -> tuple[Tensor, Tensor]:
    """Split the last dimension of ``x`` into two equal halves."""
    size = x.shape[-1]
    torch._check(size % 2 == 0, lambda: f"the last dimension of the input must be even to split it in half, "
                                        f"got {size}")
    d = size // 2
    return x[..., :d], x[..., d:]


def _forward(spec: Activation, x: Tensor, params: tuple[float, ...]) -> Tensor:
    """The activation formula ``spec`` on ``x`` with native PyTorch ops."""
    if spec.kind == "unary":
        return spec.act(x, *params)
    a, b = _split(x)
    if spec.kind == "act_and_mul":
        return spec.act(a, *params) * b
    return a * spec.act(b, *params)


def _backward(spec: Activation, grad: Tensor, x: Tensor, params: tuple[float, ...]) -> Tensor:
    """Gradient of ``_forward(spec, x, params)`` with respect to ``x`` given ``grad``."""
    if spec.kind == "unary":
        return spec.grad(x, grad, *params)
    a, b = _split(x)
    if spec.kind == "act_and_mul":
        grad_a = spec.grad(a, grad * b, *params)
        grad_b = grad * spec.act(a, *params)
    else:
        grad_a = grad * spec.act(b, *params)
        grad_b = spec.grad(b, grad * a, *params)
    return torch.cat([grad_a, grad_b], dim=-1)


def _out_shape(spec: Activation, x: Tensor) -> list[Any]:
    """Shape of the result of ``spec`` on ``x`` (works on fake tensors)."""
    if spec.kind == "unary":
        return list(x.shape)
    return [*x.shape[:-1], x.shape[-1] // 2]


def _schema_params(spec: Activation, *, defaults: bool) -> str:
    """The float parameters of ``spec`` as a schema fragment, e.g. ``", float threshold=0.0"``."""
    return "".join(f", float {n}={d}" if defaults else f", float {n}" for n, d in spec.params)


def _direct_ok(spec: Activation, out: Tensor, x: Tensor) -> bool:
    """Whether the fast path may write ``spec`` of ``x`` straight into ``out``: a large input
    outside autograd and tracing (``_fast.route``), contiguous ``x`` and ``out`` of the result's
    shape and dtype (a strided input would take ATen's scalar loops, which round some
    functions differently from the plain formula's contiguous result), no shared memory."""
    if route(x, out) == "eager" or x.dim() == 0 or not x.is_contiguous():
        return False
    if (spec.kind != "unary" and x.shape[-1] % 2) or (spec.act in WIDE_ONLY and x.element_size() < 4):
        return False
    return (out.dtype == x.dtype and out.device == x.device and out.is_contiguous()
            and list(out.shape) == _out_shape(spec, x) and not may_alias(out, x))


def _params(spec: Activation, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[float, ...]:
    """The float parameters of ``spec`` from positional/keyword arguments, defaults filled."""
    rest = [kwargs.get(name, default) for name, default in spec.params[len(args) :]]
    return tuple(float(v) for v in (*args, *rest))


def _register(spec: Activation) -> None:
    """Register the three operators of one activation unless they already exist."""
    name = spec.name
    params_sig = _schema_params(spec, defaults=True)
    n_params = len(spec.params)

    if not has_op(f"{name}_backward"):

        def backward_impl(grad: Tensor, x: Tensor, *args: float, **kwargs: float) -> Tensor:
            return _backward(spec, grad, x, _params(spec, args, kwargs))

        backward_op = torch.library.custom_op(
            add_op_namespace_prefix(f"{name}_backward"), backward_impl, mutates_args=(),
            schema=f"(Tensor grad, Tensor x{_schema_params(spec, defaults=False)}) -> Tensor")

        @backward_op.register_fake
        def _(grad: Tensor, x: Tensor, *args: float, **kwargs: float) -> Tensor:
            return torch.empty_like(x)

    backward = getattr(getattr(torch.ops, NAMESPACE), f"{name}_backward")

    if not has_op(f"{name}_functional"):

        def functional_impl(x: Tensor, *args: float, **kwargs: float) -> Tensor:
            return _forward(spec, x, _params(spec, args, kwargs))

        functional_op = torch.library.custom_op(
            add_op_namespace_prefix(f"{name}_functional"), functional_impl, mutates_args=(),
            schema=f"(Tensor x{params_sig}) -> Tensor")

        @functional_op.register_fake
        def _(x: Tensor, *args: float, **kwargs: float) -> Tensor:
            if spec.kind != "unary":
                _split(x)
            return x.new_empty(_out_shape(spec, x))

        def setup_context(ctx: Any, inputs: tuple[Any, ...], output: Tensor) -> None:
            ctx.save_for_backward(inputs[0])
            ctx.params = _params(spec, tuple(inputs[1:]), {})

        def autograd_backward(ctx: Any, grad: Tensor) -> tuple[Tensor | None, ...]:
            (x,) = ctx.saved_tensors
            return (backward(grad, x, *ctx.params), *([None] * n_params))

        functional_op.register_autograd(autograd_backward, setup_context=setup_context)

    functional = getattr(getattr(torch.ops, NAMESPACE), f"{name}_functional")

    if not has_op(name):

        def out_impl(out: Tensor, x: Tensor, *args: float, **kwargs: float) -> None:
            params = _params(spec, args, kwargs)
            if _direct_ok(spec, out, x):
                act_into(spec, out, x, params)
                return
            result = functional(x, *params)
            torch._check(tuple(out.shape) == tuple(result.shape), lambda: (
                f"{name}: `out` has shape {tuple(out.shape)} but the result has shape "
                f"{tuple(result.shape)}; allocate `out` with the result's shape"))
            out.copy_(result)

        qualname = add_op_namespace_prefix(name)
        torch.library.define(qualname, f"(Tensor(a!) out, Tensor x{params_sig}) -> ()",
                             tags=(torch.Tag.pt2_compliant_tag,))
        torch.library.impl(qualname, "CompositeImplicitAutograd", out_impl)


for _spec in ACTIVATIONS:
    _register(_spec)

ops = getattr(torch.ops, NAMESPACE)
"""The operator namespace ``torch.ops.<metadata id>``."""
