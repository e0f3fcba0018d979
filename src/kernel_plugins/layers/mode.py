"""The :class:`Mode` flag: what a model is kernelized for, and what a mapping entry serves.

Rules (the same as the Hub ``kernels`` package):

* ``INFERENCE`` and ``TRAINING`` are mutually exclusive; either may be combined with
  ``TORCH_COMPILE``.
* ``FALLBACK`` is used only as a key in mappings (an entry used when no entry for a more
  specific mode exists) and cannot be combined with anything.
* :func:`~kernel_plugins.layers.kernelize` needs ``INFERENCE`` or ``TRAINING``, optionally
  ``| TORCH_COMPILE``.

When kernelizing for a mode, mapping entries are tried in this order (first listed first):

=============================  ==============================================================
kernelize mode                 mapping entries tried
=============================  ==============================================================
``INFERENCE``                  INFERENCE, INFERENCE|TORCH_COMPILE, TRAINING,
                               TRAINING|TORCH_COMPILE, FALLBACK
``TRAINING``                   TRAINING, TRAINING|TORCH_COMPILE, FALLBACK
``INFERENCE|TORCH_COMPILE``    INFERENCE|TORCH_COMPILE, TRAINING|TORCH_COMPILE, FALLBACK
``TRAINING|TORCH_COMPILE``     TRAINING|TORCH_COMPILE, FALLBACK
=============================  ==============================================================

A kernel that supports more (backward, compilation) also serves a mode that needs less.
"""

from __future__ import annotations

from enum import Flag, auto

from ._errors import ModeError

__all__ = ["Mode", "MAPPING_MODES", "KERNELIZE_MODES", "candidate_modes", "check_kernelize_mode",
           "check_mapping_mode", "describe_mode"]


class Mode(Flag):
    """What a kernel is used for.

    Attributes:
        INFERENCE: the model runs forward only.
        TRAINING: the model is trained; a kernel must support backward (``has_backward``).
        TORCH_COMPILE: the model runs under ``torch.compile``; a kernel must declare
            ``can_torch_compile = True``. Combine with ``INFERENCE`` or ``TRAINING``.
        FALLBACK: mapping key only: the entry used when no entry for a more specific mode
            exists. A repository given without a mode dict is registered under ``FALLBACK``.

    Example::

        kernelize(model, mode=Mode.TRAINING | Mode.TORCH_COMPILE)
        {"SiluAndMul": {"cuda": {Mode.INFERENCE: repo_a, Mode.FALLBACK: repo_b}}}
    """

    FALLBACK = auto()
    TRAINING = auto()
    INFERENCE = auto()
    TORCH_COMPILE = auto()

    def __or__(self, other: object) -> Mode:
        union = super().__or__(other)  # type: ignore[operator]
        if union is NotImplemented:
            return union  # type: ignore[no-any-return]
        _check_combination(union)
        return union

    __ror__ = __or__


def _check_combination(mode: Mode) -> None:
    if Mode.INFERENCE in mode and Mode.TRAINING in mode:
        raise ModeError("Mode.INFERENCE and Mode.TRAINING are mutually exclusive: kernelize for one of them "
                        "(optionally | Mode.TORCH_COMPILE)")
    if Mode.FALLBACK in mode and mode != Mode.FALLBACK:
        raise ModeError("Mode.FALLBACK cannot be combined with other modes; it marks the mapping entry used "
                        "when no entry for a more specific mode exists")


_I, _T, _C, _F = Mode.INFERENCE, Mode.TRAINING, Mode.TORCH_COMPILE, Mode.FALLBACK

_PRIORITY: dict[Mode, tuple[Mode, ...]] = {
    _I: (_I, _I | _C, _T, _T | _C, _F),
    _T: (_T, _T | _C, _F),
    _I | _C: (_I | _C, _T | _C, _F),
    _T | _C: (_T | _C, _F),
}

#: Modes :func:`~kernel_plugins.layers.kernelize` accepts.
KERNELIZE_MODES: tuple[Mode, ...] = tuple(_PRIORITY)
#: Modes usable as keys of a device's mode dict in a mapping.
MAPPING_MODES: tuple[Mode, ...] = (*KERNELIZE_MODES, _F)


def describe_mode(mode: Mode) -> str:
    """``"TRAINING | TORCH_COMPILE"``: the member names joined, for messages."""
    names = [m.name for m in (_F, _I, _T, _C) if m in mode and m.name]
    return " | ".join(names) if names else "no mode"


def check_kernelize_mode(mode: object) -> Mode:
    """Validate a mode given to ``kernelize``; returns it.

    Raises :class:`~kernel_plugins.layers.ModeError` for ``FALLBACK``, for a mode without
    ``INFERENCE`` or ``TRAINING``, and for anything that is not a :class:`Mode`.
    """
    if not isinstance(mode, Mode):
        raise ModeError(f"mode must be a kernel_plugins.layers.Mode such as Mode.INFERENCE, "
                        f"got {mode!r} ({type(mode).__name__})")
    _check_combination(mode)
    # computed before the FALLBACK test: mypy narrows ``mode`` there to Literal members,
    # and the Python 3.10 stubs then reject ``member in mode``
    has_task = Mode.INFERENCE in mode or Mode.TRAINING in mode
    if mode == Mode.FALLBACK:
        raise ModeError("Mode.FALLBACK can only be used to register kernel mappings")
    if not has_task:
        raise ModeError(f"kernelize mode must contain Mode.INFERENCE or Mode.TRAINING, got "
                        f"{describe_mode(mode)}; e.g. mode=Mode.INFERENCE | Mode.TORCH_COMPILE")
    return mode


def check_mapping_mode(mode: object) -> Mode:
    """Validate a mode used as a key in a mapping; returns it.

    Allowed: the four kernelize modes and ``FALLBACK``. ``TORCH_COMPILE`` alone is refused.
    """
    if not isinstance(mode, Mode):
        raise ModeError(f"keys of a device's mode dict must be Mode values, got {mode!r} ({type(mode).__name__})")
    _check_combination(mode)
    if mode not in MAPPING_MODES:
        allowed = ", ".join(describe_mode(m) for m in MAPPING_MODES)
        raise ModeError(f"mode {describe_mode(mode)} cannot key a mapping entry; use one of: {allowed}")
    return mode


def candidate_modes(mode: Mode) -> tuple[Mode, ...]:
    """Mapping modes tried, best first, when kernelizing for ``mode`` (see the module doc)."""
    return _PRIORITY[check_kernelize_mode(mode)]
