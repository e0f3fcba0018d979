"""Fresh interpreters that skip ``import torch``: each is forked from a zygote, a process of
this interpreter that has imported torch and nothing of kernel-plugins, and then runs its code as
``python -c`` would (its own ``__main__``, environment, working directory, PYTHONPATH, exit
status, output). Importing torch costs about 3 s of CPU here; a forked child pays nothing for it.

Only for code that imports torch first thing anyway (emulation, kernelize): a test of what a
process does *before* torch is imported (the ``import kernel_plugins`` cost, the no-torch
paths, torch's backend autoload) spawns with ``kernel_plugins_testing.run_in_fresh_interpreter``.
The zygote itself is started by ``run_in_fresh_interpreter`` on first use, one per pytest worker.
"""

from __future__ import annotations

import atexit
import json
import os
import subprocess
import sys
import tempfile
import threading
from concurrent.futures import Future
from pathlib import Path

from kernel_plugins_testing import run_in_fresh_interpreter

# The zygote: imports torch, then for each request line forks a child that runs the request
# at the top level of this program, so that its exit is an ordinary interpreter exit (atexit
# handlers, flushed streams, a traceback and status 1 for an uncaught exception).
_ZYGOTE = r"""
import json, os, selectors, sys
import torch  # noqa: F401  the import every child skips
sel = selectors.DefaultSelector()
sel.register(0, selectors.EVENT_READ, None)
buf, req = b"", None
while req is None:
    for key, _ in sel.select():
        if key.data is not None:  # a child ended
            rid, pid, fd = key.data
            sel.unregister(fd)
            os.close(fd)
            _, status = os.waitpid(pid, 0)
            print(json.dumps({"id": rid, "rc": os.waitstatus_to_exitcode(status)}), flush=True)
            continue
        data = os.read(0, 1 << 20)
        if not data:
            raise SystemExit(0)
        *lines, buf = (buf + data).split(b"\n")
        for line in lines:
            r = json.loads(line)
            pid = os.fork()
            if pid == 0:
                req = r
                break
            fd = os.pidfd_open(pid)
            sel.register(fd, selectors.EVENT_READ, (r["id"], pid, fd))
            print(json.dumps({"id": r["id"], "pid": pid}), flush=True)
        if req is not None:
            break
sel.close()
import types
os.environ.clear()
os.environ.update(req["env"])
os.chdir(req["cwd"])
for fd, path, mode in ((0, os.devnull, os.O_RDONLY), (1, req["out"], os.O_WRONLY), (2, req["err"], os.O_WRONLY)):
    new = os.open(path, mode)
    os.dup2(new, fd)
    os.close(new)
sys.stdin = open(0, closefd=False)
sys.stdout = open(1, "w", closefd=False)
sys.stderr = open(2, "w", closefd=False)
sys.argv = ["-c"]
extra = [p for p in req["env"].get("PYTHONPATH", "").split(os.pathsep) if p]
sys.path[1:1] = [p for p in extra if p not in sys.path]
sys.path_importer_cache.clear()  # '' now means another folder
main = types.ModuleType("__main__")
sys.modules["__main__"] = main
code, _g = req["code"], main.__dict__
exec(compile(code, "<string>", "exec"), _g)
"""


class _Zygote:
    """One zygote process and the callers waiting for their children."""

    def __init__(self) -> None:
        env = {**os.environ, "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", "1")}
        self.proc = subprocess.Popen(  # noqa: S603 - this interpreter
            [sys.executable, "-c", _ZYGOTE], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            text=True, env=env,
        )
        self.lock = threading.Lock()
        self.started: dict[int, Future[int]] = {}
        self.ended: dict[int, Future[int]] = {}
        self.next_id = 0
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            msg = json.loads(line)
            with self.lock:
                if "pid" in msg:
                    self.started.pop(msg["id"]).set_result(msg["pid"])
                else:
                    self.ended.pop(msg["id"]).set_result(msg["rc"])
        with self.lock:  # the zygote is gone: nobody waits forever
            for f in (*self.started.values(), *self.ended.values()):
                f.set_exception(RuntimeError("the zygote process ended"))

    def run(self, code: str, env: dict[str, str], cwd: str, timeout: float) -> subprocess.CompletedProcess[str]:
        with tempfile.TemporaryDirectory(prefix="zygote-") as tmp:
            out, err = Path(tmp, "out"), Path(tmp, "err")
            out.touch()
            err.touch()
            started: Future[int] = Future()
            ended: Future[int] = Future()
            with self.lock:
                rid = self.next_id = self.next_id + 1
                self.started[rid], self.ended[rid] = started, ended
                assert self.proc.stdin is not None
                self.proc.stdin.write(json.dumps({"id": rid, "code": code, "env": env, "cwd": cwd,
                                                  "out": str(out), "err": str(err)}) + "\n")
                self.proc.stdin.flush()
            pid = started.result(timeout=60)
            try:
                rc = ended.result(timeout=timeout)
            except TimeoutError:
                os.kill(pid, 9)
                raise subprocess.TimeoutExpired(["python", "-c", code], timeout) from None
            return subprocess.CompletedProcess(["python", "-c", code], rc, out.read_text(), err.read_text())

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.stdin.close()  # type: ignore[union-attr]
            self.proc.wait(timeout=30)


_ZYGOTES: dict[int, _Zygote] = {}
_START = threading.Lock()


def run_forked(
    code: str, env: dict[str, str] | None = None, timeout: float = 120, *,
    cwd: str | os.PathLike[str] | None = None, drop: tuple[str, ...] = (),
) -> subprocess.CompletedProcess[str]:
    """``run_in_fresh_interpreter(code, env, timeout, cwd=cwd)``, forked from the zygote, without
    the environment variables named in ``drop``; spawned where ``pidfd_open`` is missing."""
    if not hasattr(os, "pidfd_open"):
        saved = {k: os.environ.pop(k) for k in drop if k in os.environ}
        try:
            return run_in_fresh_interpreter(code, env, timeout, cwd=cwd)
        finally:
            os.environ.update(saved)
    with _START:
        zygote = _ZYGOTES.get(os.getpid())
        if zygote is None or zygote.proc.poll() is not None:
            zygote = _ZYGOTES[os.getpid()] = _Zygote()
            atexit.register(zygote.close)
    child_env = dict(os.environ)
    package_root = str(Path(sys.modules["kernel_plugins_testing"].__file__ or "").resolve().parents[1])
    paths = [package_root, *filter(None, child_env.get("PYTHONPATH", "").split(os.pathsep))]
    child_env["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(paths))
    child_env.update(env or {})
    for name in drop:
        child_env.pop(name, None)
    return zygote.run(code, child_env, str(cwd or os.getcwd()), timeout)


def run_module_forked(module: str, *argv: str, env: dict[str, str] | None = None,
                      timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """``python -m module *argv``, forked from the zygote (:func:`run_forked`)."""
    code = (f"import runpy, sys\nsys.argv = ['-m', *{list(argv)!r}]\n"
            f"runpy.run_module({module!r}, run_name='__main__', alter_sys=True)")
    return run_forked(code, env, timeout)
