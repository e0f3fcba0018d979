"""``python -B -c CODE ARG...`` for code that imports torch (or a library that does) first
thing: forked from a process that has imported torch (``kernel_plugins_testing.run_forked``)
when the interpreter is this one, which saves 4 to 5 s of CPU per run; spawned otherwise."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from kernel_plugins_testing import run_forked


def python_c(code: str, *args: object, env: dict[str, str], cwd: str | os.PathLike[str] | None = None,
             timeout: float = 300, python: str | os.PathLike[str] | None = None) -> subprocess.CompletedProcess[str]:
    """What ``python -B -c code *args`` prints and exits with, run in ``cwd`` with exactly
    ``env`` as its environment (nothing else of this process's)."""
    argv = [str(a) for a in args]
    if python is not None and Path(python) != Path(sys.executable):
        return subprocess.run([str(python), "-B", "-c", code, *argv], capture_output=True, text=True,
                              timeout=timeout, cwd=cwd, env=env, check=False)
    head = f"import sys; sys.argv[1:] = {argv!r}; sys.dont_write_bytecode = True\n"
    return run_forked(head + code, env, timeout, cwd=cwd, drop=tuple(k for k in os.environ if k not in env))
