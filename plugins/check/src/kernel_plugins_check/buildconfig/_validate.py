"""Validate a whole ``build.toml``: every issue at once, or one error listing them.

:func:`validate_build_data` runs the edition checks (edition 6 has its own models), the tables of kernel-plugins backends
that kernel-builder does not know, the cross-table rules and the models of the whole file,
and returns every issue (for ``kernel-plugins check``). :func:`parse_build_toml` and
:func:`read_build_toml` decode text or a file first and raise one
:class:`~kernel_plugins.errors.BuildConfigError` listing the issues.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from pydantic import ValidationError

from kernel_plugins.errors import BuildConfigError

from ._editions import _edition_issues
from ._issues import _issue_from_error
from ._models import (
    CURRENT_EDITION,
    BackendGeneral,
    BuildConfig,
    BuildConfig6,
    BuildConfigIssue,
    BuildToml,
    TpuGeneral,
    known_backends,
    plugin_only,
)
from ._rules import _python_depends_issues, _semantic_issues
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
    plugin_tables: dict[str, BackendGeneral] = {}
    notes: list[str] = []
    general = data.get("general")
    if isinstance(general, Mapping):
        found, unchecked = _python_depends_issues(general, known)
        issues += found
        notes += [f"{where}: {n}" for n in unchecked]
        general = dict(general)
        for key in [k for k in general if plugin_only(k, known)]:
            try:
                plugin_tables[key] = BackendGeneral.model_validate(general.pop(key))
            except ValidationError as e:
                issues += [_issue_from_error(err, ("general", key)) for err in e.errors()]
        rest["general"] = general
    issues += _semantic_issues(data, known, edition)
    model = BuildConfig6 if edition == 6 else BuildConfig
    config: BuildConfig | None = None
    try:
        config = model.model_validate(rest)
    except ValidationError as e:
        located = {i.key for i in issues}  # a specific issue beats the generic type error
        issues += [i for i in (_issue_from_error(err, root=model) for err in e.errors())
                   if i.key not in located]
    except RecursionError:
        issues.append(BuildConfigIssue("", "values are nested too deeply", "flatten the file"))
    unique = sorted(dict.fromkeys(issues), key=lambda i: i.key)
    if unique or config is None:
        return None, unique
    g = config.general
    tables: dict[str, BackendGeneral | TpuGeneral] = {
        k: t for k, t in (("cuda", g.cuda), ("neuron", g.neuron), ("tpu", g.tpu), ("xpu", g.xpu))
        if t is not None
    }
    tables.update(plugin_tables)
    shape = f"edition {edition}" if edition is not None else "legacy v4"
    notes = _notes(config, where, tables, known) + notes
    return BuildToml(config, edition, shape, tables, tuple(notes), where), []


def _notes(
    config: BuildConfig, where: str, tables: Mapping[str, object], known: Mapping[str, str]
) -> list[str]:
    """The legacy-format note, and the one on backends kernel-builder does not know."""
    notes = []
    if config.general.edition != CURRENT_EDITION:
        shape = "has no edition: it is a legacy (v4) build.toml" if config.general.edition is None \
            else f"is in edition {config.general.edition}"
        notes.append(
            f"{where} {shape}, which kernels 0.19.1 still reads by upgrading it to edition "
            f"{CURRENT_EDITION} in memory (kernel-builder's Nix builder needs edition "
            f"{CURRENT_EDITION}); `kernel-builder update-build` migrates it"
        )
    abi = config.torch.stable_abi if config.torch else None
    named = [*config.general.backends, *tables, *(abi if isinstance(abi, dict) else ()),
             *(k.backend for k in config.kernel.values())]
    if others := sorted({b for b in named if plugin_only(b, known)}):
        notes.append(
            f"{where} targets {', '.join(others)}: kernel-plugins backends that kernel-builder "
            "does not know (kernels 0.19.1 refuses this build.toml); build those variants with the "
            "vendor's tools"
        )
    return notes


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
