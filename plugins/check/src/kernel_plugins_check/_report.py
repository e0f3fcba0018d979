"""What a check returns (:class:`Problem`, :class:`CheckReport`) and what its steps share.

``_Ctx`` carries the repository root, the folder links may point into, the validated
build.toml, the backends this installation knows and the problems and notes found so far.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kernel_plugins.known_plugins import known_token_owner

from .buildconfig import BuildToml, known_backends

_RENAME_FIX = (
    "rename the folder to a variant name such as torch-cpu, torch-cuda or "
    "torch213-cxx11-cu128-x86_64-linux"
)


@dataclass(frozen=True)
class Problem:
    """One problem found by :func:`check`.

    Attributes:
        file: the file or folder concerned, relative to the repository (POSIX).
        key: the key inside the file (``backend.type``, ``general.backends[1]``), or "".
        message: what is wrong, with the values involved.
        fix: what to do about it.
    """

    file: str
    key: str
    message: str
    fix: str

    def describe(self) -> str:
        """``file: key: message (fix: ...)`` on one line."""
        key = f" {self.key}:" if self.key else ""
        text = f"{self.file}:{key} {self.message} (fix: {self.fix})"
        return " ".join(text.split())

    def to_dict(self) -> dict[str, str]:
        """A JSON-ready dict."""
        return {"file": self.file, "key": self.key, "message": self.message, "fix": self.fix}


@dataclass(frozen=True)
class CheckReport:
    """The result of :func:`check`.

    Attributes:
        target: what was checked (a path, or ``org/name@sha``).
        root: the local folder that was read.
        problems: every problem, build.toml first, then by variant.
        notes: remarks that are not problems.
        variants: the variant folders found under ``build/``.
    """

    target: str
    root: Path
    problems: tuple[Problem, ...]
    notes: tuple[str, ...] = ()
    variants: tuple[str, ...] = field(default=())

    @property
    def ok(self) -> bool:
        """True when no problem was found."""
        return not self.problems

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {
            "target": self.target,
            "root": str(self.root),
            "ok": self.ok,
            "variants": list(self.variants),
            "problems": [p.to_dict() for p in self.problems],
            "notes": list(self.notes),
        }


class _Ctx:
    """What the variant checks share: known backends, the manager, build.toml, roots."""

    def __init__(self, root: Path, link_root: Path, build: BuildToml | None) -> None:
        from kernel_plugins.plugins import get_manager

        self.root = root
        self.link_root = link_root
        self.build = build
        self.known = known_backends()
        self.manager = get_manager()
        self.problems: list[Problem] = []
        self.notes: list[str] = []

    def rel(self, path: Path) -> str:
        try:
            return path.relative_to(self.root).as_posix()
        except ValueError:
            return str(path)

    def add(self, file: Path | str, key: str, message: str, fix: str) -> None:
        name = file if isinstance(file, str) else self.rel(file)
        self.problems.append(Problem(name, key, message, fix))

    def inside(self, path: Path) -> bool:
        resolved = path.resolve()
        return resolved == self.link_root or self.link_root in resolved.parents

    def token_owner(self, prefix: str) -> str | None:
        return self.manager.token_owner(prefix) or known_token_owner(prefix)
