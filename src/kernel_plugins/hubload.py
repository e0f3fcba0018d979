"""Loading from a Hub repository: pin the revision, list, resolve, fetch one variant."""

from __future__ import annotations

from types import ModuleType
from typing import TYPE_CHECKING, Any

from .device import DeviceInfo, SystemInfo
from .errors import SourceError
from .variants import validate_variant_name

if TYPE_CHECKING:
    from .loader import Candidate

__all__ = ["load_from_hub"]


def load_from_hub(
    repo_id: str,
    info: DeviceInfo,
    system: SystemInfo,
    candidates: list[Candidate],
    *,
    revision: str | None = None,
    version: int | None = None,
    lockfile: Any = None,
    trust_remote_code: bool = False,
    repo_type: str | None = None,
) -> ModuleType:
    """Load ``repo_id`` from the Hub (or its cache) for ``info``."""
    from . import hub
    from .loader import Candidate, _resolve_candidate, import_resolved

    if lockfile is not None:
        raise SourceError("lock files are not supported yet")
    ref = hub.resolve(repo_id, revision=revision, version=version, repo_type=repo_type)  # type: ignore[arg-type]
    cand = Candidate("hub", f"{repo_id} at {ref.sha[:12]}" + (f" ({ref.requested})" if ref.requested else ""))
    cand.hub_ref = ref
    candidates.append(cand)
    names = hub.list_variant_names(ref)
    from pathlib import Path

    cand.variants = {n: Path("build") / n for n in names}
    best = _resolve_candidate(cand, info, system)
    validate_variant_name(best)
    path = hub.cached_variant_path(ref, best) or hub.download_variant(ref, best)
    return import_resolved(
        repo_id=repo_id,
        variant=best,
        path=path,
        source="hub",
        device=info,
        revision=ref.requested,
        sha=ref.sha,
    )
