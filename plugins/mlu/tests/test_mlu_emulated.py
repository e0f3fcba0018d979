"""The mlu backend on an EMULATED device (PrivateUse1 on the CPU, not real hardware).

One fresh interpreter runs ``mlu_scenario.py`` (the PrivateUse1 rename is once per
process); each test checks one part of what it recorded.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from kernel_plugins.testing import run_in_fresh_interpreter

SCENARIO = Path(__file__).resolve().parent / "mlu_scenario.py"


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


def test_plugin_installs_vendor_stand_ins(results: dict[str, Any]) -> None:
    assert results["stand_ins"] is True
    vendor = _ok(results["vendor"])
    assert vendor["version"].startswith("1.22.0+torch")
    assert vendor["version_mlu_is_none"] is True
    assert vendor["cluster_count"] == 12
    assert vendor["name"] == "MLU590-H8"
    assert vendor["bf16"] is True
    assert vendor["is_mlu"] is True


def test_emulated_device_is_detected_and_marked(results: dict[str, Any]) -> None:
    device = _ok(results["device"])
    assert (device["backend"], device["device_type"], device["count"]) == ("mlu", "mlu", 2)
    assert device["emulated"] is True
    assert device["runtime_version"] == "3.13.5"
    assert device["capability"] == [5, 0]
    assert _ok(results["device_index"]) == 1


def test_model_forward_on_emulated_mlu_equals_cpu(results: dict[str, Any]) -> None:
    model = _ok(results["model"])
    assert model == {"out_device": "mlu:0", "param_device": "mlu:0", "equal": True}


def test_load_picks_the_mlu_arch_variant(results: dict[str, Any]) -> None:
    loaded = _ok(results["load_arch"])
    assert loaded["variant"] == results["arch_variant"]
    prov = loaded["provenance"]
    assert (prov["backend"], prov["device_type"], prov["emulated"]) == ("mlu", "mlu", True)
    assert prov["variant"] == results["arch_variant"]
    assert loaded["out_device"] == "mlu:1"
    assert loaded["out"] == [2.0, 2.0]


def test_load_falls_to_torch_mlu_for_another_toolkit(results: dict[str, Any]) -> None:
    assert _ok(results["load_noarch"]) == "torch-mlu"


def test_no_variant_error_lists_the_reasons(results: dict[str, Any]) -> None:
    message = _ok(results["no_variant"])
    assert message != "loaded"
    assert "EMULATED" in message
    assert "CNToolkit 3.12 does not match the system's CNToolkit 3.13" in message
    assert "built for backend 'cuda'" in message


def test_activation_falls_back_to_the_reference_kernel(results: dict[str, Any]) -> None:
    fb = _ok(results["fallback"])
    assert fb["source"] == "reference"
    assert fb["emulated"] is True
    assert any("no variant for mlu" in n for n in fb["notes"])
    assert any("reference kernel" in w for w in fb["warnings"])
    assert fb["out_device"] == "mlu:0"
    assert fb["equal"] is True


def test_kernelize_on_emulated_mlu(results: dict[str, Any]) -> None:
    k = _ok(results["kernelize"])
    assert k["uses_kernel"] is True
    assert k["variant"] == results["arch_variant"]
    assert k["emulated"] is True
    assert k["out_device"] == "mlu:0"
    assert k["equal"] is True


def test_synchronize_reaches_torch_mlu(results: dict[str, Any]) -> None:
    assert _ok(results["synchronize"]) == [True, 1]


def test_cli_lists_the_emulated_mlu(results: dict[str, Any]) -> None:
    cli = _ok(results["cli"])
    assert cli["code"] == 0
    row = cli["mlu"]
    assert (row["status"], row["emulated"], row["count"]) == ("available", True, 2)
    assert row["distribution"] == "kernel-plugins-mlu"
    assert "torch-mlu" in row["variants"]
    assert "EMULATED" in cli["stderr"]


def test_capability_range_picks_the_mlu5_kernel(results: dict[str, Any]) -> None:
    """The emulated MLU590 has capability 5.0: the 5.x mapping entry wins over 3.x."""
    path = _ok(results["capability_range"])["path"]
    assert path is not None and "/mlu5x/" in path
