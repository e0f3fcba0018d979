"""Stand-ins for the Cambricon stack, for tests on machines without an MLU.

Faithful to what ``torch_mlu`` shows PyTorch (see the package README):

* a ``torch_mlu`` package in ``sys.modules`` with ``__version__`` like
  ``"1.22.0+torch2.13.0"``;
* ``torch.version.mlu = None`` (the real extension sets it to None explicitly);
* ``torch.mlu.get_device_properties(i)`` with ``name``, ``major``, ``minor``,
  ``multi_processor_count``, ``total_memory``, ``cluster_count``,
  ``core_num_per_cluster``, ``frequency``, ``dram_bandwidth``,
  ``supports_linear_memory``; ``torch.mlu.is_bf16_supported()`` is ``major >= 5``;
* a Neuware folder whose ``version.txt`` says ``Neuware Version <toolkit>``, named by
  ``NEUWARE_HOME``.

:func:`build_stand_ins` makes them without installing anything (detection-level
simulation: tests put them in place with ``monkeypatch``). The ``emulate_device`` hook
calls :func:`install` after :func:`kernel_plugins_testing.emulate` has set up the
PrivateUse1 ``mlu`` device. Every default is illustrative, not a product's data
sheet; nothing here says anything about real hardware.
"""

from __future__ import annotations

import atexit
import shutil
import tempfile
import types
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from kernel_plugins_testing.stand_ins import (
    StandIns,
    install_stand_ins,
    merge_facts,
    stand_in_package,
    torch_release,
    vendor_device_module,
)

from .versions import NEUWARE_ENV, VERSION_FILE

__all__ = ["DEFAULT_FACTS", "StandIns", "build_stand_ins", "install"]

NAME = "mlu"
VENDOR = "torch_mlu"

#: Facts :func:`kernel_plugins_testing.emulate` accepts for ``mlu``, with their defaults.
#: ``version`` None means ``1.22.0+torch<installed torch>``; ``toolkit`` None means no
#: readable CNToolkit version.
DEFAULT_FACTS: dict[str, Any] = {
    "device_name": "MLU590-H8",
    "capability": (5, 0),
    "total_memory": 64 * 1024**3,
    "multi_processor_count": None,  # None: cluster_count * core_num_per_cluster
    "cluster_count": 12,
    "core_num_per_cluster": 4,
    "frequency": 1300,
    "dram_bandwidth": 1228,
    "supports_linear_memory": True,
    "version": None,
    "toolkit": "3.13.5",
}


def _properties(merged: Mapping[str, Any]) -> dict[str, Any]:
    mpc = merged["multi_processor_count"]
    if mpc is None:
        mpc = int(merged["cluster_count"]) * int(merged["core_num_per_cluster"])
    return {
        "name": str(merged["device_name"]),
        "major": int(merged["capability"][0]),
        "minor": int(merged["capability"][1]),
        "multi_processor_count": int(mpc),
        "total_memory": int(merged["total_memory"]),
        "cluster_count": int(merged["cluster_count"]),
        "core_num_per_cluster": int(merged["core_num_per_cluster"]),
        "frequency": int(merged["frequency"]),
        "dram_bandwidth": int(merged["dram_bandwidth"]),
        "supports_linear_memory": bool(merged["supports_linear_memory"]),
    }


def _neuware_home(toolkit: str | None, workdir: Path | None) -> Path:
    if workdir is None:
        home = Path(tempfile.mkdtemp(prefix="kp-emulated-neuware-"))
        atexit.register(shutil.rmtree, home, True)
    else:
        home = workdir / "neuware"
        home.mkdir(parents=True, exist_ok=True)
    version_file = home / VERSION_FILE
    if toolkit is None:
        version_file.unlink(missing_ok=True)
    else:
        version_file.write_text(f"Neuware Version {toolkit}\n", encoding="utf-8")
    return home


def build_stand_ins(
    count: int,
    facts: Mapping[str, Any] | None = None,
    *,
    device_module: types.ModuleType | None = None,
    workdir: Path | None = None,
) -> StandIns:
    """Build the Cambricon stand-ins for ``count`` devices without installing them.

    :param count: number of devices (0: the stack is present without devices).
    :param facts: overrides of :data:`DEFAULT_FACTS` (unknown names raise
        :class:`~kernel_plugins_testing.EmulationError`).
    :param device_module: an emulated ``torch.mlu`` to configure; None builds a new one
        with :func:`kernel_plugins_testing.make_device_module`.
    :param workdir: where to write the stand-in Neuware folder (default: a temporary
        folder removed at exit).
    """
    merged = merge_facts(NAME, facts or {}, DEFAULT_FACTS, string_facts=("version", "toolkit"))
    major = int(merged["capability"][0])

    def is_bf16_supported(including_emulation: bool = True) -> bool:
        """BF16 needs an MLU of capability 5.x or newer (MLU590)."""
        return major >= 5

    device_module = vendor_device_module(
        NAME,
        count,
        _properties(merged) if count > 0 else {},
        extra={"is_bf16_supported": is_bf16_supported},
        device_module=device_module,
    )
    package = stand_in_package(VENDOR, merged["version"] or f"1.22.0+torch{torch_release()}")
    home = _neuware_home(merged["toolkit"], workdir)
    return StandIns(package, device_module, {"mlu": None}, {NEUWARE_ENV: str(home)})


def install(count: int, facts: Mapping[str, Any]) -> bool:
    """Install the stand-ins into this process, next to the emulated ``torch.mlu``.

    Called by the ``emulate_device`` hook; :func:`kernel_plugins_testing.emulate` must
    have created the PrivateUse1 ``mlu`` device first.
    """
    return install_stand_ins(
        NAME, VENDOR, lambda module: build_stand_ins(count, facts, device_module=module)
    )
