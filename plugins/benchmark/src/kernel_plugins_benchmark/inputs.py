"""How the arguments of a benchmarked call are built: builders and ``__benchmark__``.

See :mod:`kernel_plugins_benchmark` for the convention a kernel module follows.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from types import ModuleType
from typing import TYPE_CHECKING, Any

from ._errors import BenchmarkError

if TYPE_CHECKING:
    import torch

__all__ = [
    "BenchmarkInputs",
    "Builder",
    "BUILDERS",
    "DEFAULT_SHAPES",
    "FunctionSpec",
    "randn",
    "build_unary",
    "build_gated",
    "build_rms_norm",
    "build_rotary",
    "build_rotary_transformers",
    "function_specs",
    "description",
]


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


def build_unary(
    shape: tuple[int, ...], dtype: torch.dtype, device: torch.device
) -> BenchmarkInputs:
    """``f(out, x)`` element-wise: ``x`` and ``out`` have ``shape``."""
    if not shape or any(s <= 0 for s in shape):
        raise ValueError(f"builder 'unary' needs positive sizes, got {shape}")
    return BenchmarkInputs(
        (_empty(shape, dtype, device), randn(shape, dtype, device)), outputs=(0,)
    )


def build_gated(
    shape: tuple[int, ...], dtype: torch.dtype, device: torch.device
) -> BenchmarkInputs:
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


def build_rotary(
    shape: tuple[int, ...], dtype: torch.dtype, device: torch.device
) -> BenchmarkInputs:
    """``apply_rotary(x1, x2, cos, sin, out1, out2, conj)``: ``shape`` is ``(tokens, heads, d)``.

    ``cos``/``sin`` are ``(tokens, 1, d)``; ``out1``/``out2`` are the results.
    """
    _need_rank("rotary", shape, 3, "(tokens, heads, rotary_dim/2)")
    tokens, _, d = shape
    angles = randn((tokens, 1, d), dtype, device).float()
    cos, sin = angles.cos().to(dtype), angles.sin().to(dtype)
    args = (
        randn(shape, dtype, device),
        randn(shape, dtype, device),
        cos,
        sin,
        _empty(shape, dtype, device),
        _empty(shape, dtype, device),
        False,
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
        (
            randn(shape, dtype, device),
            randn(shape, dtype, device),
            angles.cos().to(dtype),
            angles.sin().to(dtype),
        )
    )


#: Built-in argument builders, by the name ``__benchmark__`` may use.
BUILDERS: dict[str, Builder] = {
    "unary": build_unary,
    "gated": build_gated,
    "rms_norm": build_rms_norm,
    "rotary": build_rotary,
    "rotary_transformers": build_rotary_transformers,
}

#: Default shapes per built-in builder: a small and a medium one, so that a default run
#: is short; pass larger shapes (``--shapes 1024x4096``) to time the large-input paths.
DEFAULT_SHAPES: dict[str, tuple[tuple[int, ...], ...]] = {
    "unary": ((16, 1024), (128, 4096)),
    "gated": ((16, 1024), (128, 4096)),
    "rms_norm": ((16, 1024), (128, 4096)),
    "rotary": ((16, 8, 32), (128, 32, 64)),
    "rotary_transformers": ((1, 8, 16, 64), (1, 32, 128, 128)),
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


def _public_functions(module: ModuleType) -> list[str]:
    return sorted(
        n
        for n in dir(module)
        if not n.startswith("_")
        and (inspect.isfunction(getattr(module, n)) or inspect.isbuiltin(getattr(module, n)))
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


def _shapes(value: Any, where: str) -> tuple[tuple[int, ...], ...]:
    try:
        shapes = tuple(tuple(int(s) for s in shape) for shape in value)
    except (TypeError, ValueError) as e:
        raise BenchmarkError(
            f"{where}: 'shapes' must be a list of int tuples, got {value!r}"
        ) from e
    if not shapes:
        raise BenchmarkError(f"{where}: 'shapes' is empty")
    return shapes


def description(module: ModuleType) -> dict[str, Any]:
    """The module's ``__benchmark__`` dict (empty when it has none)."""
    desc = getattr(module, "__benchmark__", None)
    if desc is None:
        return {}
    if not isinstance(desc, Mapping):
        raise BenchmarkError(
            f"{module.__name__}.__benchmark__ must be a dict (see kernel_plugins_benchmark), got "
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
    desc = description(module)
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
            skipped.append(
                {
                    "function": name,
                    "reason": "no argument builder: describe it in the kernel's __benchmark__",
                }
            )
            continue
        build, builder_name = _builder_of(builder_value, where)
        shapes = (
            _shapes(entry["shapes"], where)
            if "shapes" in entry
            else DEFAULT_SHAPES.get(builder_name, ())
        )
        if not shapes:
            raise BenchmarkError(f"{where}: a custom builder needs 'shapes'")
        specs.append(
            FunctionSpec(
                name,
                build,
                shapes,
                builder_name,
                entry.get("reference"),
                entry.get("rtol"),
                entry.get("atol"),
            )
        )
    return specs, skipped
