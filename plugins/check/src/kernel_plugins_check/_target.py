""":func:`check`: decide what a target names (a folder, an override, a Hub repo) and check it."""

from __future__ import annotations

from pathlib import Path

from kernel_plugins.errors import SourceError

from ._hub import check_hub
from ._local import check_path
from ._report import CheckReport


def check(
    target: str | Path, *, revision: str | None = None, version: int | None = None
) -> CheckReport:
    """Check a kernel repository: a local folder, or a Hub repo id.

    The target means what it means to ``load`` (:func:`kernel_plugins.sources.find`): a
    folder, a ``LOCAL_KERNELS`` override of a repo id (checked instead of the Hub repo, with
    a note), or a Hub repository (``org/name``, a short name, ``hub:org/name``); a repo id
    that is also a folder here is refused as ambiguous.

    :raises SourceError: the path does not exist or is not a folder, the name is ambiguous,
        or the Hub repo cannot be resolved (see :func:`kernel_plugins.hub.resolve`).
    """
    from kernel_plugins.sources import find, parse_name

    if isinstance(target, Path) or parse_name(target).path is not None:
        if revision is not None or version is not None:
            raise SourceError(
                f"{target} is a local folder; --revision / --version apply only to Hub repos"
            )
    from kernel_plugins.detection import get_device

    source = find(target, device=get_device(None), revision=revision, version=version)
    if source.kind == "local":
        assert source.path is not None
        return check_path(source.path)
    if source.kind in ("local-kernels", "plugin"):
        assert source.path is not None
        what = "LOCAL_KERNELS override" if source.kind == "local-kernels" else "copy a backend plugin ships"
        report = check_path(source.path)
        return CheckReport(
            report.target, report.root, report.problems,
            (f"checked the {what} of {source.label}: {source.path}", *report.notes),
            report.variants,
        )
    assert source.repo_id is not None
    return check_hub(source.repo_id, revision=revision, version=version)
