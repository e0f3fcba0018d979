"""The conformance suite itself: its helpers, its set-up errors and what its tests catch.

The suite's tests run here against hand-written scenario results (no emulated device),
so each can be shown to pass on conforming results and to fail on a broken one.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
from kernel_plugins_testing import run_in_fresh_interpreter
from kernel_plugins_testing.conformance import (
    ConformanceError,
    EmulatedBackendConformance,
    Expected,
    PluginConformance,
    recorded,
    run_scenario,
)

from kernel_plugins.errors import KernelPluginsError

ARCH = "torch213-cxx11-acme21-x86_64-linux"


def _good_results() -> dict[str, Any]:
    """What a conforming ``acme`` scenario (two devices, arch variants) records."""
    load_prov = {"backend": "acme", "device_type": "acme", "emulated": True, "variant": ARCH}
    return {
        "stand_ins": True,
        "vendor": {"version": "1.0"},
        "device": {
            "backend": "acme", "device_type": "acme", "count": 2, "emulated": True,
            "runtime_version": "2.1", "capability": [1, 0], "name": "Acme 1",
            "extension_version": "1.0",
        },
        "device_index": 1,
        "model": {"out_device": "acme:0", "param_device": "acme:0", "equal": True},
        "arch_variant": ARCH,
        "load_arch": {
            "variant": ARCH, "provenance": load_prov, "out_device": "acme:1", "out": [2.0, 2.0],
        },
        "load_noarch": "torch-acme",
        "no_variant": "EMULATED acme: Acme 2.0 does not match; built for backend 'cuda'",
        "fallback": {
            "source": "reference", "emulated": True, "notes": ["no variant for acme"],
            "warnings": ["using the reference kernel"], "out_device": "acme:0", "equal": True,
        },
        "kernelize": {
            "uses_kernel": True, "variant": ARCH, "emulated": True, "out_device": "acme:0",
            "equal": True,
        },
        "synchronize": [True, 1],
        "cli": {
            "code": 0,
            "acme": {
                "status": "available", "emulated": True, "count": 2,
                "distribution": "kernel-plugins-acme",
                "variants": [ARCH, "torch-acme", "torch-universal"],
            },
            "stderr": "acme x2: EMULATED on CPU",
        },
    }


class _Canned(EmulatedBackendConformance):
    """The suite over canned results instead of a scenario run."""

    expected = Expected(
        backend="acme", runtime_version="2.1", capability=(1, 0), device_name="Acme 1",
        no_variant_reason="Acme 2.0 does not match",
    )
    canned: dict[str, Any] = {}

    def results(self) -> dict[str, Any]:
        return self.canned


SUITE_TESTS = sorted(n for n in dir(EmulatedBackendConformance) if n.startswith("test_"))

#: A test of the suite -> a change to the good results that it must catch.
BREAKS: dict[str, tuple[str, ...]] = {
    "test_plugin_installs_vendor_stand_ins": ("stand_ins",),
    "test_emulated_device_is_detected_and_marked": ("device", "runtime_version"),
    "test_model_forward_equals_cpu": ("model", "equal"),
    "test_load_picks_the_best_variant": ("load_arch", "variant"),
    "test_load_falls_back_to_a_noarch_variant": ("load_noarch",),
    "test_no_variant_error_lists_the_reasons": ("no_variant",),
    "test_activation_falls_back_to_the_reference_kernel": ("fallback", "source"),
    "test_kernelize_swaps_in_the_kernel": ("kernelize", "uses_kernel"),
    "test_synchronize_reaches_the_device_module": ("synchronize",),
    "test_cli_lists_the_emulated_device": ("cli", "code"),
}


def _run(name: str, results: dict[str, Any], expected: Expected | None = None) -> None:
    cls = type("Case", (_Canned,), {"canned": results})
    if expected is not None:
        cls.expected = expected
    getattr(cls(), name)()


def test_every_suite_test_has_a_break() -> None:
    assert sorted(BREAKS) == SUITE_TESTS


@pytest.mark.parametrize("name", SUITE_TESTS)
def test_suite_passes_conforming_results(name: str) -> None:
    _run(name, _good_results())


@pytest.mark.parametrize("name", SUITE_TESTS)
def test_suite_catches_a_broken_result(name: str) -> None:
    results = _good_results()
    *path, last = BREAKS[name]
    target = results
    for key in path:
        target = target[key]
    target[last] = "broken"
    with pytest.raises(AssertionError):
        _run(name, results)


def test_noarch_only_backend_expects_its_noarch_variant() -> None:
    results = _good_results()
    for key in ("load_arch", "kernelize"):
        results[key]["variant"] = "torch-acme"
    results["load_arch"]["provenance"]["variant"] = "torch-acme"
    results["cli"]["acme"]["variants"] = ["torch-acme", "torch-universal"]
    noarch = Expected(
        backend="acme", runtime_version="2.1", capability=(1, 0), no_variant_reason="Acme",
        arch_variants=False, cli_variants=("torch-acme", "torch-universal"),
    )
    for name in SUITE_TESTS:
        _run(name, copy.deepcopy(results), noarch)
    with pytest.raises(AssertionError):
        _run("test_load_picks_the_best_variant", _good_results(), noarch)


def test_extension_version_must_be_the_vendor_version() -> None:
    results = _good_results()
    results["vendor"]["version"] = "9.9"
    with pytest.raises(AssertionError, match="extension_version"):
        _run("test_emulated_device_is_detected_and_marked", results)


def test_cli_false_skips_the_cli_test() -> None:
    no_cli = Expected(backend="acme", no_variant_reason="x", cli=False)
    with pytest.raises(pytest.skip.Exception, match=r"cli=False"):
        _run("test_cli_lists_the_emulated_device", {}, no_cli)


def test_recorded_names_a_missing_key_and_a_failed_check() -> None:
    with pytest.raises(AssertionError, match="recorded no 'model'"):
        recorded({"device": {}}, "model")
    failed = {"model": {"error": "RuntimeError", "message": "boom"}}
    with pytest.raises(AssertionError, match="'model' check raised RuntimeError: boom"):
        recorded(failed, "model")
    assert recorded({"model": {"equal": True}}, "model") == {"equal": True}


def test_run_scenario_returns_the_last_result_line(tmp_path: Path) -> None:
    script = tmp_path / "scenario.py"
    script.write_text(
        "import os\nprint('RESULT:{\"a\": 1}')\n"
        "print('RESULT:' + '{\"autoload\": \"' + os.environ['TORCH_DEVICE_BACKEND_AUTOLOAD']"
        " + '\"}')\n",
        encoding="utf-8",
    )
    assert run_scenario(script) == {"autoload": "0"}


@pytest.mark.parametrize(
    ("body", "said"),
    [("import sys; sys.exit('it broke')", "exit 1"), ("print('no result')", "0 result line")],
)
def test_run_scenario_failure_says_why(tmp_path: Path, body: str, said: str) -> None:
    script = tmp_path / "scenario.py"
    script.write_text(body + "\n", encoding="utf-8")
    with pytest.raises(ConformanceError, match=said) as info:
        run_scenario(script)
    assert str(script) in str(info.value)


def test_scenario_runs_once_per_session(tmp_path: Path) -> None:
    counter = tmp_path / "runs"
    script = tmp_path / "scenario.py"
    script.write_text(
        f"from pathlib import Path\np = Path({str(counter)!r})\n"
        "p.write_text(p.read_text() + 'x' if p.exists() else 'x')\nprint('RESULT:{\"n\": 1}')\n",
        encoding="utf-8",
    )

    class Once(EmulatedBackendConformance):
        scenario = script
        expected = Expected(backend="acme", no_variant_reason="x")

    assert Once().results() == {"n": 1}
    assert Once().recorded("n") == 1
    assert counter.read_text() == "x"


def test_missing_settings_are_named() -> None:
    class NoExpected(EmulatedBackendConformance):
        scenario = Path("nowhere.py")

    class NoScenario(EmulatedBackendConformance):
        expected = Expected(backend="acme", no_variant_reason="x")

    class NoPlugin(PluginConformance):
        pass

    with pytest.raises(ConformanceError, match="sets no `expected`"):
        NoExpected().test_synchronize_reaches_the_device_module()
    with pytest.raises(ConformanceError, match="sets no `scenario`"):
        NoScenario().test_synchronize_reaches_the_device_module()
    with pytest.raises(KernelPluginsError, match="sets no `plugin`"):
        NoPlugin().test_backend_spec_names_the_backend()


def test_importing_the_suite_imports_neither_torch_nor_pytest() -> None:
    code = (
        "import sys, kernel_plugins_testing.conformance; "
        "print('torch' in sys.modules, 'pytest' in sys.modules)"
    )
    proc = run_in_fresh_interpreter(code, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["False", "False"]

