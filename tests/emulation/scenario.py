"""Run an emulation scenario in a fresh interpreter and read the JSON it prints."""

from __future__ import annotations

import json
import textwrap

from kernel_plugins_testing import run_forked

#: Built-in backends only (no installed vendor plugin joins in), no vendor autoload.
ISOLATED_ENV = {"KERNEL_PLUGINS_LOAD": "", "TORCH_DEVICE_BACKEND_AUTOLOAD": "0"}

#: Prelude of every scenario: ``check(key, fn)`` stores fn()'s value, or the error it raised.
PRELUDE = """
import json, warnings
warnings.filterwarnings("ignore")
RESULTS = {}

def check(key, fn):
    try:
        RESULTS[key] = fn()
    except Exception as e:  # recorded so one failure does not hide the others
        RESULTS[key] = {"error": type(e).__name__, "message": str(e)}
"""

EPILOGUE = """
print("RESULT:" + json.dumps(RESULTS, default=str))
"""


def run_scenario(body: str, *, timeout: float = 120) -> dict:
    """Run ``body`` (after :data:`PRELUDE`) in a new interpreter; return ``RESULTS``."""
    code = PRELUDE + textwrap.dedent(body) + EPILOGUE
    proc = run_forked(code, env=ISOLATED_ENV, timeout=timeout)
    lines = [line for line in proc.stdout.splitlines() if line.startswith("RESULT:")]
    assert proc.returncode == 0 and lines, (
        f"scenario failed (exit {proc.returncode})\nstdout:\n{proc.stdout}\nstderr:\n{proc.stderr}"
    )
    return json.loads(lines[-1][len("RESULT:") :])


def error_of(value: object) -> tuple[str, str] | None:
    """``(type name, message)`` when a check recorded an error, else None."""
    if isinstance(value, dict) and set(value) == {"error", "message"}:
        return value["error"], value["message"]
    return None
