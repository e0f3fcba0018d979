"""Fresh interpreters that skip ``import torch``: a child forked from a zygote, a process of this
interpreter that has imported torch and nothing else of note, runs its code as ``python -c``
would (its own ``__main__``, environment, working directory, PYTHONPATH, exit status and output).
Importing torch costs 2 to 3 s of CPU; a forked child pays nothing for it. Nor for the parts of
torch that torch imports itself on first use, another 2.5 s: ``torch._dynamo`` (a custom op's
first call) and ``torch.distributed.tensor`` (a tensor's first move to a PrivateUse1 device).

For code that imports torch first thing anyway (emulation, kernelize, a model). Code that tests
what a process does *before* torch is imported (import cost, the no-torch paths) needs
:func:`kernel_plugins_testing.run_in_fresh_interpreter`. torch is imported with this process's
environment when the zygote starts, except ``TORCH_DEVICE_BACKEND_AUTOLOAD``: there is one zygote
per process for each of its two meanings ("0", anything else) where an installed distribution has
a ``torch.backends`` entry point (else the two import torch alike), started on first use.
"""

from __future__ import annotations

import atexit
import functools
import json
import os
import subprocess
import sys
import tempfile
import threading
from collections.abc import Mapping
from concurrent.futures import Future
from pathlib import Path

# The zygote: imports torch, then for each request line forks a child that runs the request
# at the top level of this program and ends as an interpreter does (a traceback and status 1
# for an uncaught exception, SystemExit's status or message, non-daemon threads joined, atexit
# handlers, flushed streams, exit status 120 when stdout cannot be flushed), less the teardown
# of every module: in a process holding torch that costs 0.9 s of CPU, most of it copying the
# zygote's memory pages. Objects of __main__ are still freed (their __del__ runs, files close).
_ZYGOTE = r"""
import json, os, selectors, sys
import torch  # the import every child skips
import torch._dynamo  # and what torch imports on first use: a custom op's first call,
if torch.distributed.is_available():  # a tensor's first move to a PrivateUse1 device
    import torch.distributed.tensor
import gc
gc.freeze()  # the children's collections skip (and so copy no page of) the zygote's objects
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
import atexit, signal, threading, traceback
status = 0
try:
    exec(compile(code, "<string>", "exec"), _g)
except SystemExit as exc:
    if exc.code is None or isinstance(exc.code, int):
        status = exc.code or 0
    else:
        print(exc.code, file=sys.stderr)
        status = 1
except BaseException as exc:
    exc.__traceback__ = exc.__traceback__.tb_next  # the traceback starts in the code
    sys.excepthook(type(exc), exc, exc.__traceback__)
    status = -signal.SIGINT if isinstance(exc, KeyboardInterrupt) else 1
threading._shutdown()
atexit._run_exitfuncs()
_g.clear()
for stream in (sys.stdout, sys.stderr):
    try:
        stream.flush()
    except Exception as exc:
        if stream is sys.stdout:
            print(f"Exception ignored in: {stream!r}", file=sys.stderr)
            traceback.print_exception(type(exc), exc, exc.__traceback__.tb_next, file=sys.stderr)
            status = 120
if status == -signal.SIGINT:  # as the interpreter ends on Ctrl-C: killed by SIGINT
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    os.kill(os.getpid(), signal.SIGINT)
os._exit(status)
"""


class _Zygote:
    """One zygote process and the callers waiting for their children."""

    def __init__(self, autoload: bool) -> None:
        env = {**os.environ, "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", "1"),
               "TORCH_DEVICE_BACKEND_AUTOLOAD": "1" if autoload else "0"}
        self.proc = subprocess.Popen(  # noqa: S603 - this interpreter
            [sys.executable, "-c", _ZYGOTE], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            text=True, env=env,
        )
        self.lock = threading.Lock()
        self.started: dict[int, Future[int]] = {}
        self.ended: dict[int, Future[int]] = {}
        self.next_id = 0
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

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
            pid = started.result(timeout=600)  # the first request waits for the zygote's torch
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
        self.reader.join(timeout=30)  # it has read to the end
        self.proc.stdout.close()  # type: ignore[union-attr]


@functools.cache
def _can_fork() -> bool:
    """Whether this system has ``os.fork`` and ``os.pidfd_open`` (Python on Linux 5.3+)."""
    try:
        os.close(os.pidfd_open(os.getpid()))
    except (AttributeError, OSError):
        return False
    return hasattr(os, "fork")


@functools.cache
def _autoload_matters() -> bool:
    """Whether torch imports differently with its backend autoload on: whether an installed
    distribution has a ``torch.backends`` entry point (on import, torch calls each). Without
    one, a single zygote serves both settings."""
    from importlib.metadata import entry_points

    return bool(entry_points(group="torch.backends"))


_ZYGOTES: dict[tuple[int, bool], _Zygote] = {}
_START = threading.Lock()


def run_forked(
    code: str, env: Mapping[str, str] | None = None, timeout: float = 120, *,
    cwd: str | os.PathLike[str] | None = None, drop: tuple[str, ...] = (),
) -> subprocess.CompletedProcess[str]:
    """See :func:`kernel_plugins_testing.run_forked`."""
    from . import _child_env, _spawn

    child_env = _child_env(env, drop)
    if not _can_fork():  # not Linux (or a kernel before 5.3): spawned
        return _spawn(code, child_env, timeout, cwd)
    autoload = child_env.get("TORCH_DEVICE_BACKEND_AUTOLOAD") != "0" and _autoload_matters()
    key = (os.getpid(), autoload)
    with _START:
        zygote = _ZYGOTES.get(key)
        if zygote is None or zygote.proc.poll() is not None:
            zygote = _ZYGOTES[key] = _Zygote(key[1])
            atexit.register(zygote.close)
    return zygote.run(code, child_env, str(cwd or os.getcwd()), timeout)


def run_module_forked(module: str, *argv: str, env: Mapping[str, str] | None = None,
                      timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """See :func:`kernel_plugins_testing.run_module_forked`."""
    code = (f"import runpy, sys\nsys.argv = ['-m', *{list(argv)!r}]\n"
            f"runpy.run_module({module!r}, run_name='__main__', alter_sys=True)")
    return run_forked(code, env, timeout)
