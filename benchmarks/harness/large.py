"""Large kernels at node scale (issue 35): a kernel whose variant holds a real native extension
of ``--large-mb`` MB (400 by default; a C module with a read-only data section that size, built
here with ``cc``) and a sha256 digest, served by the loopback Hub, measured side by side:

* warm load (torch already imported; the cache warm, one untimed load first, as a rank that
  loads the kernel again would find it);
* unshareable memory per process while 4 and 8 processes hold the kernel loaded: the growth of
  the machine's ``Shmem`` (``/proc/meminfo``) over the number of processes (a private copy of
  an extension is shared memory no other process can use; pages mapped from the page cache
  are not counted). Other work on the machine changes ``Shmem`` too: run it on a quiet one;
* requests of a cold load of a variant with 60 files (and of the large one).

Without a C compiler or Python's headers the figures are skipped with a note. Quick mode (CI):
an 8 MB extension (unless ``--large-mb`` says otherwise), no first untimed load, no memory figures.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import sysconfig
import time
from pathlib import Path
from typing import Any

__all__ = ["measure_large", "LARGE_REPO", "MANY_REPO"]

LARGE_REPO = "kernels-community/bench-large"
MANY_REPO = "kernels-community/bench-many-files"
MANY_FILES = 60

_C = r"""
#include <Python.h>
#define SIZE (%(mb)dL * 1024L * 1024L)
static const unsigned char blob[SIZE] = {1};
static PyObject *ends(PyObject *self, PyObject *args) { return PyLong_FromLong(blob[0] + blob[SIZE - 1]); }
static PyMethodDef methods[] = {{"ends", ends, METH_NOARGS, NULL}, {NULL, NULL, 0, NULL}};
static struct PyModuleDef def = {PyModuleDef_HEAD_INIT, "_large", NULL, -1, methods};
PyMODINIT_FUNC PyInit__large(void) {
    PyObject *m = PyModule_Create(&def);
    if (m) PyModule_AddObject(m, "SIZE", PyLong_FromLongLong(SIZE));
    return m;
}
"""

# run in a fresh interpreter of the measured environment: argv[1] is the task (JSON)
_CHILD = r"""
import json, sys, time
task = json.loads(sys.argv[1])
import torch  # noqa: F401  (imported before the timed load, as in a training job)
kwargs = {k: task[k] for k in ("revision", "version") if task.get(k) is not None}
t0 = time.perf_counter()
if task["package"] == "kernel_plugins":
    import kernel_plugins
    module = kernel_plugins.load(task["repo_id"], trust_remote_code=True, **kwargs)
else:
    import kernels
    module = kernels.get_kernel(task["repo_id"], trust_remote_code=True, **kwargs)
took = time.perf_counter() - t0
native = getattr(module, "_large", None)
import os
real = os.path.realpath(native.__file__) if native is not None else None  # through /proc/self/fd/N too
print(json.dumps({"load_s": took, "real": real,
                  "ends": native.ends() if native is not None else None}), flush=True)
if task.get("hold"):
    sys.stdin.read()  # hold the kernel until the parent has measured
"""


def _build_extension(work: Path, mb: int) -> Path | str:
    """The extension built with ``cc``, or why it cannot be."""
    cc = shutil.which("cc") or shutil.which("gcc")
    include = sysconfig.get_paths()["include"]
    if cc is None or not Path(include, "Python.h").is_file():
        return "no C compiler (cc) or Python headers here: the large-kernel figures need both"
    src = work / "_large.c"
    src.write_text(_C % {"mb": mb})
    out = work / f"_large{sysconfig.get_config_var('EXT_SUFFIX')}"
    done = subprocess.run([cc, "-shared", "-fPIC", "-O0", f"-I{include}", str(src), "-o", str(out)],
                          capture_output=True, text=True, check=False)
    return out if done.returncode == 0 else f"cc failed: {done.stderr[-2000:]}"


def _publish(ctx: Any, ext: Path) -> tuple[str, str]:
    """The large kernel and the 60-file one on the loopback Hub: (large sha, many-files sha)."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    from tests.support.hub import make_kernel_repo
    from tests.support.variant_dirs import digest_of, metadata

    files: dict[str, bytes] = {"__init__.py": b"from . import _large\n", ext.name: ext.read_bytes()}
    meta = metadata("_bench_large_0d1e2f", name="bench-large", digest=digest_of(files))
    files["metadata.json"] = json.dumps(meta).encode()
    large = make_kernel_repo(ctx.hub, LARGE_REPO, variants={"torch-cpu": files}).head()
    many: dict[str, str | bytes] = {"__init__.py": "VALUE = 1\n",
                                    "metadata.json": json.dumps(metadata("_bench_many_3a4b5c", name="bench-many"))}
    many |= {f"part_{i:02d}.py": f"X = {i}\n" for i in range(MANY_FILES - len(many))}
    return large, make_kernel_repo(ctx.hub, MANY_REPO, variants={"torch-cpu": many, "torch-cuda": many}).head()


def _kernels_beside(ctx: Any) -> Any:
    """The pinned kernels release installed in kernel-plugins' interpreter (the project's .venv
    has it), when no kernels environment was made; else None."""
    from .envs import KERNELS_PIN, Env, _version

    if _version(ctx.kp.python, "kernels") != KERNELS_PIN:
        return None
    ctx.notes.append(f"large-kernel figures: kernels {KERNELS_PIN} from {ctx.kp.where}, beside kernel-plugins")
    return Env("kernels", ctx.kp.python, KERNELS_PIN, ctx.kp.where)


def _shmem_kib() -> int:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("Shmem:"):
            return int(line.split()[1])
    raise RuntimeError("/proc/meminfo has no Shmem line")


def _run(python: Path, task: dict[str, Any], env: dict[str, str]) -> dict[str, Any]:
    from .figures import run_fresh

    done = run_fresh(python, ["-c", _CHILD, json.dumps(task)], env)
    if done.returncode != 0:
        raise RuntimeError(f"{task['package']} failed to load {task['repo_id']}:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def _held(python: Path, task: dict[str, Any], env: dict[str, str], n: int) -> float:
    """MB of Shmem growth per process while ``n`` processes hold the kernel loaded."""
    before = _shmem_kib()
    procs = [subprocess.Popen([str(python), "-c", _CHILD, json.dumps({**task, "hold": True})], env=env,
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(n)]
    try:
        for p in procs:
            if not p.stdout or not p.stdout.readline():
                raise RuntimeError(f"a holding process failed: {p.communicate()[1][-3000:]}")
        time.sleep(0.5)
        grown = _shmem_kib() - before
    finally:
        for p in procs:
            p.communicate(timeout=120)
    return max(grown, 0) / n / 1024


def measure_large(ctx: Any) -> list[dict[str, Any]]:
    """The large-kernel figures (see the module docs); [] with a note when nothing can be built."""
    from .figures import _clean_env, _hub_env, figure

    mb = ctx.large_mb or (8 if ctx.quick else 400)
    work = ctx.work / "large"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    ext = _build_extension(work, mb)
    if isinstance(ext, str):
        ctx.notes.append(f"large-kernel figures skipped: {ext}")
        return []
    size_mb = ext.stat().st_size / (1 << 20)
    large_sha, _ = _publish(ctx, ext)
    kn_env = ctx.kn or (_kernels_beside(ctx) if ctx.kernels_beside else None)
    envs = [ctx.kp, *([kn_env] if kn_env else [])]
    warm: dict[str, list[float]] = {e.package: [] for e in envs}
    held: dict[int, dict[str, list[float]]] = {n: {e.package: [] for e in envs} for n in ((4, 8) * (not ctx.quick))}
    requests: dict[str, dict[str, list[float]]] = {k: {e.package: [] for e in envs} for k in ("many", "large")}
    how: dict[str, str] = {}
    for e in envs:
        cache = work / "caches" / e.package
        env = _clean_env({**_hub_env(ctx, cache), "KERNEL_PLUGINS_RECEIPTS": str(work / "receipts")})
        for kind, repo in (("many", MANY_REPO), ("large", LARGE_REPO)):  # cold, by version
            ctx.hub.clear_requests()
            _run(e.python, {"package": e.package, "repo_id": repo, "version": 1}, env)
            requests[kind][e.package].append(len([r for r in ctx.hub.requests if repo in r.path]))
        task = {"package": e.package, "repo_id": LARGE_REPO, "revision": large_sha}
        if not ctx.quick:  # untimed: the first warm load (kernel-plugins: hashes, keeps a receipt)
            time.sleep(2.1)  # a receipt is kept only for a file older than 2 s
            _run(e.python, task, env)
        for _ in range(ctx.runs):
            first = _run(e.python, task, env)
            warm[e.package].append(first["load_s"])
        how[e.package] = "a private copy (memfd)" if "memfd:" in str(first["real"]) else f"the file ({first['real']})"
        for n in held:
            held[n][e.package].append(_held(e.python, task, env, n))
    kp, kn = ctx.kp.package, (kn_env.package if kn_env else None)

    def pair(data: dict[str, list[float]]) -> tuple[list[float], list[float] | None]:
        return data[kp], data.get(kn) if kn else None

    note = f"extension of {size_mb:.0f} MB with a sha256 digest, from the loopback Hub's cache"
    figs = [
        figure(f"large kernel: warm load ({size_mb:.0f} MB extension)", "kernel.load of the large kernel, torch "
               "imported, warm cache", "s", *pair(warm), target={"text": "<= 0.5x kernels", "kind": "ratio",
                                                               "max": 0.5}, notes=[note]),
    ]
    for n in held:
        target = {"text": f"<= 10% of the extension ({0.1 * size_mb:.0f} MB)", "kind": "absolute",
                  "max": 0.1 * size_mb} if n == 8 else None
        figs.append(figure(f"large kernel: unshareable memory per process, {n} processes", "growth of the "
                           "machine's Shmem while the processes hold the kernel, per process", "MB",
                           *pair(held[n]), target=target, extra={"imported_from": how}))
    figs.append(figure(f"cold load requests, {MANY_FILES}-file variant", "HTTP requests about the repository "
                       "of one cold load by version (counted by the proxy)", "requests", *pair(requests["many"]),
                       target={"text": "<= 0.5x kernels", "kind": "ratio", "max": 0.5}))
    figs.append(figure("cold load requests, large kernel", "HTTP requests of one cold load by version",
                       "requests", *pair(requests["large"])))
    shutil.rmtree(work / "caches", ignore_errors=True)
    return figs
