"""Stand-ins for the Moore Threads MUSA stack, for tests on machines without a MUSA GPU.

Faithful to what ``torch_musa`` shows PyTorch (see the package README):

* ``torch_musa`` is the ``torch.musa`` module itself (the vendor sets ``torch.musa`` to
  its package), with ``__version__`` like ``"2.7.1+5ee0a64"``;
* ``torch.version.musa`` is the SDK version as ``"4030"`` (4.3.0);
* ``torch.musa.get_device_properties(i)`` has ``name``, ``major``, ``minor``,
  ``multi_processor_count``, ``total_memory``, ``is_multi_gpu_board``,
  ``is_integrated``; ``torch.musa.get_arch_list()`` names ``mp_<arch>`` and
  ``torch.musa.is_bf16_supported()`` is ``arch >= 22``.

:func:`build_stand_ins` makes them without installing anything (detection-level
simulation); the ``emulate_device`` hook calls :func:`install` after
:func:`kernel_plugins_testing.emulate` has set up the PrivateUse1 ``musa`` device.
Defaults are illustrative, not a product's data sheet.
"""

from __future__ import annotations

import importlib.machinery
import types
from collections.abc import Mapping
from typing import Any

from kernel_plugins_testing.stand_ins import (
    StandIns,
    install_stand_ins,
    merge_facts,
    vendor_device_module,
)

from .versions import musa_arch

__all__ = ["DEFAULT_FACTS", "StandIns", "build_stand_ins", "install"]

NAME = "musa"
VENDOR = "torch_musa"

#: Facts :func:`kernel_plugins_testing.emulate` accepts for ``musa``, with their defaults.
#: ``runtime`` is ``torch.version.musa`` (None: not set).
DEFAULT_FACTS: dict[str, Any] = {
    "device_name": "MTT S4000",
    "capability": (2, 2),
    "total_memory": 48 * 1024**3,
    "multi_processor_count": 128,
    "is_multi_gpu_board": False,
    "is_integrated": False,
    "runtime": "4030",
    "version": "2.7.1+5ee0a64",
}


def build_stand_ins(
    count: int,
    facts: Mapping[str, Any] | None = None,
    *,
    device_module: types.ModuleType | None = None,
) -> StandIns:
    """Build the MUSA stand-ins for ``count`` devices without installing them.

    :param count: number of devices (0: the stack is present without devices).
    :param facts: overrides of :data:`DEFAULT_FACTS` (unknown names raise
        :class:`~kernel_plugins_testing.EmulationError`).
    :param device_module: an emulated ``torch.musa`` to configure; None builds a new one
        with :func:`kernel_plugins_testing.make_device_module`.
    """
    merged = merge_facts(
        NAME, facts or {}, DEFAULT_FACTS, string_facts=("runtime", "version"), string_example="4030"
    )
    major, minor = (int(x) for x in merged["capability"])
    arch = musa_arch((major, minor))
    props = {
        "name": str(merged["device_name"]),
        "major": major,
        "minor": minor,
        "multi_processor_count": int(merged["multi_processor_count"]),
        "total_memory": int(merged["total_memory"]),
        "is_multi_gpu_board": bool(merged["is_multi_gpu_board"]),
        "is_integrated": bool(merged["is_integrated"]),
    }

    def is_bf16_supported(including_emulation: bool = True) -> bool:
        """BF16 needs MUSA architecture 22 (QY2) or newer."""
        return arch >= 22

    def get_arch_list() -> list[str]:
        """Architectures this torch_musa build targets."""
        return [f"mp_{arch}"]

    extra: dict[str, Any] = {
        "is_bf16_supported": is_bf16_supported,
        "get_arch_list": get_arch_list,
        "__version__": merged["version"],
    }
    device_module = vendor_device_module(
        NAME, count, props, extra=extra, device_module=device_module
    )
    # torch_musa and torch.musa are one module: importing torch_musa gives torch.musa.
    device_module.__spec__ = importlib.machinery.ModuleSpec(VENDOR, None)
    return StandIns(device_module, device_module, {"musa": merged["runtime"]})


def install(count: int, facts: Mapping[str, Any]) -> bool:
    """Install the stand-ins into this process, on the emulated ``torch.musa``.

    Called by the ``emulate_device`` hook; :func:`kernel_plugins_testing.emulate` must
    have created the PrivateUse1 ``musa`` device first.
    """
    return install_stand_ins(
        NAME, VENDOR, lambda module: build_stand_ins(count, facts, device_module=module)
    )
