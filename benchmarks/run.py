"""Run the benchmark suite: kernel-plugins against the ``kernels`` package, same inputs, same run.

Usage (from the repository root)::

    python benchmarks/run.py            # full: creates the environments, 5 runs per figure
    python benchmarks/run.py --quick    # CI: 1 run, this interpreter, kernels only if present

Writes ``<date>.json``, ``<date>.md`` and (with matplotlib) ``<date>.png`` to
``benchmarks/results/`` (quick mode: ``benchmarks/.work/results-quick/``) and prints the
table. Never fails because of a timing: the exit status is 1 only when a measurement could
not be made at all. See ``benchmarks/README.md``.
"""

from __future__ import annotations

import argparse
import datetime
import importlib.util
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import traceback
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from harness import envs, figures, inputs, report  # noqa: E402


def _say(message: str) -> None:
    print(f"[bench] {message}", file=sys.stderr, flush=True)


def _parse(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="benchmarks/run.py", description=__doc__.split("\n\n")[0])
    p.add_argument(
        "--quick",
        action="store_true",
        help="CI mode: 1 run, this interpreter for kernel-plugins, no environment "
        "creation; kernels and the Hub figures only when already available",
    )
    p.add_argument("--runs", type=int, help="runs per figure (default: 5, quick: 1)")
    p.add_argument("--out", type=Path, help="results folder")
    p.add_argument("--no-kernels", action="store_true", help="measure kernel-plugins only")
    p.add_argument(
        "--profile",
        action="store_true",
        help="also run the kernel-plugins side of load, kernelize and resolution "
        "under cProfile (reports next to the results)",
    )
    p.add_argument(
        "--only", help="comma-separated measurements: import, local, inproc, loads, list-backends, large"
    )
    p.add_argument("--large-mb", type=int,
                   help="size of the native extension of the large-kernel figures (MB; default 400, quick: 8)")
    return p.parse_args(argv)


def _olah_ready(quick: bool) -> bool:
    sys.path.insert(0, str(envs.REPO_ROOT))
    from tests.support.hub import olah_cli

    if olah_cli() is not None:
        return True
    if quick:
        return False
    _say("installing olah (scripts/install-olah.sh)")
    subprocess.run(["bash", str(envs.REPO_ROOT / "scripts" / "install-olah.sh")], check=False)
    return olah_cli() is not None


def _environment(ctx: figures.Context) -> dict[str, object]:
    def torch_version(python: Path) -> str:
        code = "import torch; print(torch.__version__)"
        done = subprocess.run(
            [str(python), "-c", code], capture_output=True, text=True, check=False
        )
        return done.stdout.strip()

    lines = ("import pathlib, kernel_plugins; print(sum(p.read_bytes().count(b'\\n') for p in "
             "pathlib.Path(kernel_plugins.__file__).parent.rglob('*.py')))")
    return {
        "kernel_plugins_python_lines": int(subprocess.run(
            [str(ctx.kp.python), "-c", lines], capture_output=True, text=True, check=True).stdout),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "torch": torch_version(ctx.kp.python),
        "kernel_plugins": ctx.kp.version,
        "kernels": ctx.kn.version if ctx.kn else None,
        "kernel_plugins_env": ctx.kp.where,
        "kernels_env": ctx.kn.where if ctx.kn else None,
    }


def main(argv: list[str] | None = None) -> int:
    """Run the suite; return the exit status."""
    args = _parse(argv)
    runs = args.runs or (1 if args.quick else 5)
    out_dir = args.out or (
        envs.WORK / "results-quick" if args.quick else envs.REPO_ROOT / "benchmarks" / "results"
    )
    only = {s.strip() for s in args.only.split(",")} if args.only else None
    notes: list[str] = []
    if args.quick:
        kp, kn = envs.find_envs(current_for_kernel_plugins=True)
        if importlib.util.find_spec("kernel_plugins_testing") is not None:
            figures.FORK_PROBES = True
            notes.append("quick mode: the probes were forked from an interpreter that had imported "
                         "torch (torch import times are not measured)")
        if kn is None and not args.no_kernels:
            notes.append(
                f"kernels {envs.KERNELS_PIN} not compared: its environment "
                f"({envs.WORK / 'venv-kernels'}) does not exist; run the full suite"
            )
    else:
        kp, kn = envs.ensure_envs(_say)
    assert kp is not None
    if args.no_kernels:
        kn = None
    work = Path(tempfile.mkdtemp(prefix="bench-", dir=_scratch()))
    repo = inputs.write_local_repo(work / "local-repo")
    names_file = work / "variant-names.json"
    names = inputs.many_variant_names(500)
    names_file.write_text(json.dumps(names))
    names_file.with_name("variant-archs.json").write_text(json.dumps({  # read by the probe
        "cpu": inputs.variant_archs(names), "cuda": inputs.variant_archs(names, refuse_stable_abi=True)}))
    ctx = figures.Context(
        kp=kp,
        kn=kn,
        runs=runs,
        quick=args.quick,
        work=work,
        repo_path=repo,
        names_file=names_file,
        say=_say,
        profile_dir=(out_dir / f"{_today()}-profiles") if args.profile else None,
        large_mb=args.large_mb,
        kernels_beside=not args.no_kernels,  # large figures: kernels in this interpreter when no env was made
    )
    results: list[dict[str, object]] = []
    skipped: list[dict[str, str]] = []
    failed = False
    keys = {
        "import": "import",
        "first local load": "local",
        "in-process": "inproc",
        "loads": "loads",
        "list-backends": "list-backends",
        "large kernel": "large",
    }
    try:
        for name, measure, needs_hub in figures.MEASURES:
            key = next(v for k, v in keys.items() if name.startswith(k))
            if only is not None and key not in only:
                continue
            if needs_hub and ctx.hub is None:
                if not _olah_ready(args.quick):
                    skipped.append(
                        {"name": name, "reason": "olah is not installed (scripts/install-olah.sh)"}
                    )
                    continue
                _say("starting olah on loopback with the benchmark repository")
                figures.start_hub(ctx)
            _say(f"measuring {name} ({runs} run(s))")
            try:
                results.extend(measure(ctx))
            except Exception as e:  # noqa: BLE001 - reported, the others still run
                failed = True
                traceback.print_exc()
                skipped.append({"name": name, "reason": f"failed: {type(e).__name__}: {e}"})
    finally:
        if ctx.hub is not None:
            ctx.hub.close()
        shutil.rmtree(work, ignore_errors=True)
    data = {
        "schema": report.SCHEMA,
        "date": _today(),
        "mode": "quick" if args.quick else "full",
        "runs": runs,
        "environment": _environment(ctx),
        "inputs": {
            "repo_id": inputs.REPO_ID,
            "variants": len(inputs.variant_names()),
            "commit": ctx.sha,
            "variant_names_resolved": 500,
            "marked_layers": 1000,
        },
        "figures": results,
        "skipped": skipped,
        "notes": notes,
    }
    notes.extend(ctx.notes)
    if ctx.profile_dir is not None:
        notes.append(f"cProfile reports of the kernel-plugins side: {ctx.profile_dir}")
    plot = envs.plot_python(create=not args.quick, say=_say)
    written = report.write_results(data, out_dir, plot)
    print(report.text_table(data))
    for s in skipped:
        print(f"skipped {s['name']}: {s['reason']}")
    for n in data["notes"]:
        print(f"note: {n}")
    print("written: " + ", ".join(str(p) for p in written))
    return 1 if failed else 0


def _today() -> str:
    return datetime.date.today().isoformat()


def _scratch() -> Path:
    envs.WORK.mkdir(parents=True, exist_ok=True)
    return envs.WORK


if __name__ == "__main__":
    sys.exit(main())
