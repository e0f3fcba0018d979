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
:func:`kernel_plugins.testing.emulate` has set up the PrivateUse1 ``npu`` device.
Defaults are illustrative, not a product's data sheet. Ascend devices report no
compute capability, so ``capability`` is not an accepted fact.
"""

from __future__ import annotations

import importlib.machinery
import re
import sys
import types
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["DEFAULT_FACTS", "StandIns", "build_stand_ins", "install"]

NAME = "npu"
VENDOR = "torch_npu"

#: Facts :func:`kernel_plugins.testing.emulate` accepts for ``npu``, with their defaults.
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


@dataclass
class StandIns:
    """What :func:`install` puts in place.

    Attributes:
        package: the stand-in ``torch_npu`` module.
        device_module: the ``torch.npu`` module (configured with the vendor properties).
        version_attrs: attributes for ``torch.version`` (``{"cann": "8.3.RC1"}``).
    """

    package: types.ModuleType
    device_module: types.ModuleType
    version_attrs: dict[str, Any] = field(default_factory=dict)


def _error(message: str) -> Exception:
    from kernel_plugins.testing import EmulationError

    return EmulationError(message)


def _merge_facts(facts: Mapping[str, Any]) -> dict[str, Any]:
    unknown = sorted(set(facts) - set(DEFAULT_FACTS))
    if unknown:
        hint = " (Ascend devices report no compute capability)" if "capability" in unknown else ""
        raise _error(
            f"unknown npu emulation fact(s) {', '.join(unknown)}{hint}; known facts: "
            f"{', '.join(sorted(DEFAULT_FACTS))}"
        )
    merged = {**DEFAULT_FACTS, **facts}
    for key in ("cann", "version"):
        if merged[key] is not None and not isinstance(merged[key], str):
            raise _error(f"fact {key}={merged[key]!r} must be a string (e.g. '8.3.RC1') or None")
    return merged


def _torch_version() -> str:
    import torch

    m = re.match(r"^\d+\.\d+\.\d+", str(torch.__version__))
    return m.group(0) if m else str(torch.__version__)


def build_stand_ins(
    count: int,
    facts: Mapping[str, Any] | None = None,
    *,
    device_module: types.ModuleType | None = None,
) -> StandIns:
    """Build the Ascend stand-ins for ``count`` devices without installing them.

    :param count: number of devices (0: the stack is present without devices).
    :param facts: overrides of :data:`DEFAULT_FACTS` (unknown names raise
        :class:`~kernel_plugins.testing.EmulationError`).
    :param device_module: an emulated ``torch.npu`` to configure; None builds a new one
        with :func:`kernel_plugins.testing.make_device_module`.
    """
    from kernel_plugins.testing import configure_device_module, make_device_module

    merged = _merge_facts(facts or {})
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
    properties = [props] if count > 0 else []
    if device_module is None:
        device_module = make_device_module(NAME, count, properties=properties, extra=extra)
    else:
        configure_device_module(device_module, properties=properties, extra=extra)
    package = types.ModuleType(VENDOR, "Stand-in for torch_npu (EMULATED on CPU, not hardware).")
    package.__spec__ = importlib.machinery.ModuleSpec(VENDOR, None)
    package.__version__ = merged["version"] or _torch_version()  # type: ignore[attr-defined]
    package.__kernel_plugins_emulated__ = True  # type: ignore[attr-defined]
    return StandIns(package, device_module, {"cann": merged["cann"]})


def install(count: int, facts: Mapping[str, Any]) -> bool:
    """Install the stand-ins into this process, next to the emulated ``torch.npu``.

    Called by the ``emulate_device`` hook; :func:`kernel_plugins.testing.emulate` must
    have created the PrivateUse1 ``npu`` device first.
    """
    import torch

    module = getattr(torch, NAME, None)
    if module is None or not getattr(module, "__kernel_plugins_emulated__", False):
        raise _error(
            "torch.npu is missing or is not an emulated module: emulate the device with "
            "kernel_plugins.testing.emulate('npu'), which calls this hook"
        )
    stand = build_stand_ins(count, facts, device_module=module)
    sys.modules[VENDOR] = stand.package
    for key, value in stand.version_attrs.items():
        setattr(torch.version, key, value)
    return True
