"""Turn pydantic validation errors into :class:`BuildConfigIssue` values a person can act on.

Each error becomes the dotted TOML key it is about (``kernel."a.b".src[0]``), what is
wrong, and a fix: the allowed keys of the table for an unknown key (kebab-case hints for
``snake_case`` ones), an example of the right TOML type for a type error.
"""

from __future__ import annotations

import re
import types
from collections.abc import Mapping
from typing import Annotated, Any, Union, get_args, get_origin

from pydantic import BaseModel

from ._models import (
    KERNEL_BACKEND_KEYS,
    KERNEL_LANGUAGES,
    BuildConfig,
    BuildConfigIssue,
    General,
    Kernel,
    Kernel6,
    _kebab,
)

_BARE_KEY = re.compile(r"^[A-Za-z0-9_-]+$")

#: Edition 6's kernel model of each ``language``.
_KERNEL6_MODELS: dict[str, type[BaseModel]] = {
    tag: cls for cls in get_args(get_args(Kernel6)[0])
    for tag in get_args(cls.model_fields["language"].annotation)
}
_LANGUAGE_FIX = (f"use one of {', '.join(KERNEL_LANGUAGES)}: edition 6 names a kernel's kind "
                 "with language, and its backend follows from it")


def _fmt_loc(loc: tuple[Any, ...] | list[Any]) -> str:
    """``("kernel", "a.b", "src", 0)`` -> ``kernel."a.b".src[0]``."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
            continue
        text = str(part)
        if not _BARE_KEY.match(text):
            text = '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'
        out += ("." if out else "") + text
    return out


def _short(value: object, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _unwrap(annotation: Any) -> Any:
    """Strip ``Annotated`` and ``X | None`` from a type."""
    while True:
        origin = get_origin(annotation)
        if origin is Annotated:
            annotation = get_args(annotation)[0]
        elif origin in (Union, types.UnionType):
            args = [a for a in get_args(annotation) if a is not type(None)]
            if len(args) != 1:
                return annotation
            annotation = args[0]
        else:
            return annotation


def _model_at(loc: tuple[Any, ...], root: type[BaseModel] = BuildConfig) -> type[BaseModel] | None:
    """The model class describing the table at ``loc`` (None when not a model)."""
    current: Any = root
    parts = list(loc)
    while parts:
        if not (isinstance(current, type) and issubclass(current, BaseModel)):
            return None
        part = parts.pop(0)
        field = next(
            (f for n, f in current.model_fields.items() if (f.alias or _kebab(n)) == part), None
        )
        if field is None:
            return None
        current = _unwrap(field.annotation)
        while get_origin(current) in (dict, list) and parts:
            parts.pop(0)  # the dict key / list index
            current = _unwrap(get_args(current)[-1])
    return current if isinstance(current, type) and issubclass(current, BaseModel) else None


def _allowed_keys(model: type[BaseModel]) -> list[str]:
    return sorted(f.alias or _kebab(n) for n, f in model.model_fields.items())


_TYPE_FIXES = {
    "int_type": "write a whole number without quotes, e.g. version = 1",
    "string_type": 'write a quoted string, e.g. "value"',
    "list_type": 'write a list, e.g. ["a", "b"]',
    "model_type": "write a table: [section] followed by key = value lines",
    "dict_type": "write a table: [section] followed by key = value lines",
    "greater_than_equal": "use a number that is not negative",
    "too_short": "give at least one entry",
    "string_too_short": "write a value that is not empty",
    "literal_error": "use one of these build dependencies; Python packages go in python-depends",
}

_CUSTOM_FIXES = {
    "version_or_revision": 'write {repo-id = "org/name", version = 1} or {repo-id = "org/name", '
    'revision = "main"}',
    "stable_abi": 'write stable-abi = "2.10", or a [torch.stable-abi] table such as cuda = "2.10"',
    "major_minor": 'write a major.minor version such as "12.8" or "2.10" (kernel-builder reads '
    "no other form)",
    "git_url": 'write a git URL such as "https://github.com/org/repo" or '
    '"git@github.com:org/repo.git"',
    "repo_id": "use the form 'org/name'",
    "cutile_minver": 'write tileiras-minver = "13.2" or a later CUDA version',
}


def _issue_from_error(err: Mapping[str, Any], prefix: tuple[Any, ...] = (), *,
                      root: type[BaseModel] = BuildConfig) -> BuildConfigIssue:
    """One pydantic error of the model ``root`` (at ``prefix``) as an issue with a fix."""
    loc = prefix + tuple(err.get("loc", ()))
    kind = err.get("type", "")
    tagged = _KERNEL6_MODELS.get(loc[2]) if loc[:1] == ("kernel",) and len(loc) > 3 else None
    if tagged:  # an edition-6 kernel: pydantic puts its language into the location
        loc = loc[:2] + loc[3:]
    elif kind.startswith("union_tag_"):  # an edition-6 kernel without a known language
        key = _fmt_loc((*loc, "language"))
        if kind == "union_tag_not_found":
            return BuildConfigIssue(key, f"missing required key '{key}'", _LANGUAGE_FIX)
        tag = (err.get("ctx") or {}).get("tag")
        return BuildConfigIssue(key, f"unknown kernel kind {_short(tag)}", _LANGUAGE_FIX)
    key = _fmt_loc(loc)
    last = loc[-1] if loc else ""
    table = _fmt_loc(loc[:-1]) or "(top level)"
    if kind == "missing":
        return BuildConfigIssue(
            key, f"missing required key '{key}'", f"add {last} = ... to [{table}]"
        )
    if kind == "extra_forbidden" and tagged and last == "backend":
        return BuildConfigIssue(key, f"unknown key '{key}'", "remove it: " + _LANGUAGE_FIX)
    if kind == "extra_forbidden":
        model = tagged or _model_at(loc[:-1], root)
        allowed = _allowed_keys(model) if model is not None else []
        spelled = [a for a in allowed if isinstance(last, str) and _kebab(a) == _kebab(last)]
        if spelled and "-" in spelled[0]:
            fix = f"keys are kebab-case: write '{spelled[0]}' instead of '{last}'"
        elif spelled:
            fix = f"write '{spelled[0]}' instead of '{last}' (kernel-builder spells it with '_')"
        else:
            extra = ""
            if isinstance(model, type) and issubclass(model, General):
                extra = " ([general.<name>] tables exist for cuda, neuron, tpu and xpu only)"
            elif model is Kernel:
                specific = {k for keys in KERNEL_BACKEND_KEYS.values() for k in keys}
                allowed = [k for k in allowed if k not in specific]
                extra = "; plus " + "; ".join(
                    f"for {b} kernels: {', '.join(k)}" for b, k in KERNEL_BACKEND_KEYS.items() if k
                )
            where = f"in [{table}]" if loc[:-1] else "at the top level"
            fix = (
                f"remove it or fix its spelling; keys allowed {where}: "
                f"{', '.join(allowed) or 'none'}{extra}"
            )
        return BuildConfigIssue(key, f"unknown key '{key}'", fix)
    if kind == "string_pattern_mismatch":
        return BuildConfigIssue(
            key,
            f"kernel name {_short(err.get('input'))} is not lowercase letters, digits and "
            "'-' (starting with a letter, ending with a letter or digit)",
            'use a name such as "my-kernel"',
        )
    if kind in _CUSTOM_FIXES:
        return BuildConfigIssue(key, err.get("msg", "invalid value"), _CUSTOM_FIXES[kind])
    fix = _TYPE_FIXES.get(kind, "fix the value")
    if kind == "literal_error" and "depends" not in loc:
        fix = "use one of the values named"
    return BuildConfigIssue(
        key, f"{err.get('msg', 'invalid value')} (got {_short(err.get('input'))})", fix
    )
