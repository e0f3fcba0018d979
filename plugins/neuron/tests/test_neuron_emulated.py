"""The neuron backend on an EMULATED device (PrivateUse1 on the CPU, not real hardware).

One fresh interpreter runs ``neuron_scenario.py`` (the PrivateUse1 rename is once per
process); each test checks one part of what it recorded. The emulation matches the
native TorchNeuron backend only, never the older XLA stack.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from kernel_plugins.testing import run_in_fresh_interpreter

SCENARIO = Path(__file__).resolve().parent / "neuron_scenario.py"


@pytest.fixture(scope="module")
def results() -> dict[str, Any]:
    """Run the scenario once for this module and return what it recorded."""
    code = f"import runpy; runpy.run_path({str(SCENARIO)!r}, run_name='__main__')"
    proc = run_in_fresh_interpreter(code, env={"TORCH_DEVICE_BACKEND_AUTOLOAD": "0"}, timeout=180)
    lines = [line for line in proc.stdout.splitlines() if line.startswith("RESULT:")]
    assert proc.returncode == 0 and lines, (
        f"scenario failed (exit {proc.returncode})\nstdout:\n{proc.stdout}\nstderr:\n{proc.stderr}"
    )
    return json.loads(lines[-1][len("RESULT:"):])


def _ok(value: Any) -> Any:
    assert not (isinstance(value, dict) and set(value) == {"error", "message"}), value
    return value


def test_native_backend_stand_ins(results: dict[str, Any]) -> None:
    assert results["stand_ins"] is True
    vendor = _ok(results["vendor"])
    assert vendor["privateuse1"] == "neuron"
    assert vendor["accelerator"] == "neuron"
    assert vendor["accelerator_count"] == 2
    assert vendor["name"] == "Trainium2"
    assert vendor["is_neuron"] is True


def test_emulated_device_is_detected_and_marked(results: dict[str, Any]) -> None:
    device = _ok(results["device"])
    assert (device["backend"], device["device_type"], device["count"]) == ("neuron", "neuron", 2)
    assert device["emulated"] is True
    assert device["extension_version"] == _ok(results["vendor"])["version"]
    assert _ok(results["device_index"]) == 1


def test_neuron_is_the_preferred_device(results: dict[str, Any]) -> None:
    assert _ok(results["default_device"]) == "neuron"


def test_model_forward_on_emulated_neuron_equals_cpu(results: dict[str, Any]) -> None:
    model = _ok(results["model"])
    assert model == {"out_device": "neuron:0", "param_device": "neuron:0", "equal": True}


def test_load_picks_torch_neuron(results: dict[str, Any]) -> None:
    loaded = _ok(results["load_arch"])
    assert loaded["variant"] == "torch-neuron"
    prov = loaded["provenance"]
    assert (prov["backend"], prov["device_type"], prov["emulated"]) == ("neuron", "neuron", True)
    assert loaded["out_device"] == "neuron:1"
    assert loaded["out"] == [2.0, 2.0]


def test_universal_still_loads(results: dict[str, Any]) -> None:
    assert _ok(results["load_universal"]) == "torch-universal"


def test_missing_nki_says_how_to_install_it(results: dict[str, Any]) -> None:
    missing = _ok(results["missing_nki"])
    assert missing.get("error") == "MissingDependencyError"
    assert "pip install nki" in missing["text"]


def test_no_variant_error_lists_the_reasons(results: dict[str, Any]) -> None:
    message = _ok(results["no_variant"])
    assert message != "loaded"
    assert "EMULATED" in message
    assert "loads no arch variants" in message
    assert "built for backend 'cuda'" in message


def test_activation_falls_back_to_the_reference_kernel(results: dict[str, Any]) -> None:
    fb = _ok(results["fallback"])
    assert fb["source"] == "reference"
    assert fb["emulated"] is True
    assert any("no variant for neuron" in n for n in fb["notes"])
    assert any("reference kernel" in w for w in fb["warnings"])
    assert fb["out_device"] == "neuron:0"
    assert fb["equal"] is True


def test_kernelize_on_emulated_neuron(results: dict[str, Any]) -> None:
    k = _ok(results["kernelize"])
    assert k["uses_kernel"] is True
    assert k["variant"] == "torch-neuron"
    assert k["emulated"] is True
    assert k["out_device"] == "neuron:0"
    assert k["equal"] is True


def test_synchronize_reaches_torch_neuron(results: dict[str, Any]) -> None:
    assert _ok(results["synchronize"]) == [True, 1]


def test_cli_lists_the_emulated_neuron(results: dict[str, Any]) -> None:
    cli = _ok(results["cli"])
    assert cli["code"] == 0
    row = cli["neuron"]
    assert (row["status"], row["emulated"], row["count"]) == ("available", True, 2)
    assert row["distribution"] == "kernel-plugins-neuron"
    assert row["variants"] == ["torch-neuron", "torch-universal"]
    assert "EMULATED" in cli["stderr"]
