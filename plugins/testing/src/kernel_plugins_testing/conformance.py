"""A reusable conformance suite for backend plugins, run without their hardware.

Two pytest base classes hold the tests every backend plugin should pass; a plugin's
test module subclasses them, fills in what its vendor reports, and pytest collects
the inherited tests once per plugin:

* :class:`EmulatedBackendConformance` checks what a scenario script recorded on the
  plugin's EMULATED device (see :mod:`kernel_plugins_testing.plugin_checks`):
  detection marked emulated, a model's forward equal to the CPU's, loading the arch
  (or noarch) variant, the "no compatible variant" reasons, the reference fallback,
  kernelize, synchronize and the ``list-backends`` row. The facts it expects are a
  :class:`Expected`.
* :class:`PluginConformance` checks the plugin's hooks with its vendor stand-ins put
  in place by ``monkeypatch`` (no PrivateUse1 device): absent and empty stacks,
  another backend owning PrivateUse1, the ``emulate_device`` hook, the backend spec,
  ``explain_variant`` and that importing the plugin does not import torch. What it
  needs is a :class:`PluginFacts`.

Example (``tests/test_mlu_emulated.py`` of a plugin)::

    from pathlib import Path
    from kernel_plugins_testing.conformance import EmulatedBackendConformance, Expected

    class TestMluEmulated(EmulatedBackendConformance):
        scenario = Path(__file__).with_name("mlu_scenario.py")
        expected = Expected(
            backend="mlu", runtime_version="3.13.5", capability=(5, 0),
            no_variant_reason="CNToolkit 3.12 does not match the system's CNToolkit 3.13",
        )

        def test_vendor_facts(self) -> None:      # vendor-specific tests sit alongside
            assert self.recorded("vendor")["cluster_count"] == 12

The backend plugins of this repository declare their facts as data instead:
:func:`declared_suites` reads a plugin's ``conformance.toml`` and returns both base
classes filled in, plus data-driven tests (detection for given stand-in facts, variant
names, refusal reasons, resolution, what the emulated stack shows), so that each
plugin's tests are parameters of this suite rather than copies of it.

A test the plugin cannot pass by design is switched off through its fact (e.g.
``Expected(cli=False)``) and then skipped with the reason. A backend for a device type
PyTorch itself knows (``hpu``, ``xla``, ``mtia``...) cannot be emulated: its emulated tests,
and the hook tests about PrivateUse1 and ``emulate_device``, are skipped saying so. Importing this module
imports neither torch nor pytest; the tests do.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from kernel_plugins.errors import KernelPluginsError

if TYPE_CHECKING:
    from ._declared import Suites

from ._plugin_conformance import (
    PluginConformance,
    PluginFacts,
    plugin_manager,
    process_manager,
)

__all__ = [
    "ConformanceError",
    "declared_suites",
    "EmulatedBackendConformance",
    "Expected",
    "PluginConformance",
    "PluginFacts",
    "plugin_manager",
    "process_manager",
    "recorded",
    "run_scenario",
]

#: What :func:`run_scenario` looks for in the scenario's output.
RESULT_PREFIX = "RESULT:"


class ConformanceError(KernelPluginsError):
    """A conformance suite is set up wrongly, or its scenario script did not report."""


@dataclass(frozen=True, kw_only=True)
class Expected:
    """What a backend's emulated scenario must have recorded.

    Attributes:
        backend: the backend name, e.g. ``"mlu"``.
        no_variant_reason: a fragment of the reason a repository without a matching
            variant gives for the refused one, e.g. ``"CANN 8.2 does not match the
            system's CANN 8.3"``.
        device_type: the torch device type (default: ``backend``).
        count: the number of emulated devices the scenario asked for.
        runtime_version: ``DeviceInfo.runtime_version`` of the emulated device.
        capability: ``DeviceInfo.capability`` (None: the vendor reports none).
        device_name: ``DeviceInfo.name`` (None: not checked).
        distribution: the plugin's distribution (default ``kernel-plugins-<backend>``).
        arch_variants: True when the backend loads arch variants (the scenario ran
            :func:`~kernel_plugins_testing.plugin_checks.check_variant_selection`, so
            ``load_arch`` and ``kernelize`` use the recorded ``arch_variant``); False
            when it loads noarch variants only (they use ``torch-<device_type>``).
        noarch_key: the result key of the load that must fall to a noarch variant.
        noarch_variant: the variant that load picks (default ``torch-<device_type>``).
        cli: True when the scenario ran ``check_cli`` (False skips the CLI test).
        cli_variants: the CLI row's exact variant list (None: only checks it lists
            ``torch-<device_type>`` and, with arch variants, the arch variant).
    """

    backend: str
    no_variant_reason: str
    device_type: str | None = None
    count: int = 2
    runtime_version: str | None = None
    capability: tuple[int, int] | None = None
    device_name: str | None = None
    distribution: str | None = None
    arch_variants: bool = True
    noarch_key: str = "load_noarch"
    noarch_variant: str | None = None
    cli: bool = True
    cli_variants: tuple[str, ...] | None = None

    @property
    def dtype(self) -> str:
        """The torch device type."""
        return self.device_type or self.backend

    @property
    def noarch(self) -> str:
        """``torch-<device_type>``, the backend's noarch variant."""
        return f"torch-{self.dtype}"


def recorded(results: dict[str, Any], key: str) -> Any:
    """The value a scenario recorded under ``key``; fails the test on an error record.

    :raises AssertionError: ``key`` is missing, or its check raised (the record is
        ``{"error", "message"}``); the message names the key and the error.
    """
    if key not in results:
        raise AssertionError(f"the scenario recorded no {key!r}; it has {sorted(results)}")
    value = results[key]
    if isinstance(value, dict) and set(value) == {"error", "message"}:
        raise AssertionError(f"the scenario's {key!r} check raised {value['error']}: "
                             f"{value['message']}")
    return value


def run_scenario(
    script: str | Path | None = None,
    *,
    timeout: float = 180,
    env: dict[str, str] | None = None,
    declared: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Run a scenario in a fresh interpreter (forked from one that imported torch:
    :func:`~kernel_plugins_testing.run_forked`) and return what it recorded.

    The scenario is a script run as ``__main__``, or the ``[emulated]`` table of a
    plugin's ``conformance.toml`` (``declared``, run by :func:`._declared.main`). It runs
    with ``TORCH_DEVICE_BACKEND_AUTOLOAD=0`` (plus ``env``) and must print a
    ``RESULT:<json>`` line, as :meth:`~kernel_plugins_testing.plugin_checks.Recorder.emit`
    does; the last one wins.

    :raises ConformanceError: the scenario exited non-zero or printed no result line
        (the message has its exit status, stdout and stderr).
    """
    from . import run_forked

    if declared is not None:
        label = f"declared scenario of {declared.get('backend')!r}"
        code = ("import json; from kernel_plugins_testing._declared import main; "
                f"main(json.loads({json.dumps(dict(declared))!r}))")
    else:
        path = Path(str(script)).resolve()
        label = f"scenario {path}"
        code = f"import runpy; runpy.run_path({str(path)!r}, run_name='__main__')"
    child_env = {"TORCH_DEVICE_BACKEND_AUTOLOAD": "0", **(env or {})}
    proc = run_forked(code, env=child_env, timeout=timeout)
    lines = [line for line in proc.stdout.splitlines() if line.startswith(RESULT_PREFIX)]
    if proc.returncode != 0 or not lines:
        raise ConformanceError(
            f"{label} failed (exit {proc.returncode}, {len(lines)} result line(s)); "
            f"it must exit 0 after Recorder.emit()\nstdout:\n{proc.stdout}\n"
            f"stderr:\n{proc.stderr}"
        )
    result: dict[str, Any] = json.loads(lines[-1][len(RESULT_PREFIX):])
    return result


#: Scenario path -> its results, or the error running it raised (one run per session).
_RUNS: dict[str, dict[str, Any] | ConformanceError] = {}


class EmulatedBackendConformance:
    """The standard tests of a backend on its emulated device (a pytest base class).

    Subclass it as ``Test<Something>`` and set :attr:`scenario` and :attr:`expected`.
    The scenario runs once, in a fresh interpreter, the first time a test asks for
    :meth:`results`; every test then checks one part of what it recorded. Add
    vendor-specific tests as methods, reading values with :meth:`recorded`.

    The scenario must record (see :mod:`kernel_plugins_testing.plugin_checks`):
    ``stand_ins`` and ``device``/``device_index`` (:func:`start_scenario`), ``model``,
    ``load_arch``, the noarch load under :attr:`Expected.noarch_key`, ``no_variant``,
    ``fallback``, ``kernelize``, ``synchronize`` and, unless ``Expected(cli=False)``,
    ``cli``. When it records a ``vendor`` dict with a ``version``, the device's
    ``extension_version`` must equal it.
    """

    #: The scenario script (run as ``__main__``).
    scenario: ClassVar[Path]
    #: What it must have recorded.
    expected: ClassVar[Expected]
    #: Or: the ``[emulated]`` table of a ``conformance.toml`` (see :func:`declared_suites`).
    declared: ClassVar[Mapping[str, Any] | None] = None
    #: Seconds the scenario may run.
    scenario_timeout: ClassVar[float] = 180

    # ----------------------------------------------------------------- helpers
    @classmethod
    def _facts(cls) -> Expected:
        expected = getattr(cls, "expected", None)
        if not isinstance(expected, Expected):
            raise ConformanceError(
                f"{cls.__name__} sets no `expected`: add `expected = Expected(backend=..., "
                "no_variant_reason=...)` to the class"
            )
        return expected

    def results(self) -> dict[str, Any]:
        """Everything the scenario recorded (it runs once per test session).

        :raises ConformanceError: the class sets no :attr:`expected` or :attr:`scenario`,
            or the scenario failed (see :func:`run_scenario`).
        """
        from kernel_plugins.emulation_registry import in_tree_reason

        if reason := in_tree_reason(self._facts().dtype):
            import pytest

            pytest.skip(f"not emulated: {reason}")
        script = getattr(type(self), "scenario", None)
        declared = getattr(type(self), "declared", None)
        if script is None and declared is None:
            raise ConformanceError(
                f"{type(self).__name__} sets no `scenario`: add `scenario = "
                "Path(__file__).with_name('<name>_scenario.py')` to the class"
            )
        key = str(Path(script).resolve()) if script is not None else f"declared:{declared}"
        if key not in _RUNS:
            try:
                _RUNS[key] = run_scenario(script, declared=declared, timeout=self.scenario_timeout)
            except ConformanceError as e:
                _RUNS[key] = e
        run = _RUNS[key]
        if isinstance(run, ConformanceError):
            raise run
        return run

    def recorded(self, key: str) -> Any:
        """The value recorded under ``key`` (see :func:`recorded`)."""
        return recorded(self.results(), key)

    def _variant(self) -> str:
        """The variant the full repository must load: arch, or ``torch-<device_type>``."""
        if self._facts().arch_variants:
            return str(self.recorded("arch_variant"))
        return self._facts().noarch

    # ------------------------------------------------------------------- tests
    def test_plugin_installs_vendor_stand_ins(self) -> None:
        """The plugin's ``emulate_device`` hook installed its vendor stand-ins."""
        assert self.recorded("stand_ins") is True
        if "vendor" in self.results():
            self.recorded("vendor")

    def test_emulated_device_is_detected_and_marked(self) -> None:
        """Detection finds the emulated devices, marked emulated, with the vendor facts."""
        exp = self._facts()
        device = self.recorded("device")
        got = (device["backend"], device["device_type"], device["count"])
        assert got == (exp.backend, exp.dtype, exp.count), device
        assert device["emulated"] is True, device
        assert device["runtime_version"] == exp.runtime_version, device
        capability = None if exp.capability is None else list(exp.capability)
        assert device["capability"] == capability, device
        if exp.device_name is not None:
            assert device["name"] == exp.device_name, device
        vendor = self.results().get("vendor")
        if isinstance(vendor, dict) and "version" in vendor:
            assert device["extension_version"] == vendor["version"], (
                f"extension_version {device['extension_version']!r} is not the vendor "
                f"package's version {vendor['version']!r}"
            )
        assert self.recorded("device_index") == 1

    def test_model_forward_equals_cpu(self) -> None:
        """A small model moved to the device computes what it computes on the CPU."""
        dev = f"{self._facts().dtype}:0"
        assert self.recorded("model") == {"out_device": dev, "param_device": dev, "equal": True}

    def test_load_picks_the_best_variant(self) -> None:
        """A repository with every kind of variant loads the backend's best one."""
        exp = self._facts()
        loaded = self.recorded("load_arch")
        variant = self._variant()
        assert loaded["variant"] == variant, loaded
        prov = loaded["provenance"]
        assert (prov["backend"], prov["device_type"], prov["emulated"]) == (
            exp.backend, exp.dtype, True,
        ), prov
        assert prov["variant"] == variant, prov
        assert loaded["out_device"] == f"{exp.dtype}:1", loaded
        assert loaded["out"] == [2.0, 2.0], loaded

    def test_load_falls_back_to_a_noarch_variant(self) -> None:
        """A repository without a matching arch variant loads the noarch one."""
        exp = self._facts()
        assert self.recorded(exp.noarch_key) == (exp.noarch_variant or exp.noarch)

    def test_no_variant_error_lists_the_reasons(self) -> None:
        """No variant for the device: the error says EMULATED and why each was refused."""
        message = self.recorded("no_variant")
        assert message != "loaded", "a repository without a variant for the device loaded"
        assert "EMULATED" in message, message
        assert self._facts().no_variant_reason in message, message
        assert "built for backend 'cuda'" in message, message

    def test_activation_falls_back_to_the_reference_kernel(self) -> None:
        """``activation`` without a variant for the device falls back, with a warning."""
        dtype = self._facts().dtype
        fb = self.recorded("fallback")
        assert fb["source"] == "reference", fb
        assert fb["emulated"] is True, fb
        assert any(f"no variant for {dtype}" in n for n in fb["notes"]), fb
        assert any("reference kernel" in w for w in fb["warnings"]), fb
        assert fb["out_device"] == f"{dtype}:0", fb
        assert fb["equal"] is True, fb

    def test_kernelize_swaps_in_the_kernel(self) -> None:
        """kernelize replaces a layer's forward with the repository's kernel on the device."""
        k = self.recorded("kernelize")
        assert k["uses_kernel"] is True, k
        assert k["variant"] == self._variant(), k
        assert k["emulated"] is True, k
        assert k["out_device"] == f"{self._facts().dtype}:0", k
        assert k["equal"] is True, k

    def test_synchronize_reaches_the_device_module(self) -> None:
        """The plugin's synchronize hook calls ``torch.<device_type>.synchronize`` once."""
        assert self.recorded("synchronize") == [True, 1]

    def test_cli_lists_the_emulated_device(self) -> None:
        """``list-backends --emulate <device> --json`` shows the backend, marked EMULATED."""
        exp = self._facts()
        if not exp.cli:
            import pytest

            pytest.skip(f"the {exp.backend} scenario records no CLI row (Expected(cli=False))")
        cli = self.recorded("cli")
        assert cli["code"] == 0, cli
        row = cli[exp.dtype]
        assert (row["status"], row["emulated"], row["count"]) == ("available", True, exp.count)
        assert row["distribution"] == (exp.distribution or f"kernel-plugins-{exp.backend}")
        assert exp.noarch in row["variants"], row
        if exp.arch_variants:
            assert self.recorded("arch_variant") in row["variants"], row
        if exp.cli_variants is not None:
            assert row["variants"] == list(exp.cli_variants), row
        assert "EMULATED" in cli["stderr"], cli


def declared_suites(plugin: Any, path: str | Path) -> Suites:
    """The conformance suites of ``plugin`` with the vendor facts of its ``conformance.toml``.

    See :func:`kernel_plugins_testing._declared.declared_suites`; subclass the returned
    classes as ``Test...`` to collect them (vendor-only tests sit alongside as methods).
    """
    from ._declared import declared_suites as build

    return build(plugin, path, EmulatedBackendConformance, Expected)

