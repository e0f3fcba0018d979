""":func:`check`: decide what a target names (a folder, an override, a Hub repo) and check it."""

from __future__ import annotations

from pathlib import Path

from ..errors import SourceError
from ._hub import check_hub
from ._local import check_path
from ._report import CheckReport


def check(
    target: str | Path, *, revision: str | None = None, version: int | None = None
) -> CheckReport:
    """Check a kernel repository: a local folder, or a Hub repo id.

    An existing local path is always read as a folder. Anything else goes through
    :func:`kernel_plugins.sources.classify` (``org/name``, or a short name in the default
    organisation); a ``LOCAL_KERNELS`` override of that repo id is checked instead of the
    Hub repo, with a note.

    :raises SourceError: the path does not exist or is not a folder, or the Hub repo
        cannot be resolved (see :func:`kernel_plugins.hub.resolve`).
    """
    if isinstance(target, Path) or Path(str(target)).expanduser().exists():
        if revision is not None or version is not None:
            raise SourceError(
                f"{target} is a local folder; --revision / --version apply only to Hub repos"
            )
        return check_path(Path(target))
    from ..sources import classify, parse_local_kernels

    t = classify(target)
    if t.kind == "path":
        assert t.path is not None
        return check_path(t.path)
    assert t.repo_id is not None
    override = parse_local_kernels().get(t.repo_id)
    if override is not None:
        report = check_path(override)
        return CheckReport(
            report.target, report.root, report.problems,
            (f"checked the LOCAL_KERNELS override of {t.repo_id}: {override}", *report.notes),
            report.variants,
        )
    return check_hub(t.repo_id, revision=revision, version=version)
