"""The ranks of a distributed test (``torch.multiprocessing``), forked from multiprocessing's
forkserver of this process, which imports torch once: a spawned rank imports it again (about
3 s of CPU each). Each rank runs in this process's environment and working directory at the
time of the call (a forked rank would otherwise get the forkserver's, from when it started)."""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Callable
from typing import Any


def run_ranks(fn: Callable[..., None], args: tuple[Any, ...], nprocs: int) -> None:
    """``torch.multiprocessing.spawn(fn, args, nprocs, join=True)``, with forked ranks."""
    import torch.multiprocessing as mp

    multiprocessing.set_forkserver_preload(["torch"])  # read when the forkserver starts
    mp.start_processes(_rank, args=(dict(os.environ), os.getcwd(), fn, *args), nprocs=nprocs,
                       join=True, start_method="forkserver")


def _rank(rank: int, env: dict[str, str], cwd: str, fn: Callable[..., None], *args: Any) -> None:
    os.environ.clear()
    os.environ.update(env)
    os.chdir(cwd)
    fn(rank, *args)
