"""A plugin's conformance suites built from its ``conformance.toml``.

:func:`declared_suites` reads the file and gives back two pytest base classes with the
plugin's facts filled in: the hook-level suite (:class:`PluginConformance` plus the
data-driven :class:`~._plugin_cases.PluginCases`) and, when the file has an
``[emulated]`` table, the end-to-end suite (:class:`EmulatedBackendConformance`) whose
scenario is :func:`main`, run from the same table. Importing this module imports neither
torch nor pytest.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from ._plugin_cases import PluginCases, fill
from ._plugin_conformance import PluginConformance, PluginFacts

__all__ = ["Suites", "declared_suites", "main"]

#: ``conformance.toml`` keys that are :class:`PluginFacts` fields (tuples in Python).
_FACT_FIELDS = {f.name for f in fields(PluginFacts)} - {"hooks", "cases", "build_stand_ins"}


@dataclass(frozen=True)
class Suites:
    """The base classes :func:`declared_suites` built; subclass them as ``Test...``."""

    plugin: type
    emulated: type | None


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        import tomli as tomllib
    return tomllib.loads(path.read_text(encoding="utf-8"))


def declared_suites(plugin: Any, path: str | Path, end_to_end: type, expected: type) -> Suites:
    """The conformance suites of ``plugin`` (its backend object) with the facts in ``path``;
    ``end_to_end`` and ``expected`` are :class:`~.conformance.EmulatedBackendConformance`
    and :class:`~.conformance.Expected` (passed in: this module is below that one).

    :raises KeyError: a required fact (``backend``, ``display_name``, ``vendor_module``)
        is missing from the file.
    """
    data = _read_toml(Path(path))
    emulated = data.pop("emulated", None)
    known: dict[str, Any] = {k: tuple(v) if isinstance(v, list) else v
                             for k, v in data.items() if k in _FACT_FIELDS}
    facts = PluginFacts(hooks=plugin, cases={k: v for k, v in data.items()
                                             if k not in _FACT_FIELDS}, **known)
    suite = type("DeclaredPluginConformance", (PluginConformance, PluginCases), {"plugin": facts})
    if emulated is None:
        return Suites(suite, None)
    spec = {"backend": facts.backend, "vendor_module": facts.vendor_module, **emulated}
    facts_expected = expected(
        backend=facts.backend,
        device_type=facts.device_type,
        no_variant_reason=emulated["no_variant_reason"],
        runtime_version=emulated.get("runtime_version"),
        capability=tuple(emulated["capability"]) if "capability" in emulated else None,
        device_name=emulated.get("device_name"),
        count=emulated.get("count", 2),
    )
    tests: dict[str, Any] = {"test_vendor_facts_are_what_the_stack_shows": _test_vendor_facts}
    if "capability_range" in emulated:
        tests["test_capability_decides_the_kernel"] = _test_capability_range
    if "arch" in emulated:
        tests["test_the_architecture_step_refuses_and_chooses"] = _test_arch_step
    declared = type("DeclaredEmulatedConformance", (end_to_end,),
                    {"expected": facts_expected, "declared": spec, **tests})
    return Suites(suite, declared)


def _test_vendor_facts(self: Any) -> None:
    """What the emulated vendor stack shows PyTorch, read in the scenario."""
    vendor = self.recorded("vendor")
    for expression, want in fill(dict(self.declared.get("vendor", {}))).items():
        assert vendor[expression] == want, (expression, vendor[expression])


def _test_capability_range(self: Any) -> None:
    """A capability-ranged kernel mapping picks by the emulated device's capability."""
    case = self.declared["capability_range"]
    path = self.recorded("capability_range")["path"]
    assert path is not None and f"/{case['expect']}/" in path, path


def _test_arch_step(self: Any) -> None:
    """The emulated device's architecture refuses an arch variant built for another one
    (the noarch variant loads, the trace names both architectures) and takes one built
    for its own."""
    got, spec = self.recorded("arch_step"), self.declared
    noarch = f"torch-{spec['backend']}"
    assert got["device_arch"] == spec["arch"], got
    assert got["refused"][0] == noarch, got
    assert f"built for architectures {spec['other_arch']};" in got["refused"][1], got
    assert f"architecture is {spec['arch']}" in got["refused"][1], got
    assert got["chosen"] != noarch and spec["arch_token"] in got["chosen"], got


def _raised(fn: Any) -> str:
    """``"<ErrorType>: <message>"`` of what ``fn()`` raised, or ``"nothing"``."""
    try:
        fn()
    except Exception as e:  # noqa: BLE001 - recorded for the test
        return f"{type(e).__name__}: {e}"
    return "nothing"


def main(spec: Mapping[str, Any]) -> None:
    """The scenario of an ``[emulated]`` table, run in a fresh interpreter.

    Emulates the device with the table's ``facts``, records ``vendor`` (each expression
    of ``vendor`` evaluated with ``torch``, the vendor package and ``raised``), then the
    standard checks of :mod:`~kernel_plugins_testing.plugin_checks`.
    """
    import importlib
    import tempfile

    from . import plugin_checks as pc
    from .kernel_repos import make_repo

    backend = spec["backend"]
    rec = pc.start_scenario(backend, devices=spec.get("count", 2), **spec.get("facts", {}))

    import torch

    def vendor() -> dict[str, Any]:
        module = importlib.import_module(spec["vendor_module"])
        names = {"torch": torch, spec["vendor_module"]: module, "raised": _raised}
        out = {"version": getattr(module, "__version__", None)}
        out.update({e: eval(e, names) for e in spec.get("vendor", {})})  # noqa: S307
        return out

    rec.check("vendor", vendor)
    pc.check_model_forward(rec, backend)
    tmp = Path(tempfile.mkdtemp(prefix=f"kp-{backend}-scenario-"))
    pc.check_variant_selection(
        rec, backend, arch_token=spec["arch_token"], other_token=spec["other_token"], workdir=tmp
    )
    if "arch" in spec:
        pc.check_arch_step(rec, backend, arch_token=spec["arch_token"], arch=spec["arch"],
                           other=spec["other_arch"], workdir=tmp)
    case = spec.get("capability_range")
    if case is not None:
        low = make_repo(tmp / "low", [f"torch-{backend}"], name="low")
        high = make_repo(tmp / "high", [f"torch-{backend}"], name="high")
        pc.check_capability_range(
            rec, backend, (low, tuple(case["low"])), (high, tuple(case["high"]))
        )
    pc.check_synchronize(rec, backend)
    pc.check_cli(rec, backend)
    rec.emit()


if __name__ == "__main__":
    main(json.loads(sys.argv[1]))
