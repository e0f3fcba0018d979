"""Stand-ins for the Huawei Ascend stack, for tests on machines without an NPU.

Faithful to what ``torch_npu`` shows PyTorch (see the package README):

* a ``torch_npu`` package in ``sys.modules`` with ``__version__``;
* ``torch.version.cann`` such as ``"8.3.RC1"``;
* ``torch.npu.get_device_properties(i)`` with ``name``, ``total_memory``,
  ``cube_core_num``, ``vector_core_num``, ``L2_cache_size`` (plus the generic fields
  every emulated device has);
* ``torch.npu.get_soc_version()`` returning an integer (222: the 910B family).

:func:`build_stand_ins` makes them without installing anything (detection-level
simulation); the ``emulate_device`` hook calls :func:`install` after
:func:`kernel_plugins_testing.emulate` has set up the PrivateUse1 ``npu`` device.
Defaults are illustrative, not a product's data sheet. Ascend devices report no
compute capability, so ``capability`` is not an accepted fact.
"""

from __future__ import annotations

import types
from collections.abc import Mapping
from typing import Any

from kernel_plugins_testing.stand_ins import (
    StandIns,
    install_stand_ins,
    merge_facts,
    stand_in_package,
    torch_release,
    vendor_device_module,
)

__all__ = ["DEFAULT_FACTS", "StandIns", "build_stand_ins", "install"]

NAME = "npu"
VENDOR = "torch_npu"

#: Facts :func:`kernel_plugins_testing.emulate` accepts for ``npu``, with their defaults.
#: ``cann`` is ``torch.version.cann``; ``version`` None means the installed torch's version.
DEFAULT_FACTS: dict[str, Any] = {
    "device_name": "Ascend910B2",
    "total_memory": 64 * 1024**3,
    "multi_processor_count": 24,
    "cube_core_num": 24,
    "vector_core_num": 48,
    "L2_cache_size": 192 * 1024**2,
    "soc_version": 222,
    "cann": "8.3.RC1",
    "version": None,
}


#: torch_npu operators other libraries import at import time (transformers imports
#: ``npu_fusion_attention``); the stand-ins raise EmulationError when called.
VENDOR_OPS = ("npu_fusion_attention", "npu_rms_norm", "npu_rotary_mul", "npu_swiglu")


def build_stand_ins(
    count: int,
    facts: Mapping[str, Any] | None = None,
    *,
    device_module: types.ModuleType | None = None,
) -> StandIns:
    """Build the Ascend stand-ins for ``count`` devices without installing them.

    :param count: number of devices (0: the stack is present without devices).
    :param facts: overrides of :data:`DEFAULT_FACTS` (unknown names raise
        :class:`~kernel_plugins_testing.EmulationError`).
    :param device_module: an emulated ``torch.npu`` to configure; None builds a new one
        with :func:`kernel_plugins_testing.make_device_module`.
    """
    merged = merge_facts(
        NAME,
        facts or {},
        DEFAULT_FACTS,
        string_facts=("cann", "version"),
        string_example="8.3.RC1",
        unknown_hints={"capability": "Ascend devices report no compute capability"},
    )
    props = {
        "name": str(merged["device_name"]),
        "total_memory": int(merged["total_memory"]),
        "multi_processor_count": int(merged["multi_processor_count"]),
        "cube_core_num": int(merged["cube_core_num"]),
        "vector_core_num": int(merged["vector_core_num"]),
        "L2_cache_size": int(merged["L2_cache_size"]),
    }
    soc = merged["soc_version"]

    def get_soc_version() -> Any:
        """The SoC version number of the devices (e.g. 222)."""
        return soc

    extra = {"get_soc_version": get_soc_version}
    device_module = vendor_device_module(
        NAME, count, props, extra=extra, device_module=device_module
    )
    package = stand_in_package(
        VENDOR, merged["version"] or torch_release(), vendor_ops=VENDOR_OPS
    )
    return StandIns(package, device_module, {"cann": merged["cann"]})


def install(count: int, facts: Mapping[str, Any]) -> bool:
    """Install the stand-ins into this process, next to the emulated ``torch.npu``.

    Called by the ``emulate_device`` hook; :func:`kernel_plugins_testing.emulate` must
    have created the PrivateUse1 ``npu`` device first.
    """
    return install_stand_ins(
        NAME, VENDOR, lambda module: build_stand_ins(count, facts, device_module=module)
    )
