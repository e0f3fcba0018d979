"""Validate a whole ``build.toml``: every issue at once, or one error listing them.

:func:`validate_build_data` runs the edition checks, the ``[general.<backend>]`` models,
the cross-table rules and the models of the whole file, and returns every issue (for
``kernel-plugins check``). :func:`parse_build_toml` and :func:`read_build_toml` decode
text or a file first and raise one :class:`~kernel_plugins.errors.BuildConfigError`
listing the issues.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from pydantic import ValidationError

from kernel_plugins.errors import BuildConfigError

from ._editions import _edition_issues, _legacy_shape
from ._issues import _allowed_keys, _issue_from_error
from ._models import (
    _BACKEND_GENERAL_MODELS,
    CURRENT_EDITION,
    BackendGeneral,
    BuildConfig,
    BuildConfigIssue,
    BuildToml,
    General,
    canonical_backend,
    known_backends,
)
from ._rules import _semantic_issues
from ._toml import MAX_BUILD_TOML_BYTES, loads_toml


def validate_build_data(
    data: object, *, where: str = "build.toml", known: Mapping[str, str] | None = None
) -> tuple[BuildToml | None, list[BuildConfigIssue]]:
    """Validate decoded build.toml data; never raises for bad data.

    :param data: what :func:`loads_toml` returned.
    :param where: how to name the file in notes.
    :param known: backend name -> origin (default: :func:`known_backends`).
    :return: the :class:`BuildToml` (None when there is any issue) and every issue found.
    """
    if not isinstance(data, Mapping):
        return None, [BuildConfigIssue(
            "", f"expected a TOML document (a table), got {type(data).__name__}",
            "start the file with a [general] table",
        )]
    known = known_backends() if known is None else known
    edition, issues = _edition_issues(data)
    rest = dict(data)
    backend_tables: dict[str, BackendGeneral] = {}
    general = data.get("general")
    if isinstance(general, Mapping):
        general = dict(general)
        declared_keys = set(_allowed_keys(General))
        for key in [k for k in general if k not in declared_keys and k in known]:
            table = general.pop(key)
            model = _BACKEND_GENERAL_MODELS.get(canonical_backend(key), BackendGeneral)
            try:
                backend_tables[key] = model.model_validate(table)
            except ValidationError as e:
                issues += [_issue_from_error(err, ("general", key)) for err in e.errors()]
        rest["general"] = general
    issues += _semantic_issues(data, known)
    config: BuildConfig | None = None
    try:
        config = BuildConfig.model_validate(rest)
    except ValidationError as e:
        located = {i.key for i in issues}  # a specific issue beats the generic type error
        issues += [i for i in map(_issue_from_error, e.errors()) if i.key not in located]
    except RecursionError:
        issues.append(BuildConfigIssue("", "values are nested too deeply", "flatten the file"))
    unique = sorted(dict.fromkeys(issues), key=lambda i: i.key)
    if unique or config is None:
        return None, unique
    shape = f"edition {edition}" if edition is not None else _legacy_shape(data)
    notes: tuple[str, ...] = ()
    if edition is None:
        notes = (
            f"{where} uses the legacy build.toml format without an edition ({shape} shape); it "
            f"is still read, but kernel builders now write edition {CURRENT_EDITION}: add "
            f"edition = {CURRENT_EDITION} to [general] when you migrate (edition "
            f"{CURRENT_EDITION} also requires version and license)",
        )
    return BuildToml(config, edition, shape, backend_tables, notes, where), []


def _raise(where: str, issues: list[BuildConfigIssue]) -> BuildConfigError:
    listed = "; ".join(i.describe() for i in issues[:20])
    more = f" (and {len(issues) - 20} more)" if len(issues) > 20 else ""
    return BuildConfigError(f"{where}: invalid build.toml: {listed}{more}")


def parse_build_toml(
    text: bytes | str, *, where: str = "build.toml", known: Mapping[str, str] | None = None
) -> BuildToml:
    """Decode and validate build.toml text.

    :raises BuildConfigError: malformed TOML or any issue (all of them are listed).
    """
    data = loads_toml(text, where=where)
    config, issues = validate_build_data(data, where=where, known=known)
    if config is None:
        raise _raise(where, issues)
    return config


def read_build_toml(path: Path, *, known: Mapping[str, str] | None = None) -> BuildToml:
    """Read and validate a ``build.toml`` file (or the one in a repository folder).

    :raises BuildConfigError: missing, too large, not UTF-8, malformed or invalid.
    """
    path = Path(path)
    if path.is_dir():
        path = path / "build.toml"
    if not path.is_file():
        raise BuildConfigError(
            f"{path}: missing; a kernel source repository has a build.toml at its top level"
        )
    size = path.stat().st_size
    if size > MAX_BUILD_TOML_BYTES:
        raise BuildConfigError(
            f"{path}: {size} bytes, larger than the {MAX_BUILD_TOML_BYTES} allowed for a "
            "build.toml; is this the right file?"
        )
    return parse_build_toml(path.read_bytes(), where=str(path), known=known)
