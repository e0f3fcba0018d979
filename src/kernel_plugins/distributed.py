"""Loading the same kernel on every rank of a ``torch.distributed`` job (any backend).

With a process group initialised, a Hub load resolves the revision on global rank 0 only and broadcasts the answer
(every rank imports the same build even when a branch moves), then fetches on one process per cache folder while the
others wait in the same collective and then verify on their own; an error on the rank that did the work is raised on
every rank. Ranks share a cache folder when they see the mark that one of them leaves there (a file under
``.locks``, once per job): on a filesystem shared by every node (NFS, Lustre) one rank downloads for the whole job,
else one per node (``LOCAL_RANK == 0``, else the lowest rank of each host). Every rank must make the same loads in
the same order; ``KERNEL_PLUGINS_DISTRIBUTED=0`` makes each process load on its own. With NCCL, set each rank's CUDA
device first, as object collectives require.
"""

from __future__ import annotations

import os
import pickle
import secrets
import socket
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from .errors import KernelPluginsError

__all__ = ["DISABLE_ENV", "is_active", "share_from_rank0", "once_per_node", "is_node_leader", "is_folder_leader"]

#: ``KERNEL_PLUGINS_DISTRIBUTED=0`` turns the coordination off.
DISABLE_ENV = "KERNEL_PLUGINS_DISTRIBUTED"

_T = TypeVar("_T")


def _dist() -> Any:
    """``torch.distributed`` when it is already imported, else None (never imports torch)."""
    return sys.modules.get("torch.distributed")


def is_active() -> bool:
    """Whether loads are coordinated: a process group of more than one rank is initialised
    (torch is not imported) and ``KERNEL_PLUGINS_DISTRIBUTED`` is not ``0``/``false``/``no``/``off``."""
    if os.environ.get(DISABLE_ENV, "").strip().lower() in ("0", "false", "no", "off"):
        return False
    if (dist := _dist()) is None:
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
    """Run ``compute`` on global rank 0 (without an active group: here) and return its result on
    every rank. :raises: the exception rank 0 raised, on every rank (``what`` names the value)."""
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
    """Whether this process downloads for its node (without an active group: yes). Without
    ``LOCAL_RANK`` this is a collective: every rank must call it together."""
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


_sharing: dict[tuple[str, int, int], bool] = {}  # (folder, rank, world size) -> fetches for it


def is_folder_leader(folder: Path) -> bool:
    """Whether this process fetches into ``folder`` for every rank that sees the same folder
    (without an active group: yes). A collective, answered once per folder: each node leader
    leaves a uniquely named mark in ``folder/.locks``; a rank's leader is the lowest rank whose
    mark it sees there (its own node's, at worst)."""
    if not is_active():
        return True
    dist = _dist()
    key = (str(folder), dist.get_rank(), dist.get_world_size())
    if key not in _sharing:
        locks = folder / ".locks"
        mark = f"kernel-plugins-rank-{secrets.token_hex(8)}" if is_node_leader() else None
        try:
            if mark is not None:
                locks.mkdir(parents=True, exist_ok=True)
                (locks / mark).touch(exist_ok=False)
        except OSError:  # cannot mark the folder: fetch for this rank alone
            mark = None
        marks: list[Any] = [None] * dist.get_world_size()
        dist.all_gather_object(marks, mark)
        seen = [r for r, name in enumerate(marks) if name is not None and (locks / name).exists()]
        dist.all_gather_object([None] * dist.get_world_size(), None)  # everyone looked: the marks can go
        if mark is not None:
            (locks / mark).unlink(missing_ok=True)
        _sharing[key] = min(seen, default=dist.get_rank()) == dist.get_rank()
    return _sharing[key]


def once_per_node(work: Callable[[], _T], *, what: str = "the download", folder: Path | None = None) -> _T:
    """Run ``work`` on one process per node (with ``folder``: per group of ranks that see the
    same folder, see :func:`is_folder_leader`) while the others wait in an ``all_gather_object``
    sharing each leader's outcome, then on the others (which find the files cached); if a
    leader failed, every rank raises its error. No active group: ``work()``."""
    if not is_active():
        return work()
    dist = _dist()
    leader = is_node_leader() if folder is None else is_folder_leader(folder)
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
    if failed := [(rank, err) for rank, err in enumerate(outcomes) if err is not None]:
        rank, err = failed[0]
        raise err from KernelPluginsError(f"rank {rank} failed during {what}")
    return result if leader else work()
