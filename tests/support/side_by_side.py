"""Run one fresh interpreter per emulated backend side by side, and read their results."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

Run = Callable[[str], "subprocess.CompletedProcess[str]"]


def run_side_by_side(run: Run, names: Iterable[str]) -> dict[str, subprocess.CompletedProcess[str]]:
    """``run(name)`` for every name whose plugin is installed ("cpu" always), in threads."""
    wanted = [
        n for n in names if n == "cpu" or importlib.util.find_spec(f"kernel_plugins_{n}")
    ]
    with ThreadPoolExecutor(max_workers=max(1, len(wanted))) as pool:
        return dict(zip(wanted, pool.map(run, wanted), strict=True))


def result_for(results: dict[str, subprocess.CompletedProcess[str]], name: str) -> Any:
    """The ``RESULT<json>`` line of ``name``'s run; skips (fails in CI) when its plugin is
    not installed and fails with the child's stderr when it failed."""
    if name not in results:
        if os.environ.get("CI"):
            pytest.fail(f"kernel-plugins-{name} must be installed in CI")
        pytest.skip(f"kernel-plugins-{name} is not installed (pip install ./plugins/{name})")
    proc = results[name]
    assert proc.returncode == 0, proc.stderr[-3000:]
    line = next(li for li in proc.stdout.splitlines() if li.startswith("RESULT"))
    return json.loads(line[len("RESULT") :])
