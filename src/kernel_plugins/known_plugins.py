"""The one table of backend plugins the core knows by name but does not ship.

It only serves to help: suggest which distribution to install for an unknown device
type, let mappings and ``check`` accept these backends before their plugin is
installed, and name the arch tokens and builder aliases they use. Everything else
about these backends lives in their plugin distributions.
"""

from __future__ import annotations

import importlib
from typing import Any

from ._record import record

__all__ = ["KnownPlugin", "KNOWN_PLUGINS", "DEVICE_ALIASES", "INSTALL_HINTS", "pip_install", "known_token_owner",
           "builder_alias", "import_tool", "missing_tool"]


@record
class KnownPlugin:
    """A backend with a published plugin distribution.

    Attributes: distribution (what to ``pip install``), vendor_module (the vendor's torch
    extension it serves), arch_tokens (prefixes of its backend token in arch variant
    names), builder_aliases (other names kernel builders use for the backend in ``build.toml``).
    """

    distribution: str
    vendor_module: str
    arch_tokens: tuple[str, ...] = ()
    builder_aliases: tuple[str, ...] = ()


KNOWN_PLUGINS: dict[str, KnownPlugin] = {
    "mlu": KnownPlugin("kernel-plugins-mlu", "torch_mlu", ("mlu",)),
    "musa": KnownPlugin("kernel-plugins-musa", "torch_musa", ("musa",)),
    "npu": KnownPlugin("kernel-plugins-npu", "torch_npu", ("cann",), ("cann",)),
    "neuron": KnownPlugin("kernel-plugins-neuron", "torch_neuronx"),
    "tpu": KnownPlugin("kernel-plugins-tpu", "torch_tpu"),
}

#: Names people use for a device type that is spelt otherwise (``gpu`` -> ``cuda``).
DEVICE_ALIASES = {"gpu": "cuda", "nvidia": "cuda", "amd": "rocm", "ascend": "npu", "cann": "npu"}


def pip_install(distribution: str) -> str:
    """How to install a distribution of this repository: from PyPI, or from a checkout."""
    return (f"pip install {distribution} (from a checkout: pip install ./plugins/"
            f"{distribution.removeprefix('kernel-plugins-')})")


#: Backend name -> how to install its plugin (:func:`pip_install`).
INSTALL_HINTS: dict[str, str] = {n: pip_install(p.distribution) for n, p in KNOWN_PLUGINS.items()}


def known_token_owner(prefix: str) -> str | None:
    """The known plugin backend whose arch tokens start with ``prefix``, or None."""
    return next((n for n, p in KNOWN_PLUGINS.items() if prefix in p.arch_tokens), None)


def builder_alias(name: str) -> str:
    """The backend name for a builder's name (``cann`` -> ``npu``); other names unchanged."""
    return next((n for n, p in KNOWN_PLUGINS.items() if name in p.builder_aliases), name)


def import_tool(module: str, distribution: str, what: str) -> Any:
    """Import ``module`` of the tool distribution ``distribution`` (the tools ship apart
    from the core), which ``what`` needs; :class:`MissingDependencyError` when it is missing."""
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as e:
        if e.name is None or not (module == e.name or module.startswith(e.name + ".")):
            raise
        raise missing_tool(distribution, what) from None


def missing_tool(distribution: str, what: str) -> Exception:
    """The error for ``what``, which needs the tool distribution ``distribution``."""
    from .errors import MissingDependencyError

    return MissingDependencyError(f"{what} needs the {distribution} distribution, which is not "
                                  f"installed: {pip_install(distribution)}")
