"""Check a kernel repository on the Hub: download it into the cache, then check that folder.

Every build variant and ``build.toml`` are fetched (this can be large); a variant folder
whose name the Hub source refuses is reported as a problem rather than raised.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kernel_plugins.errors import HubError, SourceError

from ._local import check_path
from ._report import _RENAME_FIX, CheckReport, Problem


def check_hub(
    repo_id: str, *, revision: str | None = None, version: int | None = None
) -> CheckReport:
    """Check a kernel repository on the Hub (every variant is downloaded into the cache).

    :raises SourceError: bad repo id / revision / version, or the repo cannot be fetched.
    """
    from kernel_plugins import hub

    ref = hub.resolve(repo_id, revision=revision, version=version)
    names = hub.list_variant_names(ref)
    problems: list[Problem] = []
    folders: dict[str, Path] = {}
    for name in names:
        try:
            folders[name] = hub.download_variant(ref, name, progress=False)
        except SourceError as e:
            if isinstance(e, HubError):
                raise
            problems.append(Problem(f"build/{name}", "", str(e), _RENAME_FIX))
    toml_path = _fetch_build_toml(ref)
    snapshot = (
        next(iter(folders.values())).parent.parent if folders
        else (toml_path.parent if toml_path else None)
    )
    label = f"{ref.repo_id}@{ref.sha}"
    if snapshot is None:
        raise SourceError(f"{label} has neither build.toml nor a usable build/ variant folder")
    report = check_path(snapshot, link_root=snapshot.parent.parent, label=label)
    return CheckReport(
        label, report.root, tuple(problems) + report.problems, report.notes, report.variants
    )


def _fetch_build_toml(ref: Any) -> Path | None:
    """Download ``build.toml`` of ``ref`` when the repository has one."""
    from huggingface_hub import hf_hub_download

    from kernel_plugins.errors import HubError
    from kernel_plugins.hub import cache_dir

    try:
        return Path(
            hf_hub_download(
                ref.repo_id, "build.toml", repo_type=ref.repo_type, revision=ref.sha,
                endpoint=ref.endpoint, cache_dir=cache_dir(),
            )
        )
    except Exception as e:  # noqa: BLE001 - "not there" is normal; the rest is mapped
        names = {c.__name__ for c in type(e).__mro__}
        if names & {"EntryNotFoundError", "RemoteEntryNotFoundError", "LocalEntryNotFoundError",
                    "OfflineModeIsEnabled"}:
            return None
        raise HubError(
            f"could not fetch build.toml of {ref.repo_id} at {ref.sha}: {type(e).__name__}: {e}"
        ) from e
