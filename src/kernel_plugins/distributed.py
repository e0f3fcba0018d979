"""Loading the same kernel on every rank of a ``torch.distributed`` job.

When a process group is initialised (any backend; gloo works on CPU), a Hub load

1. resolves the revision on global rank 0 only and shares the answer (the commit sha and
   variant list) with :func:`torch.distributed.broadcast_object_list`, so every rank imports
   the same build even when a branch moves while the job starts;
2. fetches the files on one process per node (``LOCAL_RANK == 0`` when the launcher sets
   it, as ``torchrun`` does; else the lowest rank on each host, learned with
   :func:`torch.distributed.all_gather_object`) while the others wait in the same
   collective, then every rank checks and imports from the cache.

Nothing else coordinates the processes: no server, no files besides huggingface_hub's own
locks. Every rank must make the same loads in the same order (as with any collective).
Set ``KERNEL_PLUGINS_DISTRIBUTED=0`` to make each process load on its own, e.g. when
ranks load different kernels. With NCCL, set the CUDA device of each rank first
(``torch.cuda.set_device``), as object collectives require.

An error on the rank that did the work is raised on every rank (the same exception when
it can be pickled), so ranks never disagree about whether a load failed.
"""

from __future__ import annotations

import os
import pickle
import socket
import sys
from collections.abc import Callable
from typing import Any, TypeVar

from .errors import KernelPluginsError

__all__ = ["DISABLE_ENV", "is_active", "share_from_rank0", "once_per_node", "is_node_leader"]

#: ``KERNEL_PLUGINS_DISTRIBUTED=0`` turns the coordination off.
DISABLE_ENV = "KERNEL_PLUGINS_DISTRIBUTED"

_T = TypeVar("_T")


def _dist() -> Any:
    """``torch.distributed`` when it is already imported, else None (never imports torch)."""
    return sys.modules.get("torch.distributed")


def is_active() -> bool:
    """Whether loads are coordinated: a process group of more than one rank is initialised.

    Reads ``KERNEL_PLUGINS_DISTRIBUTED`` (``0``/``false``/``no``/``off`` disable). torch is
    not imported here: a job that initialised a group has imported it already.
    """
    if os.environ.get(DISABLE_ENV, "").strip().lower() in ("0", "false", "no", "off"):
        return False
    dist = _dist()
    if dist is None:
        return False
    try:
        return bool(dist.is_available() and dist.is_initialized() and dist.get_world_size() > 1)
    except (RuntimeError, ValueError):  # pragma: no cover - a group being torn down
        return False


def _portable(exc: BaseException) -> BaseException:
    """``exc`` when it survives pickling, else a KernelPluginsError with its message."""
    try:
        clone = pickle.loads(pickle.dumps(exc))
    except Exception:
        return KernelPluginsError(f"{type(exc).__name__}: {exc}")
    return clone if isinstance(clone, BaseException) else exc


def share_from_rank0(compute: Callable[[], _T], *, what: str = "a value") -> _T:
    """Run ``compute`` on global rank 0 and return its result on every rank.

    Without an active process group this is just ``compute()``.

    :param what: a description for error messages.
    :raises: the exception rank 0 raised, on every rank.
    """
    if not is_active():
        return compute()
    dist = _dist()
    box: list[Any] = [None]
    if dist.get_rank() == 0:
        try:
            box[0] = ("ok", compute())
        except Exception as exc:  # shared so other ranks do not wait forever
            box[0] = ("error", _portable(exc))
    dist.broadcast_object_list(box, src=0)
    status, value = box[0]
    if status == "error":
        if dist.get_rank() == 0:
            raise value
        raise value from KernelPluginsError(f"rank 0 failed while resolving {what}")
    return value  # type: ignore[no-any-return]


def is_node_leader() -> bool:
    """Whether this process downloads for its node (see the module docs).

    Without an active process group every process is its own leader. Uses ``LOCAL_RANK``
    when set (the launcher sets it on every rank); otherwise a collective: every rank must
    call this together.
    """
    if not is_active():
        return True
    local = os.environ.get("LOCAL_RANK", "").strip()
    if local.isdigit():
        return int(local) == 0
    dist = _dist()
    hosts: list[Any] = [None] * dist.get_world_size()
    dist.all_gather_object(hosts, socket.gethostname())
    me = dist.get_rank()
    return min(r for r, host in enumerate(hosts) if host == hosts[me]) == me


def once_per_node(work: Callable[[], _T], *, what: str = "the download") -> _T:
    """Run ``work`` on one process per node first, then on the others.

    The leaders run ``work`` (e.g. download and check a variant) while the other ranks
    wait in an ``all_gather_object`` that also shares whether each leader succeeded; then
    the other ranks run ``work`` themselves, which finds the files in the cache. If any
    leader failed, every rank raises that error. Without an active group: ``work()``.
    """
    if not is_active():
        return work()
    dist = _dist()
    leader = is_node_leader()
    result: Any = None
    error: BaseException | None = None
    if leader:
        try:
            result = work()
        except Exception as exc:
            error = exc
    outcomes: list[Any] = [None] * dist.get_world_size()
    dist.all_gather_object(outcomes, None if error is None else _portable(error))
    if error is not None:
        raise error
    failed = [(rank, err) for rank, err in enumerate(outcomes) if err is not None]
    if failed:
        rank, err = failed[0]
        raise err from KernelPluginsError(f"rank {rank} failed during {what}")
    return result if leader else work()
