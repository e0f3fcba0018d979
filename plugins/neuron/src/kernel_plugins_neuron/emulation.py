"""Stand-ins for the AWS Neuron stack (native TorchNeuron backend), for tests without Trainium.

What is emulated, faithful to the native backend (see the package README): a
PrivateUse1 device named ``neuron`` (set up by :func:`kernel_plugins.testing.emulate`),
which ``torch.accelerator`` reports, plus a ``torch_neuronx`` package in ``sys.modules``
with ``__version__``. The exact ``torch.neuron.*`` names are unverified, so nothing
vendor-specific is added to ``torch.neuron`` beyond the generic device module. ``nki``
is NOT emulated: a kernel declaring ``python-depends = ["nki"]`` fails to load with
the "pip install nki" error, as on a machine without it. Emulating the PrivateUse1
``neuron`` device matches only the native backend, never the older XLA stack.
"""

from __future__ import annotations

import importlib.machinery
import re
import sys
import types
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["DEFAULT_FACTS", "StandIns", "build_stand_ins", "install"]

NAME = "neuron"
VENDOR = "torch_neuronx"

#: Facts :func:`kernel_plugins.testing.emulate` accepts for ``neuron``, with their defaults.
#: ``version`` None means ``<installed torch major.minor>.0``.
DEFAULT_FACTS: dict[str, Any] = {
    "device_name": "Trainium2",
    "total_memory": 96 * 1024**3,
    "multi_processor_count": 8,
    "version": None,
}


@dataclass
class StandIns:
    """What :func:`install` puts in place.

    Attributes:
        package: the stand-in ``torch_neuronx`` module.
        device_module: the ``torch.neuron`` module.
    """

    package: types.ModuleType
    device_module: types.ModuleType


def _error(message: str) -> Exception:
    from kernel_plugins.testing import EmulationError

    return EmulationError(message)


def _merge_facts(facts: Mapping[str, Any]) -> dict[str, Any]:
    unknown = sorted(set(facts) - set(DEFAULT_FACTS))
    if unknown:
        hint = " (Neuron devices report no compute capability)" if "capability" in unknown else ""
        raise _error(
            f"unknown neuron emulation fact(s) {', '.join(unknown)}{hint}; known facts: "
            f"{', '.join(sorted(DEFAULT_FACTS))}"
        )
    merged = {**DEFAULT_FACTS, **facts}
    if merged["version"] is not None and not isinstance(merged["version"], str):
        raise _error(f"fact version={merged['version']!r} must be a string or None")
    return merged


def _default_version() -> str:
    import torch

    m = re.match(r"^(\d+)\.(\d+)", str(torch.__version__))
    return f"{m.group(1)}.{m.group(2)}.0" if m else "0.0.0"


def build_stand_ins(
    count: int,
    facts: Mapping[str, Any] | None = None,
    *,
    device_module: types.ModuleType | None = None,
) -> StandIns:
    """Build the Neuron stand-ins for ``count`` devices without installing them.

    :param count: number of devices (0: the stack is present without devices).
    :param facts: overrides of :data:`DEFAULT_FACTS` (unknown names raise
        :class:`~kernel_plugins.testing.EmulationError`).
    :param device_module: an emulated ``torch.neuron`` to configure; None builds a new one
        with :func:`kernel_plugins.testing.make_device_module`.
    """
    from kernel_plugins.testing import configure_device_module, make_device_module

    merged = _merge_facts(facts or {})
    props = {
        "name": str(merged["device_name"]),
        "total_memory": int(merged["total_memory"]),
        "multi_processor_count": int(merged["multi_processor_count"]),
    }
    properties = [props] if count > 0 else []
    if device_module is None:
        device_module = make_device_module(NAME, count, properties=properties)
    else:
        configure_device_module(device_module, properties=properties)
    package = types.ModuleType(
        VENDOR, "Stand-in for torch_neuronx (EMULATED on CPU, not hardware)."
    )
    package.__spec__ = importlib.machinery.ModuleSpec(VENDOR, None)
    package.__version__ = merged["version"] or _default_version()  # type: ignore[attr-defined]
    package.__kernel_plugins_emulated__ = True  # type: ignore[attr-defined]
    return StandIns(package, device_module)


def install(count: int, facts: Mapping[str, Any]) -> bool:
    """Install the stand-in into this process, next to the emulated ``torch.neuron``.

    Called by the ``emulate_device`` hook; :func:`kernel_plugins.testing.emulate` must
    have created the PrivateUse1 ``neuron`` device first.
    """
    import torch

    module = getattr(torch, NAME, None)
    if module is None or not getattr(module, "__kernel_plugins_emulated__", False):
        raise _error(
            "torch.neuron is missing or is not an emulated module: emulate the device with "
            "kernel_plugins.testing.emulate('neuron'), which calls this hook"
        )
    stand = build_stand_ins(count, facts, device_module=module)
    sys.modules[VENDOR] = stand.package
    return True
