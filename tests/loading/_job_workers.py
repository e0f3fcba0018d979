"""Code run by the ranks of the one-download-per-job test (kept free of pytest, so ranks start fast)."""

from __future__ import annotations

import json
import os
from pathlib import Path


def job_rank(rank: int, world: int, init_file: str, loads: list[tuple[str, list[str]]], out: str) -> None:
    """One gloo rank on a simulated node of two (``LOCAL_RANK`` 0 or 1): load each repository
    of ``loads`` with this rank's cache folder (``KERNELS_CACHE``); write what it imported."""
    os.environ["LOCAL_RANK"] = str(rank % 2)
    import torch.distributed as dist

    import kernel_plugins

    dist.init_process_group("gloo", init_method=f"file://{init_file}", rank=rank, world_size=world)
    try:
        values = []
        for repo_id, caches in loads:
            os.environ["KERNELS_CACHE"] = caches[rank]
            module = kernel_plugins.load(repo_id, version=1, device="cpu")
            values.append([module.VALUE, module.__kernel_provenance__.path])
        (Path(out) / f"rank{rank}.json").write_text(json.dumps(values))
        dist.barrier()
    finally:
        dist.destroy_process_group()
