"""Stand-ins for the AWS Neuron stack (native TorchNeuron backend), for tests without Trainium.

What is emulated, faithful to the native backend (see the package README): a
PrivateUse1 device named ``neuron`` (set up by :func:`kernel_plugins_testing.emulate`),
which ``torch.accelerator`` reports, plus a ``torch_neuronx`` package in ``sys.modules``
with ``__version__``. The exact ``torch.neuron.*`` names are unverified, so nothing
vendor-specific is added to ``torch.neuron`` beyond the generic device module. ``nki``
is NOT emulated: a kernel declaring ``python-depends = ["nki"]`` fails to load with
the "pip install nki" error, as on a machine without it. Emulating the PrivateUse1
``neuron`` device matches only the native backend, never the older XLA stack.
"""

from __future__ import annotations

import types
from collections.abc import Mapping
from typing import Any

from kernel_plugins.vendor import torch_major_minor
from kernel_plugins_testing.stand_ins import (
    StandIns,
    install_stand_ins,
    merge_facts,
    stand_in_package,
    vendor_device_module,
)

__all__ = ["DEFAULT_FACTS", "StandIns", "build_stand_ins", "install"]

NAME = "neuron"
VENDOR = "torch_neuronx"

#: Facts :func:`kernel_plugins_testing.emulate` accepts for ``neuron``, with their defaults.
#: ``version`` None means ``<installed torch major.minor>.0``.
DEFAULT_FACTS: dict[str, Any] = {
    "device_name": "Trainium2",
    "total_memory": 96 * 1024**3,
    "multi_processor_count": 8,
    "version": None,
}


def _default_version() -> str:
    """``<installed torch major.minor>.0`` (``"0.0.0"`` when unparsable)."""
    version = torch_major_minor()
    return f"{version[0]}.{version[1]}.0" if version else "0.0.0"


def build_stand_ins(
    count: int,
    facts: Mapping[str, Any] | None = None,
    *,
    device_module: types.ModuleType | None = None,
) -> StandIns:
    """Build the Neuron stand-ins for ``count`` devices without installing them.

    :param count: number of devices (0: the stack is present without devices).
    :param facts: overrides of :data:`DEFAULT_FACTS` (unknown names raise
        :class:`~kernel_plugins_testing.EmulationError`).
    :param device_module: an emulated ``torch.neuron`` to configure; None builds a new one
        with :func:`kernel_plugins_testing.make_device_module`.
    """
    merged = merge_facts(
        NAME,
        facts or {},
        DEFAULT_FACTS,
        string_facts=("version",),
        unknown_hints={"capability": "Neuron devices report no compute capability"},
    )
    props = {
        "name": str(merged["device_name"]),
        "total_memory": int(merged["total_memory"]),
        "multi_processor_count": int(merged["multi_processor_count"]),
    }
    device_module = vendor_device_module(NAME, count, props, device_module=device_module)
    package = stand_in_package(VENDOR, merged["version"] or _default_version())
    return StandIns(package, device_module)


def install(count: int, facts: Mapping[str, Any]) -> bool:
    """Install the stand-in into this process, next to the emulated ``torch.neuron``.

    Called by the ``emulate_device`` hook; :func:`kernel_plugins_testing.emulate` must
    have created the PrivateUse1 ``neuron`` device first.
    """
    return install_stand_ins(
        NAME, VENDOR, lambda module: build_stand_ins(count, facts, device_module=module)
    )
