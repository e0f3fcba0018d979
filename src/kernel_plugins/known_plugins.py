"""The one table of backend plugins the core knows by name but does not ship.

It only serves to help: suggest which distribution to install for an unknown device
type, let mappings and ``check`` accept these backends before their plugin is
installed, and name the arch tokens and builder aliases they use. Everything else
about these backends lives in their plugin distributions.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = [
    "KnownPlugin", "KNOWN_PLUGINS", "INSTALL_HINTS", "known_token_owner", "builder_alias",
    "import_tool", "missing_tool",
]


@dataclass(frozen=True)
class KnownPlugin:
    """A backend with a published plugin distribution.

    Attributes: distribution (what to ``pip install``), arch_tokens (prefixes of its
    backend token in arch variant names), builder_aliases (other names kernel builders use
    for the backend in ``build.toml``).
    """

    distribution: str
    arch_tokens: tuple[str, ...] = ()
    builder_aliases: tuple[str, ...] = ()


KNOWN_PLUGINS: dict[str, KnownPlugin] = {
    "mlu": KnownPlugin("kernel-plugins-mlu", ("mlu",)),
    "musa": KnownPlugin("kernel-plugins-musa", ("musa",)),
    "npu": KnownPlugin("kernel-plugins-npu", ("cann",), ("cann",)),
    "neuron": KnownPlugin("kernel-plugins-neuron"),
    "tpu": KnownPlugin("kernel-plugins-tpu"),
}

#: Backend name -> distribution to install.
INSTALL_HINTS: dict[str, str] = {name: p.distribution for name, p in KNOWN_PLUGINS.items()}


def known_token_owner(prefix: str) -> str | None:
    """The known plugin backend whose arch tokens start with ``prefix``, or None."""
    return next((n for n, p in KNOWN_PLUGINS.items() if prefix in p.arch_tokens), None)


def builder_alias(name: str) -> str:
    """The backend name for a builder's name (``cann`` -> ``npu``); other names unchanged."""
    return next((n for n, p in KNOWN_PLUGINS.items() if name in p.builder_aliases), name)


def import_tool(module: str, distribution: str, what: str) -> Any:
    """Import ``module`` of the tool distribution ``distribution``, which ``what`` needs.

    The test and authoring tools (emulation, ``check``) ship apart from the core, so a
    plain install carries none of them.

    :raises MissingDependencyError: the distribution is not installed, naming the install.
    """
    import importlib

    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as e:
        if e.name is None or not (module == e.name or module.startswith(e.name + ".")):
            raise
        raise missing_tool(distribution, what) from None


def missing_tool(distribution: str, what: str) -> Exception:
    """The error for ``what``, which needs the tool distribution ``distribution``."""
    from .errors import MissingDependencyError

    return MissingDependencyError(
        f"{what} needs the {distribution} distribution, which is not installed: "
        f"pip install {distribution} (from a checkout: pip install ./plugins/"
        f"{distribution.removeprefix('kernel-plugins-')})"
    )
