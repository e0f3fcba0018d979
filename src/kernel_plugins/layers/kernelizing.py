"""``kernelize``: replace the forward of marked layers by the mapped kernels' forwards.

For each module of the model whose class is marked (``kernel_layer_name``), the
candidates of the active mapping (:mod:`~kernel_plugins.layers.mapping`) are tried in
order. A candidate is loaded with :func:`kernel_plugins.load` (once per kernelize call),
its layer class or function validated (:mod:`~kernel_plugins.layers.validation`), and it
is used when it fits the mode and declares every required property. The module
instance then gets ``forward = MethodType(kernel_cls.forward, module)`` (for a
:class:`~kernel_plugins.layers.FuncRepository` entry: the kernel function itself on a function
marked here, else bound, dropping ``self``: HF kernels' function wrappers read
``forward.__func__``), so a call goes straight to the kernel's code. A marked function
(a module, see :mod:`~kernel_plugins.layers.decorators`) may be served by either: a layer
class's ``forward`` without ``self`` must match the function's signature. Marked functions
attached with :func:`~kernel_plugins.layers.use_kernelized_func` are found through the
modules that hold them, as the Hub ``kernels`` package does.

When no candidate fits:

* with ``require`` non-empty: :class:`~kernel_plugins.errors.ContractError`; the original
  forward declares no properties, so it never stands in;
* else with ``use_fallback=True``: the original forward (the class's own);
* else :class:`~kernel_plugins.errors.LayerError` naming the layer, the device, the mode
  and what each candidate lacked.

A candidate that cannot be loaded on this device (no compatible variant, Hub
unreachable, a missing Python dependency) is skipped with a warning. Other load errors
(integrity, trust, lock file, strict-mode refusals...) and invalid kernel layers raise.
The loader itself decides on reference fallbacks and reports them.

``DISABLE_KERNEL_MAPPING=1`` (read at each call) makes kernelize restore the original
forward of every marked module instead.
"""

from __future__ import annotations

import functools
import inspect
import itertools
import logging
import types
from typing import TYPE_CHECKING, Any

from .._record import record
from .._warn import warn_user
from ..contracts import format_properties, normalize_require
from ..errors import ContractError, LayerError
from ..fallback import deferred_warnings, warn_reference
from ._session import DISABLE_ENV, Session, load_member, mapping_disabled
from .decorators import kernel_funcs, marked_name, original_function
from .mapping import Candidate, describe_device
from .mode import Mode, check_kernelize_mode, describe_mode
from .report import REPO
from .validation import missing_for

if TYPE_CHECKING:
    from torch import nn

    from ..loader import FallbackPolicy

__all__ = ["kernelize", "KernelChoice", "kernel_choice", "mapping_disabled", "load_member", "DISABLE_ENV"]

log = logging.getLogger("kernel_plugins.layers")

#: Where kernelize keeps its decision: in the module's own ``__dict__``, beside the forward it
#: installs (no weak reference per module, and a copy of the model keeps both).
_CHOICE = "_kernel_plugins_choice"


@record
class KernelChoice:
    """What the last kernelize call decided for one module.

    Attributes:
        layer_name: the marked name. mode: the kernelize mode. device: the device, as text.
        candidate: the mapping entry used, or None when the original forward is used.
        kernel_module: ``__name__`` of the loaded kernel module, or None.
        skipped: one line per candidate tried before, with why it was not used.
        provenance: the kernel module's ``__kernel_provenance__`` (source ``hub``,
            ``local``, ``reference``...), or None.
    """

    layer_name: str
    mode: Mode
    device: str
    candidate: Candidate | None
    kernel_module: str | None
    skipped: tuple[str, ...] = ()
    provenance: Any = None

    @property
    def uses_kernel(self) -> bool:
        """True when a kernel's forward replaced the original."""
        return self.candidate is not None


def kernel_choice(module: object) -> KernelChoice | None:
    """The decision of the last :func:`kernelize` for this module instance, or None."""
    choice = getattr(module, "__dict__", {}).get(_CHOICE)
    return choice if isinstance(choice, KernelChoice) else None


def _nothing_mapped(session: Session, name: str) -> str:
    keys = session.mapping.device_keys(name)
    if not keys:
        layers = ", ".join(session.mapping.layer_names()) or "none"
        return f"  - `{name}` is not in the kernel mapping (mapped layers: {layers})"
    dev = session.device
    return (f"  - nothing mapped for `{name}` fits backend {dev.backend!r} / device type {dev.device_type!r} "
            f"in this mode and capability (mapped device keys: {', '.join(keys)})")


@record
class _Decision:
    """What every module of one marked class gets: ``forward`` (the kernel layer class's
    forward to bind to each instance, or the kernel function itself; None: the original
    forward) and the :class:`KernelChoice` to record (None: forget any earlier one)."""

    forward: Any
    bind: bool
    choice: KernelChoice | None


_ORIGINAL = _Decision(None, False, None)


def _decide(module: Any, name: str, session: Session) -> _Decision:
    """Choose for one module without changing it (raises when nothing may serve it)."""
    cls_name = type(module).__name__
    what = f"layer `{name}` ({cls_name})"
    if session.disabled:
        if session.require:
            raise ContractError(
                f"{what} requires {format_properties(session.require)}, but {DISABLE_ENV}=1 keeps the "
                f"original forward, which declares no properties; unset {DISABLE_ENV} or drop require")
        return _ORIGINAL
    skipped: list[str] = []
    device = describe_device(session.device)
    for cand in session.mapping.candidates(name, session.device, session.mode):
        found = session.implementation(cand, module)
        if isinstance(found, str):
            skipped.append(f"  - {cand.describe()}: {found}")
            continue
        impl, traits = found
        lacks = missing_for(traits, session.mode, session.require)
        if lacks:
            skipped.append(f"  - {cand.describe()}: lacks {'; '.join(lacks)}")
            continue
        if session.check_ops and inspect.isclass(impl) and (problem := session.ops_problem(cand.repo, impl)):
            skipped.append(f"  - {cand.describe()}: {problem}")
            continue
        kmod = session.load(cand.repo)
        choice = KernelChoice(name, session.mode, device, cand, getattr(kmod, "__name__", None), tuple(skipped),
                              getattr(kmod, "__kernel_provenance__", None))
        log.info("kernelize: %s uses %s", what, cand.describe())
        if inspect.isclass(impl):
            return _Decision(getattr(impl, "forward"), True, choice)  # noqa: B009
        if original_function(module) is None:  # as kernels does: bound (its wrappers read __func__)
            return _Decision(_without_self(impl), True, choice)
        return _Decision(impl, False, choice)
    reasons = skipped or [_nothing_mapped(session, name)]
    context = f"{what} on {device} in mode {describe_mode(session.mode)}"
    if session.require:
        raise ContractError(
            f"{context} requires {format_properties(session.require)}, and no kernel provides it:\n"
            + "\n".join(reasons) + f"\nThe original forward of `{cls_name}` declares no properties, so it is "
            f"never used when properties are required. Map a kernel that declares them (__kernel_properties__ = "
            f"{{'{cls_name}': frozenset({{...}})}} in its layers module) or drop require.")
    if not session.use_fallback:
        raise LayerError(f"no kernel fits {context}:\n" + "\n".join(reasons)
                         + "\nMap a kernel that fits, or pass use_fallback=True to keep the original forward.")
    log.info("kernelize: %s keeps its original forward:\n%s", context, "\n".join(reasons))
    return _Decision(None, False, KernelChoice(name, session.mode, device, None, None, tuple(reasons)))


def _without_self(func: Any) -> Any:
    """``func`` as a method that drops ``self`` (how a function serves a layer, or HF kernels' wrapper)."""

    @functools.wraps(func)
    def forward(self: Any, *args: Any, **kwargs: Any) -> Any:
        return func(*args, **kwargs)

    return forward


def _apply(modules: list[Any], decision: _Decision) -> None:
    # Straight into each instance dict: ``module.forward = f`` without nn.Module.__setattr__'s lookups.
    # ``_kernel_repo`` as HF kernels leaves it, so its get_kernelized_layers reports ours too
    forward, choice = decision.forward, decision.choice
    for module in modules:
        state = module.__dict__
        if forward is None:
            state.pop("forward", None)
            state.pop(REPO, None)
        else:
            state["forward"] = types.MethodType(forward, module) if decision.bind else forward
            state[REPO] = choice.candidate.repo  # type: ignore[union-attr]
        if choice is None:
            state.pop(_CHOICE, None)
        else:
            state[_CHOICE] = choice


def kernelize(model: nn.Module, *, mode: Mode | None = None, device: object = None, use_fallback: bool = True,
              require: set[str] | frozenset[str] | str | None = None, trust_remote_code: bool = False,
              fallback: FallbackPolicy = "reference", check_ops: bool = False) -> nn.Module:
    """Replace the forward of every marked layer of ``model`` by the best mapped kernel's.

    :param model: the model (any ``nn.Module``; the model itself may be a marked layer).
        Marked functions that its modules hold through
        :func:`~kernel_plugins.layers.use_kernelized_func` (``_kernel_funcs``) are
        served too; a marked class's ``kernel_condition`` can exclude instances.
    :param mode: ``Mode.INFERENCE`` or ``Mode.TRAINING``, optionally ``| Mode.TORCH_COMPILE``;
        default: ``Mode.TRAINING`` when ``model.training`` is set, else ``Mode.INFERENCE``.
    :param device: ``"cuda"``, ``"mlu:1"``, a ``torch.device`` or a DeviceInfo; default:
        the device of the model's first parameter (or buffer), so a CPU model gets CPU
        kernels on any machine; a model without tensors gets
        :func:`kernel_plugins.get_device` (the preferred available device).
    :param use_fallback: keep the original forward when no kernel fits (else raise
        :class:`~kernel_plugins.errors.LayerError`).
    :param require: properties every chosen kernel must declare (e.g. ``{"deterministic"}``);
        see :mod:`kernel_plugins.contracts`. The original forward never satisfies them.
    :param trust_remote_code: allow mapped Hub repositories of organisations outside the
        trusted list (see :mod:`kernel_plugins.trust`); the check applies to every repo.
    :param fallback: as for :func:`kernel_plugins.load`: ``"reference"`` lets a bundled
        reference kernel stand in (with a warning) when a Hub kernel cannot be used,
        ``"error"`` refuses that (:class:`~kernel_plugins.errors.FallbackError`).
    :param check_ops: with ``Mode.TORCH_COMPILE``, check each kernel layer's claim with
        ``torch.library.opcheck`` (kernel-plugins-check): a failing operator refuses the
        layer for this mode, naming the operator and the test; results go into the
        kernel's provenance (``op_checks``).
    :return: ``model`` itself, changed in place. When kernelize raises, no module was
        changed.

    Example::

        model = kernelize(model, mode=Mode.INFERENCE | Mode.TORCH_COMPILE, device="mlu")
    """
    import torch.nn as nn

    if not isinstance(model, nn.Module):
        raise LayerError(f"kernelize expects a torch.nn.Module, got {type(model).__name__}")
    if mode is None:
        mode = Mode.TRAINING if model.training else Mode.INFERENCE
    mode = check_kernelize_mode(mode)
    required = normalize_require(require)
    session = Session(mode, _model_device(model) if device is None else device, required, use_fallback,
                      trust_remote_code, fallback, check_ops)
    # The mark, the marked function and so the decision belong to the class: decide once
    # per class, and change no module before every one was decided (all or nothing).
    groups, excluded = _marked_modules(model)
    with deferred_warnings() as fallbacks:  # said once below, naming the layers served
        plan = [(_decide(modules[0], name, session), modules) for name, modules in groups]
    for decision, modules in plan:
        _apply(modules, decision)
    for kmod, kernel, device, why in fallbacks:
        if served := sorted({d.choice.layer_name for d, _ in plan
                             if d.choice is not None and d.choice.kernel_module == kmod}):
            warn_reference(kernel, device, why, served)
    _say_when_nothing_changed(model, plan, excluded, session)
    return model


def _say_when_nothing_changed(model: nn.Module, plan: list[tuple[_Decision, list[Any]]], excluded: int,
                              session: Session) -> None:
    """Warn when no forward of the model was replaced, with why (unless that was asked)."""
    what = type(model).__name__
    if not plan:
        warn_user(
            f"kernelize: no layer of `{what}` is marked for a kernel"
            + (f" (the kernel_condition of {excluded} marked ones excluded them)" if excluded else "")
            + ", so nothing was replaced. Mark layer classes with use_kernel_forward_from_hub; "
            "for a transformers model, call kernel_plugins.integrations.transformers.enable() "
            "before importing or building it."
        )
        return
    if session.disabled or any(d.forward is not None for d, _ in plan):
        return
    reasons: dict[str, tuple[str, ...]] = {}
    for d, _ in plan:
        if d.choice is not None:
            reasons.setdefault(d.choice.layer_name, d.choice.skipped)
    listed = "\n".join(f"`{n}`:\n" + "\n".join(r) for n, r in reasons.items())
    warn_user(
        f"kernelize: none of the {sum(len(m) for _, m in plan)} marked layers of `{what}` got a kernel on "
        f"{describe_device(session.device)} in mode {describe_mode(session.mode)}, so nothing was replaced; "
        f"they keep their original forward:\n{listed}"
    )


def _marked_modules(model: nn.Module) -> tuple[list[tuple[str, list[Any]]], int]:
    """The marked modules of ``model`` and the marked functions its modules hold
    (``_kernel_funcs``), each once, as (layer name, instances) per class in the order met,
    skipping (and counting) instances their ``kernel_condition`` refuses. Marks and conditions
    are read once per class."""
    marks: dict[type, tuple[str | None, Any, list[Any]]] = {}
    seen: set[int] = set()
    excluded = 0
    for module in _modules(model):
        for candidate in (*kernel_funcs(module), module):
            if (mark := marks.get(cls := type(candidate))) is None:
                mark = marks[cls] = (marked_name(cls), getattr(cls, "kernel_condition", None), [])
            if mark[0] is None or id(candidate) in seen:
                continue
            seen.add(id(candidate))
            if mark[1] is not None and not mark[1](candidate):
                log.info("kernelize: `%s` keeps its forward: its kernel_condition refused it",
                         type(candidate).__name__)
                excluded += 1
            else:
                mark[2].append(candidate)
    return [(name, found) for name, _, found in marks.values() if found and name], excluded


def _modules(model: nn.Module) -> list[Any]:
    """``list(model.modules())``: the same modules in the same order (each once), without a
    generator per module when no class in the tree overrides ``named_modules``."""
    import torch.nn as nn

    base = nn.Module.named_modules
    out = []
    seen: set[int] = set()
    stack = [model]
    while stack:
        module = stack.pop()
        if id(module) in seen:
            continue
        if type(module).named_modules is not base:
            return list(model.modules())
        seen.add(id(module))
        out.append(module)
        children = module._modules
        if children:
            stack.extend([c for c in reversed(children.values()) if c is not None])
    return out


def _model_device(model: nn.Module) -> Any:
    """The device of the model's first parameter (else buffer); None when it has neither,
    which means the preferred device of the machine."""
    for tensor in itertools.chain(model.parameters(), model.buffers()):
        return tensor.device
    return None
