"""Code run in child processes by the concurrency and distributed tests.

Kept free of pytest and of the test modules, so children start fast.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path


def _wait_for(path: Path, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists():
        if time.monotonic() > deadline:
            raise TimeoutError(f"{path} did not appear within {timeout} s")
        time.sleep(0.005)


def fetch_and_import(repo_id: str, ready: str, go: str) -> None:
    """Resolve version 1, download + verify + import ``torch-cpu``; print a JSON report.

    Signals readiness by creating ``ready``, then waits for ``go`` so that every child hits
    the empty cache at the same moment. torch is not imported (the loader's device
    detection would import it): this exercises the fetch -> verify -> import path.
    """
    from kernel_plugins import hub
    from kernel_plugins.fetching import commit_offer
    from kernel_plugins.importer import import_snapshot
    from kernel_plugins.provenance import KernelLoad
    from kernel_plugins.registry import module_name
    from kernel_plugins.verification import fetch_checked, verify

    Path(ready).touch()
    _wait_for(Path(go))
    ref = hub.resolve(repo_id, version=1)
    verified = verify(fetch_checked(commit_offer(ref, ["torch-cpu"]), "torch-cpu", progress=False))
    meta = verified.metadata
    load = KernelLoad(repo_id, "torch-cpu", verified.fetched.path, meta, module_name(meta.id))
    module = import_snapshot(load, verified.snapshot)
    report = {
        "sha": ref.sha,
        "value": module.VALUE,
        "data_size": module.DATA_SIZE,
        "helper": module.HELPER,
        "torch": "torch" in sys.modules,
    }
    print(json.dumps(report), flush=True)


def distributed_rank(
    rank: int, world: int, init_file: str, repo_id: str, mirror: str, new_sha: str, out: str
) -> None:
    """One gloo rank of the distributed test (started by ``torch.multiprocessing.spawn``).

    Rank 0's resolution moves branch ``v1`` of the served git repository to ``new_sha``
    right after it resolved, then tells the others; a rank that resolves on its own waits
    for that, so it would see the moved branch.
    """
    import torch.distributed as dist

    import kernel_plugins
    from kernel_plugins import hub
    from tests.support.hub import GitRepo

    dist.init_process_group("gloo", init_method=f"file://{init_file}", rank=rank, world_size=world)
    moved = Path(out) / "moved"
    real_resolve = hub.resolve
    calls: list[str] = []

    def resolve(*args: object, **kwargs: object) -> object:
        calls.append(f"{args} {kwargs}")
        if rank != 0:
            _wait_for(moved, timeout=30)
            return real_resolve(*args, **kwargs)
        ref = real_resolve(*args, **kwargs)
        GitRepo(Path(mirror), repo_id, "kernel").branch("v1", new_sha)
        moved.touch()
        return ref

    hub.resolve = resolve  # type: ignore[assignment]
    try:
        module = kernel_plugins.load(repo_id, version=1, device="cpu")
        report: dict[str, object] = {
            "rank": rank,
            "sha": module.__kernel_provenance__.sha,
            "value": module.VALUE,
            "resolve_calls": len(calls),
        }
        try:
            kernel_plugins.load(f"{repo_id}-missing", version=1, device="cpu", fallback="error")
        except Exception as exc:  # every rank must fail, with rank 0's error
            report["missing_error"] = type(exc).__name__
        report["calls_after_missing"] = len(calls)
        (Path(out) / f"rank{rank}.json").write_text(json.dumps(report))
        dist.barrier()
    finally:
        hub.resolve = real_resolve  # type: ignore[assignment]
        dist.destroy_process_group()


if __name__ == "__main__":  # python -m tests.lock._workers REPO READY GO
    fetch_and_import(*sys.argv[1:4])
    os._exit(0)
