"""The musa backend on an EMULATED device (PrivateUse1 on the CPU, not real hardware).

One fresh interpreter runs ``musa_scenario.py`` (the PrivateUse1 rename is once per
process); each test checks one part of what it recorded.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from kernel_plugins.testing import run_in_fresh_interpreter

SCENARIO = Path(__file__).resolve().parent / "musa_scenario.py"


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
    assert vendor["is_torch_musa"] is True
    assert vendor["version"] == "2.7.1+5ee0a64"
    assert vendor["version_musa"] == "4030"
    assert vendor["arch_list"] == ["mp_21"]
    assert vendor["name"] == "MTT S80"
    assert vendor["bf16"] is False  # QY1 (arch 21) has no BF16
    assert vendor["is_musa"] is True


def test_emulated_device_is_detected_and_marked(results: dict[str, Any]) -> None:
    device = _ok(results["device"])
    assert (device["backend"], device["device_type"], device["count"]) == ("musa", "musa", 2)
    assert device["emulated"] is True
    assert device["runtime_version"] == "4030"
    assert device["capability"] == [2, 1]
    assert device["name"] == "MTT S80"
    assert _ok(results["device_index"]) == 1


def test_model_forward_on_emulated_musa_equals_cpu(results: dict[str, Any]) -> None:
    model = _ok(results["model"])
    assert model == {"out_device": "musa:0", "param_device": "musa:0", "equal": True}


def test_load_picks_the_musa_arch_variant(results: dict[str, Any]) -> None:
    loaded = _ok(results["load_arch"])
    assert loaded["variant"] == results["arch_variant"]
    prov = loaded["provenance"]
    assert (prov["backend"], prov["device_type"], prov["emulated"]) == ("musa", "musa", True)
    assert prov["variant"] == results["arch_variant"]
    assert loaded["out_device"] == "musa:1"
    assert loaded["out"] == [2.0, 2.0]


def test_load_falls_to_torch_musa_for_another_sdk(results: dict[str, Any]) -> None:
    assert _ok(results["load_noarch"]) == "torch-musa"


def test_no_variant_error_lists_the_reasons(results: dict[str, Any]) -> None:
    message = _ok(results["no_variant"])
    assert message != "loaded"
    assert "EMULATED" in message
    assert "MUSA 4.2 does not match the system's MUSA 4.3" in message
    assert "built for backend 'cuda'" in message


def test_activation_falls_back_to_the_reference_kernel(results: dict[str, Any]) -> None:
    fb = _ok(results["fallback"])
    assert fb["source"] == "reference"
    assert fb["emulated"] is True
    assert any("no variant for musa" in n for n in fb["notes"])
    assert any("reference kernel" in w for w in fb["warnings"])
    assert fb["out_device"] == "musa:0"
    assert fb["equal"] is True


def test_kernelize_on_emulated_musa(results: dict[str, Any]) -> None:
    k = _ok(results["kernelize"])
    assert k["uses_kernel"] is True
    assert k["variant"] == results["arch_variant"]
    assert k["emulated"] is True
    assert k["out_device"] == "musa:0"
    assert k["equal"] is True


def test_synchronize_reaches_torch_musa(results: dict[str, Any]) -> None:
    assert _ok(results["synchronize"]) == [True, 1]


def test_capability_range_picks_the_qy1_kernel(results: dict[str, Any]) -> None:
    """The emulated MTT S80 is arch 21 (QY1): the range up to 2.1 wins over 2.2+."""
    path = _ok(results["capability_range"])["path"]
    assert path is not None and "/qy1/" in path
