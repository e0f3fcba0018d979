"""The figures of the suite: each measured for kernel-plugins and ``kernels`` in one run.

Every figure is a dict (see :func:`figure`): the summary of each package's samples
(median, IQR, min, max, the samples), the ratio kernel-plugins / kernels of the medians,
the target and whether it is met. Whole-process figures time ``subprocess.run`` of a fresh
interpreter; in-process ones come from :mod:`probe` running in a fresh interpreter.
Runs of the two packages alternate, so slow phases of a noisy machine hit both.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .envs import REPO_ROOT, Env

__all__ = ["Context", "summarize", "figure", "MEASURES"]

PROBE = Path(__file__).with_name("probe.py")


@dataclass
class Context:
    """What every measurement needs.

    Attributes:
        kp / kn: the kernel-plugins and kernels environments (kn None: not compared).
        runs: samples per figure. quick: the CI mode (fewer calls and repeats).
        work: scratch folder. repo_path: the local kernel repository.
        names_file: JSON list of variant names to resolve. hub: the loopback Hub
        (``tests.support.hub.HubServer``) or None. sha: the commit of branch v1 there;
        top_shas: the commits of the kernel with a dependency that pin it by ``version``
        (branch v1) and by ``revision`` (v2).
        profile_dir: where cProfile reports go (None: no profiling).
    """

    kp: Env
    kn: Env | None
    runs: int
    quick: bool
    work: Path
    repo_path: Path
    names_file: Path
    say: Callable[[str], object] = print
    hub: Any = None
    sha: str | None = None
    top_shas: dict[str, str] = field(default_factory=dict)
    profile_dir: Path | None = None
    notes: list[str] = field(default_factory=list)
    large_mb: int | None = None
    kernels_beside: bool = False

    def envs(self) -> list[Env]:
        """The environments measured, kernel-plugins first."""
        return [self.kp] + ([self.kn] if self.kn is not None else [])


def summarize(samples: Sequence[float]) -> dict[str, Any]:
    """Median, IQR, min, max and the samples themselves."""
    values = sorted(samples)
    if len(values) >= 2:
        q1, _, q3 = statistics.quantiles(values, n=4, method="inclusive")
    else:
        q1 = q3 = values[0]
    return {
        "median": statistics.median(values),
        "iqr": q3 - q1,
        "min": values[0],
        "max": values[-1],
        "n": len(values),
        "samples": list(samples),
    }


def figure(
    name: str,
    what: str,
    unit: str,
    kp: Sequence[float] | None,
    kn: Sequence[float] | None,
    *,
    target: dict[str, Any] | None = None,
    extra: dict[str, Any] | None = None,
    notes: Sequence[str] = (),
) -> dict[str, Any]:
    """One figure. ``target``: ``{"text", "kind": "ratio"|"absolute", "max"}`` or None.

    A ratio target compares the kernel-plugins median with the kernels one; an absolute
    target compares the kernel-plugins median with ``max`` (in ``unit``).
    """
    kps = summarize(kp) if kp else None
    kns = summarize(kn) if kn else None
    ratio = kps["median"] / kns["median"] if kps and kns and kns["median"] > 0 else None
    value = None
    if target is not None and kps is not None:
        value = ratio if target["kind"] == "ratio" else kps["median"]
    return {
        "name": name,
        "what": what,
        "unit": unit,
        "kernel_plugins": kps,
        "kernels": kns,
        "ratio": ratio,
        "target": target,
        "target_value": value,
        "met": None if value is None or target is None else value <= target["max"],
        "extra": extra or {},
        "notes": list(notes),
    }


def _clean_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("KERNEL_PLUGINS_", "HF_", "KERNELS_", "LOCAL_KERNELS", "PYTHON"))
    }
    env["HF_HUB_DISABLE_PROGRESS_BARS"] = "1"
    env.update(extra or {})
    return env


def _timed(cmd: Sequence[str], env: dict[str, str]) -> float:
    start = time.perf_counter()
    done = subprocess.run(
        list(cmd), env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, check=False
    )
    took = time.perf_counter() - start
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed:\n{done.stderr.decode(errors='replace')}")
    return took


#: Quick mode (run.py --quick): a probe in this interpreter is forked from one that imported
#: torch (kernel_plugins_testing.run_forked), as a probe times torch's import apart anyway;
#: the full suite spawns every probe.
FORK_PROBES = False


def run_fresh(python: Path, argv: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """``python *argv`` (a script and its arguments, or ``-c CODE`` and its arguments) in a
    fresh interpreter with exactly ``env``: forked in quick mode where ``python`` is this one."""
    if FORK_PROBES and Path(python) == Path(sys.executable):
        from kernel_plugins_testing import run_forked

        if argv[0] == "-c":
            code = f"import sys\nsys.argv[1:] = {argv[2:]!r}\n{argv[1]}"
        else:
            code = f"import runpy, sys\nsys.argv = {argv!r}\nrunpy.run_path({argv[0]!r}, run_name='__main__')"
        return run_forked(code, env, 600, drop=tuple(k for k in os.environ if k not in env))
    return subprocess.run([str(python), *argv], env=env, capture_output=True, text=True, check=False)


def probe(env: Env, task: dict[str, Any], extra_env: dict[str, str] | None = None) -> dict:
    """Run :mod:`probe` with ``task`` in a fresh interpreter of ``env``."""
    task = {"package": env.package, **task}
    done = run_fresh(env.python, [str(PROBE), json.dumps(task)], _clean_env(extra_env))
    for line in done.stdout.splitlines():
        if line.startswith("@@PROBE@@ "):
            return json.loads(line.split(" ", 1)[1])  # type: ignore[no-any-return]
    raise RuntimeError(
        f"probe {task['task']} for {env.package} failed (exit {done.returncode}):\n"
        f"{done.stderr[-4000:]}"
    )


# ----------------------------------------------------------------------------- figures


def measure_import(ctx: Context) -> list[dict[str, Any]]:
    """``python -c "import <package>"``, whole process, and ``python -c pass`` as baseline."""
    samples: dict[str, list[float]] = {e.package: [] for e in ctx.envs()}
    base: dict[str, list[float]] = {e.package: [] for e in ctx.envs()}
    env = _clean_env()
    for _ in range(ctx.runs):
        for e in ctx.envs():
            samples[e.package].append(_timed([str(e.python), "-c", f"import {e.package}"], env))
            base[e.package].append(_timed([str(e.python), "-c", "pass"], env))
    extra = {f"python -c pass ({p})": summarize(v)["median"] for p, v in base.items()}
    return [
        figure(
            "import",
            'python -c "import <package>" wall time (whole process)',
            "s",
            samples["kernel_plugins"],
            samples.get("kernels"),
            target={"text": "<= 0.3x of kernels", "kind": "ratio", "max": 0.3},
            extra=extra,
        )
    ]


def measure_local(ctx: Context) -> list[dict[str, Any]]:
    """Import plus the first load of the local repository, fresh process, torch excluded."""
    from .inputs import KERNEL_NAME

    task = {
        "task": "local",
        "repo_path": str(ctx.repo_path),
        "package_name": KERNEL_NAME.replace("-", "_"),
    }
    out: dict[str, list[dict[str, Any]]] = {e.package: [] for e in ctx.envs()}
    for i in range(ctx.runs):
        for e in ctx.envs():
            out[e.package].append(probe(e, {**task, **_profile(ctx, e, "local", i)}))
    kp, kn = out["kernel_plugins"], out.get("kernels")
    return [
        figure(
            "first local load",
            "fresh process: import the package, then load the local repository (first load; "
            "excludes the torch import)",
            "s",
            _pick(kp, "first_s"),
            kn and _pick(kn, "first_s"),
            target={"text": "<= 0.4x of kernels", "kind": "ratio", "max": 0.4},
            extra={
                "cpu_median_s": {
                    p: statistics.median(_pick(r, "first_cpu_s")) for p, r in out.items()
                },
                "import_s": {p: statistics.median(_pick(r, "import_s")) for p, r in out.items()},
                "load_s": {p: statistics.median(_pick(r, "load_s")) for p, r in out.items()},
                "heavy_modules": {p: r[0]["heavy_modules"] for p, r in out.items()},
            },
            notes=_variant_notes({p: {x["variant"] for x in r} for p, r in out.items()}),
        )
    ]


def measure_list_backends(ctx: Context) -> list[dict[str, Any]]:
    """``kernel-plugins list-backends`` against ``python -c "import torch"`` (same env)."""
    env = _clean_env()
    script = ctx.kp.bin("kernel-plugins")
    cmd = (
        [str(script), "list-backends"]
        if script.exists()
        else [str(ctx.kp.python), "-m", "kernel_plugins.cli.main", "list-backends"]
    )
    listing = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False).stdout
    plugins = [p for p in ("mlu", "musa", "npu", "neuron", "tpu") if f"\n{p} " in f"\n{listing}"]
    lb: list[float] = []
    torch_s: list[float] = []
    for _ in range(ctx.runs):
        lb.append(_timed(cmd, env))
        torch_s.append(_timed([str(ctx.kp.python), "-c", "import torch"], env))
    f = figure(
        "list-backends",
        'kernel-plugins list-backends vs python -c "import torch" (whole process, same venv)',
        "s",
        lb,
        None,
        target={"text": '<= 1.15x of python -c "import torch"', "kind": "ratio", "max": 1.15},
        extra={"plugins_listed": plugins, "import_torch": summarize(torch_s)},
    )
    f["target_value"] = f["kernel_plugins"]["median"] / summarize(torch_s)["median"]
    f["met"] = f["target_value"] <= 1.15
    if len(plugins) < 5:
        f["notes"].append(f"only {len(plugins)} of the five plugins are installed: {plugins}")
    return [f]


def _hub_env(ctx: Context, cache: Path, offline: bool = False) -> dict[str, str]:
    env = {
        "HF_ENDPOINT": ctx.hub.endpoint,
        "HF_HUB_CACHE": str(cache),
        "HF_HOME": str(cache.parent / f"{cache.name}-home"),
    }
    if offline:
        env["HF_HUB_OFFLINE"] = "1"
    return env


def measure_loads(ctx: Context) -> list[dict[str, Any]]:
    """Cold load (empty cache, loopback Hub) then warm load (sha, cached) per run."""
    from .inputs import REPO_ID

    assert ctx.hub is not None and ctx.sha is not None
    names = ("cold", "cold_requests", "warm", "warm_requests", "warm_gc", "warm_offline")
    data: dict[str, dict[str, list[float]]] = {
        n: {e.package: [] for e in ctx.envs()} for n in names
    }
    variants: dict[str, set[str]] = {e.package: set() for e in ctx.envs()}
    paths: dict[str, list[str]] = {}
    offline_errors: dict[str, str] = {}
    for i in range(ctx.runs):
        for e in ctx.envs():
            cache = ctx.work / "caches" / f"{e.package}-{i}"
            shutil.rmtree(cache, ignore_errors=True)
            shutil.rmtree(cache.parent / f"{cache.name}-home", ignore_errors=True)
            cache.mkdir(parents=True)
            profile = _profile(ctx, e, "load", i)
            ctx.hub.clear_requests()
            cold = probe(
                e, {"task": "load", "repo_id": REPO_ID, "version": 1}, _hub_env(ctx, cache)
            )
            data["cold"][e.package].append(cold["load_s"])
            data["cold_requests"][e.package].append(len(ctx.hub.requests))
            paths.setdefault(e.package, [f"{r.method} {r.path}" for r in ctx.hub.requests])
            ctx.hub.clear_requests()
            task = {"task": "load", "repo_id": REPO_ID, "revision": ctx.sha, **profile}
            warm = probe(e, task, _hub_env(ctx, cache))
            data["warm"][e.package].append(warm["load_s"])
            data["warm_gc"][e.package].append(warm["full_gc_s"])
            data["warm_requests"][e.package].append(len(ctx.hub.requests))
            ctx.hub.clear_requests()
            task = {"task": "load", "repo_id": REPO_ID, "revision": ctx.sha}
            variants[e.package].update({cold["variant"], warm["variant"]})
            if ctx.quick:
                continue
            try:
                off = probe(e, task, _hub_env(ctx, cache, offline=True))
            except RuntimeError as err:
                last = str(err).strip().splitlines()[-1]
                offline_errors.setdefault(e.package, f"{e.package} failed offline: {last}")
                continue
            data["warm_offline"][e.package].append(off["load_s"])
            variants[e.package].add(off["variant"])
    notes = _variant_notes(variants)
    kp, kn = "kernel_plugins", "kernels"
    figs = [
        figure(
            "cold load",
            "fresh process, empty cache, loopback Hub (olah), version=1; excludes the torch import",
            "s",
            data["cold"][kp],
            data["cold"].get(kn),
            target={"text": "<= 1.0x of kernels", "kind": "ratio", "max": 1.0},
            extra={"variants": {k: sorted(v) for k, v in variants.items()}},
            notes=notes,
        ),
        figure(
            "cold load requests",
            "HTTP requests of one cold load (counted by the proxy)",
            "requests",
            data["cold_requests"][kp],
            data["cold_requests"].get(kn),
            target={"text": "<= 1.0x of kernels", "kind": "ratio", "max": 1.0},
            extra={"requests": paths},
        ),
        figure(
            "warm load",
            "fresh process, commit sha already cached, Hub reachable; excludes the torch import",
            "s",
            data["warm"][kp],
            data["warm"].get(kn),
            target={"text": "<= 0.5x of kernels", "kind": "ratio", "max": 0.5},
            extra={"requests": {k: v for k, v in data["warm_requests"].items()}, "full_gc_s": data["warm_gc"]},
            notes=_gc_notes(data["warm_gc"]),
        ),
    ]
    if data["warm_offline"][kp]:
        figs.append(
            figure(
                "warm load offline",
                "as warm load, with HF_HUB_OFFLINE=1 (no network at all; not in quick mode)",
                "s",
                data["warm_offline"][kp],
                data["warm_offline"].get(kn),
                notes=list(offline_errors.values()),
            )
        )
    return figs


def measure_depends(ctx: Context) -> list[dict[str, Any]]:
    """A kernel with one dependency: the first local load (the dependency a local folder too,
    through ``LOCAL_KERNELS``), then per run a cold load (empty cache, loopback Hub,
    ``version=1``, which pins the dependency to its ``version=1``) and warm loads at the
    kernel's commit whose ``kernel-depends`` pins the dependency by ``version`` (the Hub is
    asked where branch v1 is) and at the one pinning it by commit (``revision``)."""
    from .inputs import BASE_REPO_ID, TOP_REPO_ID, write_local_repo

    assert ctx.hub is not None and ctx.top_shas
    top = write_local_repo(ctx.work / "dep-local" / "top", TOP_REPO_ID)
    base = write_local_repo(ctx.work / "dep-local" / "base", BASE_REPO_ID)
    loads = {"cold": {"version": 1}, **{f"warm-{k}": {"revision": v} for k, v in ctx.top_shas.items()}}
    if ctx.quick:  # the commit-pinned warm load needs one more load first
        del loads["warm-revision"]
    kinds = ("local", "local_cpu", "cold", "warm-version", "warm-revision")
    data: dict[str, dict[str, list[float]]] = {
        n: {e.package: [] for e in ctx.envs()} for n in (*kinds, *(f"{k}_{x}" for k in kinds for x in ("req", "gc")))
    }
    variants: dict[str, set[str]] = {e.package: set() for e in ctx.envs()}
    for i in range(ctx.runs):
        for e in ctx.envs():
            got = probe(e, {"task": "local", "repo_path": str(top)}, {"LOCAL_KERNELS": f"{BASE_REPO_ID}={base}"})
            data["local"][e.package].append(got["first_s"])
            data["local_cpu"][e.package].append(got["first_cpu_s"])
            cache = ctx.work / "caches" / f"dep-{e.package}-{i}"
            shutil.rmtree(cache, ignore_errors=True)
            shutil.rmtree(cache.parent / f"{cache.name}-home", ignore_errors=True)
            cache.mkdir(parents=True)
            for kind, pin in loads.items():
                if kind == "warm-revision":  # the cold load fetched the kernel at its v1 commit
                    probe(e, {"task": "load", "repo_id": TOP_REPO_ID, **pin}, _hub_env(ctx, cache))
                ctx.hub.clear_requests()
                got = probe(e, {"task": "load", "repo_id": TOP_REPO_ID, **pin}, _hub_env(ctx, cache))
                data[kind][e.package].append(got["load_s"])
                data[f"{kind}_req"][e.package].append(len(ctx.hub.requests))
                data[f"{kind}_gc"][e.package].append(got["full_gc_s"])
                variants[e.package].add(got["variant"])
    kp, kn = "kernel_plugins", "kernels"
    target = {"text": "<= 0.4x of kernels", "kind": "ratio", "max": 0.4}

    def requests(kind: str) -> dict[str, Any]:
        return {"requests": {p: statistics.median(v) for p, v in data[f"{kind}_req"].items()},
                "full_gc_s": data[f"{kind}_gc"]}

    figs = [
        figure(
            "first local load, one dependency",
            "fresh process: import the package, then load a local kernel whose kernel-depends "
            "names one kernel (a local folder through LOCAL_KERNELS); excludes the torch import",
            "s", data["local"][kp], data["local"].get(kn), target=target,
            extra={"cpu_median_s": {p: statistics.median(v) for p, v in data["local_cpu"].items()}},
            notes=_variant_notes(variants),
        ),
        figure(
            "cold load, one dependency",
            "fresh process, empty cache, loopback Hub, version=1 of a kernel whose dependency is "
            "pinned by version=1; excludes the torch import",
            "s", data["cold"][kp], data["cold"].get(kn), extra=requests("cold"),
        ),
        figure(
            "warm load, one dependency (pinned by version)",
            "fresh process, the kernel at its commit sha, both cached, Hub reachable, the "
            "dependency pinned by version=1: both packages ask the Hub where its branch v1 is "
            "(kernel-plugins: one plain API request, without building huggingface_hub's HTTP client); excludes "
            "the torch import",
            "s", data["warm-version"][kp], data["warm-version"].get(kn), target=target,
            extra=requests("warm-version"), notes=_gc_notes(data["warm-version_gc"]),
        ),
    ]
    if data["warm-revision"][kp]:
        figs.append(figure(
            "warm load, one dependency (pinned by commit)",
            "as above, the dependency pinned by revision=<its commit sha>: nothing to ask the "
            "Hub (not in quick mode)",
            "s", data["warm-revision"][kp], data["warm-revision"].get(kn), target=target,
            extra=requests("warm-revision"), notes=_gc_notes(data["warm-revision_gc"]),
        ))
    return figs


def _gc_notes(samples: dict[str, list[float]]) -> list[str]:
    """How much of a load full garbage collections took (the first one after importing torch
    sweeps torch's objects, about 0.1 s, in whichever code allocates enough)."""
    parts = [f"{p}: {1000 * statistics.median(v):.0f} ms in {sum(x > 0 for x in v)} of {len(v)} runs"
             for p, v in samples.items() if v]
    return [f"full garbage collections inside the load (median): {'; '.join(parts)}"] if parts else []


def _variant_notes(variants: dict[str, set[str]]) -> list[str]:
    chosen = {k: sorted(v) for k, v in variants.items()}
    if len({tuple(v) for v in chosen.values()}) > 1:
        return [f"the packages chose different variants: {chosen}; the comparison is unfair"]
    return []


def _profile(ctx: Context, env: Env, region: str, run: int) -> dict[str, str]:
    if ctx.profile_dir is None or env.package != "kernel_plugins" or run != 0:
        return {}
    ctx.profile_dir.mkdir(parents=True, exist_ok=True)
    path = ctx.profile_dir / f"profile-{region}.txt"
    return {"profile": str(path), "profile_region": region}


def measure_inproc(ctx: Context) -> list[dict[str, Any]]:
    """kernelize of 1,000 marked layers, per-call overhead, resolution of 500 names."""
    task = {
        "task": "inproc",
        "layers": 1000,
        "repeats": 2 if ctx.quick else 5,
        "repo_path": str(ctx.repo_path),
        "calls": 300 if ctx.quick else 5000,
        "call_repeats": 3 if ctx.quick else 31,
        "names_file": str(ctx.names_file),
    }
    out: dict[str, list[dict[str, Any]]] = {e.package: [] for e in ctx.envs()}
    regions = ["kernelize-first", "kernelize", "resolution"] if ctx.profile_dir else []
    for _ in range(ctx.runs):
        for e in ctx.envs():
            out[e.package].append(probe(e, task))
    for region in regions:
        probe(ctx.kp, {**task, **_profile(ctx, ctx.kp, region, 0)})
    return _inproc_figures(out)


def _pick(runs: list[dict[str, Any]], *keys: str) -> list[float]:
    values = []
    for r in runs:
        v: Any = r
        for k in keys:
            v = v[k]
        values.extend(v if isinstance(v, list) else [v])
    return values


def _inproc_figures(out: dict[str, list[dict[str, Any]]]) -> list[dict[str, Any]]:
    kp = out["kernel_plugins"]
    kn = out.get("kernels")

    def cpu(key: str) -> dict[str, float]:
        return {p: statistics.median(_pick(r, "kernelize", key)) for p, r in out.items()}

    half = {"text": "<= 0.5x of kernels", "kind": "ratio", "max": 0.5}
    figs = [
        figure(
            "kernelize (kernel loaded)",
            "kernelize of a fresh model with 1,000 marked layers, in a process that has "
            "loaded the kernel (kernelize's own work)",
            "s",
            _pick(kp, "kernelize", "loaded_s"),
            kn and _pick(kn, "kernelize", "loaded_s"),
            target=half,
            extra={"cpu_median_s": cpu("loaded_cpu_s")},
        ),
        figure(
            "kernelize again",
            "kernelize of the same model again (kernel loaded, forwards already replaced)",
            "s",
            _pick(kp, "kernelize", "again_s"),
            kn and _pick(kn, "kernelize", "again_s"),
            target=half,
            extra={"cpu_median_s": cpu("again_cpu_s")},
        ),
        figure(
            "kernelize first call",
            "first kernelize of a model with 1,000 marked layers in a fresh process: "
            "includes loading the kernel from the local repository (see first local load)",
            "s",
            _pick(kp, "kernelize", "first_s"),
            kn and _pick(kn, "kernelize", "first_s"),
            extra={
                "replaced": {p: r[0]["kernelize"]["replaced"] for p, r in out.items()},
                "cpu_median_s": cpu("first_cpu_s"),
            },
        ),
    ]
    call = {
        p: {k: _pick(r, "call", k) for k in ("direct", "bound", "module", "plain_module")}
        for p, r in out.items()
    }
    kpc = call["kernel_plugins"]
    ratio = statistics.median(kpc["module"]) / statistics.median(kpc["plain_module"])
    raw = statistics.median(kpc["module"]) / statistics.median(kpc["direct"])
    bound = statistics.median(kpc["bound"]) / statistics.median(kpc["direct"])
    f = figure(
        "call overhead",
        "per call of a kernelized layer layer(x), tiny tensors (2x8), vs the same kernel "
        "forward in a plain nn.Module that was never kernelized",
        "s",
        kpc["module"],
        kn and call["kernels"]["module"],
        extra={p: {k: statistics.median(v) for k, v in c.items()} for p, c in call.items()},
        notes=[
            f"layer(x) / plain(x) = {ratio:.3f} (the target's 'extra work per call')",
            f"layer.forward(x) / kernel_forward(layer, x) = {bound:.3f} (the installed forward "
            "is a plain bound method of the kernel's forward)",
            f"layer(x) / kernel_forward(layer, x) = {raw:.3f}: the difference is "
            "nn.Module.__call__, which every module pays, kernelized or not",
        ],
    )
    f["target"] = {
        "text": "<= 1.02x of the kernel forward (0 extra work per call)",
        "kind": "ratio",
        "max": 1.02,
    }
    f["target_value"] = ratio
    f["met"] = ratio <= 1.02
    figs.append(f)
    res = {p: r for p, r in out.items()}
    figs.append(
        figure(
            "resolution",
            "resolve 500 variant names, with the architecture step, in a fresh process (first call, after the "
            "backends were loaded and the device detected)",
            "s",
            _pick(kp, "resolution", "first_s"),
            kn and _pick(kn, "resolution", "first_s"),
            target={"text": "< 1 ms", "kind": "absolute", "max": 1e-3},
            extra={
                "best": {p: r[0]["resolution"]["best"] for p, r in res.items()},
                "accepted": {p: r[0]["resolution"]["accepted"] for p, r in res.items()},
            },
            notes=_variant_notes({p: {r[0]["resolution"]["best"]} for p, r in res.items()}),
        )
    )
    figs.append(
        figure(
            "resolution, CUDA arch step",
            "the 500 names on a described CUDA 12.8 device of capability 8.0 whose best builds "
            "are Hopper-only: the architecture step refuses each stable-ABI build before a fit",
            "s",
            _pick(kp, "resolution", "cuda_arch_step", "first_s"),
            None,
            extra={"best": kp[0]["resolution"]["cuda_arch_step"]["best"],
                   "refused": kp[0]["resolution"]["cuda_arch_step"]["refused"]},
        )
    )
    figs.append(
        figure(
            "resolution with every reason",
            "the same CUDA resolution again, writing the reason of every name (the trace)",
            "s",
            _pick(kp, "resolution", "cuda_arch_step", "with_reasons_s"),
            None,
        )
    )
    figs.append(
        figure(
            "resolution again",
            "the same 500 names resolved again in the same process",
            "s",
            _pick(kp, "resolution", "again_s"),
            kn and _pick(kn, "resolution", "again_s"),
        )
    )
    return figs


#: The measurements in the order they run: (name, function, needs the loopback Hub).
MEASURES: list[tuple[str, Callable[[Context], list[dict[str, Any]]], bool]] = [
    ("import", measure_import, False),
    ("first local load", measure_local, False),
    ("in-process (kernelize, call overhead, resolution)", measure_inproc, False),
    ("loads (cold, warm)", measure_loads, True),
    ("loads with one dependency (first local, cold, warm)", measure_depends, True),
    ("list-backends", measure_list_backends, False),
    ("large kernel (warm load, memory per process, requests)", lambda ctx: _large(ctx), True),
]


def _large(ctx: Context) -> list[dict[str, Any]]:
    from .large import measure_large

    return measure_large(ctx)


def start_hub(ctx: Context) -> None:
    """Start olah with the benchmark repository (sets ``ctx.hub`` and ``ctx.sha``)."""
    sys.path.insert(0, str(REPO_ROOT))
    from tests.support.hub import HubServer, make_kernel_repo

    from .inputs import (
        BASE_REPO_ID,
        REPO_ID,
        TOP_REPO_ID,
        dependency_variant_names,
        variant_files,
        variant_names,
    )

    root = ctx.work / "hub"
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True)
    server = HubServer(root)
    repo = make_kernel_repo(
        server,
        REPO_ID,
        "kernel",
        variants={v: variant_files(v) for v in variant_names()},
        branches=("v1",),
    )
    names = dependency_variant_names()
    base = make_kernel_repo(
        server, BASE_REPO_ID, "kernel", {v: variant_files(v, BASE_REPO_ID) for v in names}
    ).head()
    top = make_kernel_repo(  # v1 pins the base by version=1, v2 by its commit
        server, TOP_REPO_ID, "kernel", {v: variant_files(v, TOP_REPO_ID) for v in names}
    )
    ctx.top_shas = {"version": top.head()}
    make_kernel_repo(server, TOP_REPO_ID, "kernel", branches=("v2",), variants={
        v: variant_files(v, TOP_REPO_ID, base) for v in names})
    ctx.top_shas["revision"] = top.head()
    server.start()
    ctx.hub = server
    ctx.sha = repo.head()
