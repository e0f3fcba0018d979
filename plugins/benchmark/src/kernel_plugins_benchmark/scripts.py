"""A repository's own benchmark scripts, run as ``kernels benchmark`` runs them.

A kernel repository may ship ``benchmarks/benchmark*.py`` beside ``build/``. Each script
defines subclasses of ``kernels.benchmark.Benchmark`` (or of
:class:`kernel_plugins.compat.kernels.Benchmark`, the same contract) with
``benchmark_<workload>`` methods, an optional ``setup_<workload>`` (else ``setup``), an
optional ``verify_<workload>`` returning the expected tensor, and an optional ``seed``.
:func:`run_scripts` loads the kernel once with :func:`kernel_plugins.load`, then for every
class and workload, as ``kernels`` does: a fresh instance with ``kernel`` and ``device``
set, the seed applied, the setup run; with a verify method, one benchmark call, ``warmup``
untimed reference calls and one timed one (``ref_mean_ms``), and
``torch.allclose(out, expected, atol=1e-2)``; then ``warmup`` untimed calls and
``iterations`` timed ones, each ending with the owning backend's ``synchronize`` hook.

Running the scripts executes the repository's code, exactly as loading the kernel does:
the kernel is loaded first, so a Hub repository outside the trusted organisations needs
``trust_remote_code``, and the scripts come from the commit the kernel was loaded from and
must equal the files the Hub lists for it (so ``HF_HUB_OFFLINE=1`` cannot run them). Each
script is read once, with the loader's checks (a regular file, no link out of the
repository or out of huggingface_hub's blobs), and run from those bytes. While the
scripts are imported, ``kernels`` and ``kernels.benchmark`` resolve to
:mod:`kernel_plugins.compat.kernels` when HF ``kernels`` is not installed.

The JSON document (:meth:`ScriptsReport.to_dict`) is the payload ``kernels`` writes
(``results``: ``workload``, ``timingResults`` with ``mean_ms``, ``std_ms``, ``min_ms``,
``max_ms``, ``q1_ms``, ``q3_ms``, ``iqr_ms``, ``outliers``, ``iterations``, and ``verified``
when checked; ``machineInfo``; ``kernelCommitSha``; ``benchmarkScriptPath``;
``benchmarkScriptSha``), plus ``ok``, ``emulated``, ``note``, ``kernel`` (provenance),
``errors`` (per workload) and ``ref_mean_ms`` per result.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import platform
import random
import sys
import time
import types
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ._errors import BenchmarkError, CorrectnessError

__all__ = ["ScriptsReport", "Workload", "run_scripts", "find_scripts"]

MAX_SCRIPT_BYTES = 4 << 20  #: a larger benchmark script is refused unread
#: the modules ``Benchmark`` is defined in: HF kernels' (``kernels.benchmark`` in 0.17,
#: ``kernels._internals.benchmark`` since 0.18) and the compat module's
_BASE_MODULES = ("kernels.", "kernel_plugins.compat.")


@dataclass(frozen=True)
class Workload:
    """One ``Class.workload``: times in ms (None when it failed), verification, error."""

    name: str
    times_ms: tuple[float, ...] = ()
    verified: bool | None = None
    ref_mean_ms: float | None = None
    error: str | None = None

    def timing(self) -> dict[str, Any]:
        """``kernels``' ``timingResults``: mean, population std, min, max, quartiles, outliers."""
        t = sorted(self.times_ms)
        n, mean = len(t), sum(t) / len(t)

        def pct(p: float) -> float:  # linear interpolation, as kernels
            i = (n - 1) * p
            lo = int(i)
            return t[lo] + (t[min(lo + 1, n - 1)] - t[lo]) * (i - lo)

        q1, q3 = pct(0.25), pct(0.75)
        iqr = q3 - q1
        out = sum(1 for x in t if x < q1 - 1.5 * iqr or x > q3 + 1.5 * iqr)
        std = (sum((x - mean) ** 2 for x in t) / n) ** 0.5
        stats = {"mean_ms": mean, "std_ms": std, "min_ms": t[0], "max_ms": t[-1], "q1_ms": q1,
                 "q3_ms": q3, "iqr_ms": iqr}
        return {**{k: round(v, 4) for k, v in stats.items()}, "outliers": out, "iterations": n}


@dataclass
class ScriptsReport:
    """What :func:`run_scripts` measured."""

    kernel: dict[str, Any]
    device: dict[str, Any]
    scripts: list[str]
    script_sha: str
    workloads: list[Workload] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """No workload raised and every verified one matched."""
        return all(w.error is None and w.verified is not False for w in self.workloads)

    def note(self) -> str | None:
        """The warning for an emulated device, else None."""
        if not self.device.get("emulated"):
            return None
        return (f"device {self.device['device_type']!r} is EMULATED on the CPU: these times say "
                "nothing about any hardware")

    def to_dict(self) -> dict[str, Any]:
        """``kernels``' payload plus kernel-plugins' fields (see the module docs)."""
        import torch

        results = []
        for w in sorted(self.workloads, key=lambda w: w.name):
            if w.error is not None:
                continue
            entry: dict[str, Any] = {"workload": w.name, "timingResults": w.timing(),
                                     "ref_mean_ms": w.ref_mean_ms}
            if w.verified is not None:
                entry["verified"] = w.verified
            results.append(entry)
        return {
            "results": results,
            "machineInfo": {"gpu": self.device["summary"], "backend": self.device["backend"],
                            "pytorchVersion": torch.__version__,
                            "os": f"{platform.system()} {platform.release()}",
                            "cpu": platform.processor() or platform.machine() or "Unknown"},
            "kernelCommitSha": self.kernel.get("sha") or "",
            "benchmarkScriptPath": "benchmarks",
            "benchmarkScriptSha": self.script_sha,
            "ok": self.ok, "emulated": bool(self.device.get("emulated")), "note": self.note(),
            "kernel": self.kernel,
            "errors": {w.name: w.error for w in self.workloads if w.error is not None},
        }

    def format_table(self) -> str:
        """One row per workload, as ``kernels`` prints them (times in ms)."""
        from .report import _format_table

        head = ["benchmark", "workload", "N", "speed-up", "mean", "std", "min", "max", "IQR",
                "outliers", "ref", "match"]
        rows = []
        for w in sorted(self.workloads, key=lambda w: w.name):
            cls, _, name = w.name.rpartition(".")
            if w.error is not None:
                rows.append([cls, name, "0", *["-"] * 8, "error"])
                continue
            t = w.timing()
            speed = f"{w.ref_mean_ms / t['mean_ms']:.2f}x" if w.ref_mean_ms and t["mean_ms"] else "-"
            match = {True: "yes", False: "NO", None: "-"}[w.verified]
            rows.append([cls, name, str(t["iterations"]), speed,
                         *(f"{t[k]:.4f}" for k in ("mean_ms", "std_ms", "min_ms", "max_ms", "iqr_ms")),
                         str(t["outliers"]), "-" if w.ref_mean_ms is None else f"{w.ref_mean_ms:.4f}",
                         match])
        k = self.kernel
        lines = [f"NOTE: {self.note()}"] if self.note() else []
        lines += [f"kernel     {k.get('repo_id')} (variant {k.get('variant')}, source {k.get('source')})",
                  f"scripts    {', '.join(self.scripts)} (sha256 {self.script_sha[:12]})",
                  f"device     {self.device['summary']}; times in ms per call",
                  _format_table(head, rows)]
        lines += [f"error      {w.name}: {w.error}" for w in self.workloads if w.error is not None]
        return "\n".join(lines)

    def raise_for_failures(self) -> None:
        """Raise :class:`CorrectnessError` naming every workload that raised or did not match."""
        bad = [f"  - {w.name}: {w.error or 'the output differs from verify (atol=1e-2)'}"
               for w in self.workloads if w.error is not None or w.verified is False]
        if bad:
            raise CorrectnessError(f"{len(bad)} benchmark workload(s) of "
                                   f"{self.kernel.get('repo_id')} failed:\n" + "\n".join(bad))


def _scripts_root(module: types.ModuleType, target: str) -> tuple[Path, tuple[Path, ...], dict | None]:
    """The repository folder the kernel was loaded from, where its file links may lead, and
    for the Hub the commit's listing of ``benchmarks/`` (name -> FileHash) to check against."""
    prov = module.__kernel_provenance__
    if prov.source == "local":
        return Path(target).expanduser(), (), None
    if prov.source != "hub":
        raise BenchmarkError(f"{target} was loaded from {prov.source!r}, which has no repository "
                             "with benchmarks/: give a local kernel folder or a Hub repository")
    from huggingface_hub import HfApi, RepoFile, snapshot_download

    from kernel_plugins.fetching import offer
    from kernel_plugins.hub import blobs_folder, cache_dir, is_offline, map_error, request_args
    from kernel_plugins.integrity.varianthash import listing_entry_hash
    from kernel_plugins.sources import find

    if is_offline():
        raise BenchmarkError("the benchmark scripts of a Hub repository are checked against the "
                             "Hub's listing of the commit, which HF_HUB_OFFLINE=1 forbids: unset it")
    ref = offer(find(prov.repo_id, revision=prov.sha), trust_remote_code=True).ref
    assert ref is not None  # a Hub source has a commit
    request = request_args(ref.endpoint)
    try:  # only benchmarks/ of the very commit the kernel was loaded from
        snap = snapshot_download(ref.repo_id, repo_type=ref.repo_type, revision=ref.sha,
                                 allow_patterns=["benchmarks/*"], cache_dir=cache_dir(), **request)
        tree = HfApi(**request).list_repo_tree(
            ref.repo_id, path_in_repo="benchmarks", revision=ref.sha, repo_type=ref.repo_type)
        listed = {f.path.rpartition("/")[2]: listing_entry_hash(
            f.blob_id, getattr(f.lfs, "sha256", None), f.size) for f in tree if isinstance(f, RepoFile)}
    except Exception as exc:
        raise map_error(exc, ref.repo_id, ref.sha, ref.endpoint, "downloading benchmarks/") from exc
    return Path(snap), (blobs_folder(ref),), listed


def find_scripts(root: Path, link_roots: tuple[Path, ...] = (), listed: dict | None = None
                 ) -> dict[str, bytes]:
    """``benchmarks/benchmark*.py`` of ``root``, sorted: name -> source bytes, each read once
    with the loader's checks (regular file, no link out of ``root`` or ``link_roots``) and,
    given the Hub's ``listed`` hashes, equal to the published file.

    :raises BenchmarkError: no such folder, no script, or a script that cannot be used.
    """
    from kernel_plugins.errors import IntegrityError
    from kernel_plugins.integrity import read_small_file

    folder = root / "benchmarks"
    if folder.is_symlink() or not folder.is_dir():
        raise BenchmarkError(f"{root} has no benchmarks/ folder (a real folder, not a link) "
                             "with benchmark*.py scripts")
    out = {}
    for path in sorted(folder.glob("benchmark*.py")):
        if not path.is_file():  # a FIFO would block the read below
            raise BenchmarkError(f"benchmark script {path} is not a regular file")
        try:
            data = read_small_file(path, max_bytes=MAX_SCRIPT_BYTES, roots=(root, *link_roots))
        except IntegrityError as e:
            raise BenchmarkError(f"benchmark script {path}: {e}") from e
        if len(data) > MAX_SCRIPT_BYTES:
            raise BenchmarkError(f"benchmark script {path} is larger than {MAX_SCRIPT_BYTES} bytes")
        if listed is not None and not _matches(data, listed.get(path.name)):
            raise BenchmarkError(f"benchmark script {path} is not the file the Hub lists for this "
                                 "commit; delete the cached copy and run again")
        out[path.name] = data
    if not out:
        raise BenchmarkError(f"{folder} holds no benchmark*.py script")
    return out


def _matches(data: bytes, expected: Any) -> bool:
    """Whether ``data`` is the file a Hub listing entry (a FileHash) describes."""
    if expected is None:
        return False
    if expected.kind == "lfs":
        return hashlib.sha256(data).hexdigest() == expected.hex
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest() == expected.hex


@contextlib.contextmanager
def _kernels_names() -> Iterator[None]:
    """``import kernels`` / ``kernels.benchmark`` work while scripts are imported: the real
    package when installed, else kernel-plugins' compat module under those names."""
    import importlib.util

    if importlib.util.find_spec("kernels") is not None:
        yield
        return
    from kernel_plugins.compat import kernels as compat

    added = [n for n in ("kernels", "kernels.benchmark") if n not in sys.modules]
    sys.modules.update({n: compat for n in added})
    try:
        yield
    finally:
        for n in added:
            sys.modules.pop(n, None)


def _classes(name: str, source: bytes, root: Path) -> list[type]:
    """Import one script from its bytes (working directory: the repository, as kernels) and
    return the Benchmark subclasses it defines."""
    module = types.ModuleType(f"_kernel_plugins_benchmark_script_{name[:-3]}")
    module.__file__ = str(root / "benchmarks" / name)
    sys.modules[module.__name__] = module  # for dataclasses, while it runs
    old = os.getcwd()
    try:
        os.chdir(root)
        with _kernels_names():
            exec(compile(source, module.__file__, "exec"), module.__dict__)  # noqa: S102 - trusted as the kernel is
    except Exception as e:  # noqa: BLE001 - any failure of the script is its own
        raise BenchmarkError(f"benchmark script {name} failed to import: {type(e).__name__}: {e}") from e
    finally:
        os.chdir(old)
        sys.modules.pop(module.__name__, None)
    found = [obj for obj in vars(module).values() if isinstance(obj, type)
             and obj.__module__ == module.__name__
             and any(b.__name__ == "Benchmark" and f"{b.__module__}.".startswith(_BASE_MODULES)
                     for b in obj.__mro__[1:])]
    return sorted(found, key=lambda c: c.__name__)


def _run_workload(cls: type, method: str, kernel: Any, device: str, sync: Any, warmup: int,
                  iterations: int) -> Workload:
    import torch

    workload = method.removeprefix("benchmark_")
    name = f"{cls.__name__}.{workload}"
    try:
        bench = cls()
        bench.kernel, bench.device = kernel, device
        if bench.seed is not None:
            torch.manual_seed(bench.seed)
            random.seed(bench.seed)
        getattr(bench, f"setup_{workload}", bench.setup)()
        fn = getattr(bench, method)
        verify = getattr(bench, f"verify_{workload}", None)
        verified = ref_ms = None
        if verify is not None:
            fn()
            sync()
            for _ in range(warmup):
                verify()
                sync()
            start = time.perf_counter()
            expected = verify()
            sync()
            ref_ms = round((time.perf_counter() - start) * 1e3, 4)
            verified = bool(torch.allclose(bench.out, expected, atol=1e-2))
        for _ in range(warmup):
            fn()
            sync()
        times = []
        for _ in range(iterations):
            start = time.perf_counter()
            fn()
            sync()
            times.append((time.perf_counter() - start) * 1e3)
    except Exception as e:  # noqa: BLE001 - reported as this workload's failure
        return Workload(name, error=f"{type(e).__name__}: {e}")
    return Workload(name, tuple(times), verified, ref_ms)


def run_scripts(
    target: str, *, device: object = None, load_options: Mapping[str, Any] | None = None,
    warmup: int = 10, iterations: int = 100,
) -> ScriptsReport:
    """Load ``target`` and run its ``benchmarks/benchmark*.py`` classes (see the module docs).

    :param load_options: keyword arguments for :func:`kernel_plugins.load` (``revision``,
        ``version``, ``trust_remote_code``...); no reference kernel stands in.
    :raises BenchmarkError: no scripts, a script that does not import or defines no class.
    """
    from kernel_plugins.detection import get_device
    from kernel_plugins.loader import load
    from kernel_plugins.plugins import get_manager

    if warmup < 0 or iterations < 1:
        raise BenchmarkError(f"need warmup >= 0 and iterations >= 1, got {warmup}, {iterations}")
    module = load(target, device=device, **{**dict(load_options or {}), "fallback": "error"})
    prov = module.__kernel_provenance__
    info = get_device(prov.backend if device is None else device)
    root, link_roots, listed = _scripts_root(module, target)
    scripts = find_scripts(root, link_roots, listed)
    manager = get_manager()
    report = ScriptsReport(
        kernel=prov.to_dict(),
        device={"torch_device": info.torch_device, "backend": info.backend,
                "device_type": info.device_type, "emulated": bool(info.emulated),
                "summary": info.summary()},
        scripts=list(scripts), script_sha=hashlib.sha256(b"".join(scripts.values())).hexdigest())
    for name, source in scripts.items():
        classes = _classes(name, source, root)
        if not classes:
            raise BenchmarkError(f"benchmark script {name} defines no subclass of "
                                 "kernels.benchmark.Benchmark")
        for cls in classes:
            methods = sorted(m for m in dir(cls) if m.startswith("benchmark_")
                             and callable(getattr(cls, m)))
            if not methods:
                raise BenchmarkError(f"{name}: {cls.__name__} has no benchmark_* method")
            for method in methods:
                report.workloads.append(_run_workload(
                    cls, method, module, info.torch_device, lambda: manager.synchronize(info),
                    warmup, iterations))
    return report
