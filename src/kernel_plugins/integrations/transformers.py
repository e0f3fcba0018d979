"""Serve Hugging Face transformers models with kernel-plugins, on every backend.

transformers' layer decorators (``use_kernel_forward_from_hub``, ``use_kernelized_func``)
place marks only when a compatible Hub ``kernels`` package is importable. :func:`enable`
makes them place the same marks through kernel-plugins and registers :func:`default_mapping`
beneath any mapping already there, so that::

    from kernel_plugins.integrations import transformers as kp_transformers
    kp_transformers.enable()            # before model classes are imported

    from transformers import AutoModelForCausalLM
    import kernel_plugins
    model = AutoModelForCausalLM.from_config(config)
    kernel_plugins.kernelize(model)     # RMSNorm, activations, rotary: kernels

When transformers marks with HF ``kernels`` (5.25 always installs it), its marks are left as they
are: kernelize serves them too, HF kernels' per-model function wrappers (0.18+) included.
"""

from __future__ import annotations

import sys
from typing import Any

from .._warn import warn_user

__all__ = ["enable", "is_enabled", "default_mapping", "KERNEL_REPOS"]

#: Marked name -> (Hub repository, API version, member, kind): the community kernels
#: that serve transformers' marks, at the API version whose signatures match.
KERNEL_REPOS: dict[str, tuple[str, int, str, str]] = {
    "RMSNorm": ("kernels-community/rmsnorm", 1, "RMSNorm", "layer"),
    "SiLU": ("kernels-community/activation", 1, "Silu", "layer"),
    "GeLU": ("kernels-community/activation", 1, "Gelu", "layer"),
    "GeluTanh": ("kernels-community/activation", 1, "GeluTanh", "layer"),
    "NewGELU": ("kernels-community/activation", 1, "NewGELU", "layer"),
    "FastGELU": ("kernels-community/activation", 1, "FastGELU", "layer"),
    "QuickGELU": ("kernels-community/activation", 1, "QuickGELU", "layer"),
    "rotary_pos_emb": ("kernels-community/rotary", 2, "apply_rotary_transformers", "function"),
}

#: Marked names served for inference only on some device keys, as transformers' own
#: mapping does (the Hub rotary kernel's backward differs there).
INFERENCE_ONLY: dict[str, frozenset[str]] = {"rotary_pos_emb": frozenset({"cuda", "rocm", "xpu"})}

_ENABLED: Any = None  # the transformers.integrations.hub_kernels module enable() marked


def default_mapping() -> dict[str, dict[str, Any]]:
    """The mapping :func:`enable` registers: every name of :data:`KERNEL_REPOS` on every installed
    backend, for every mode (inference only where :data:`INFERENCE_ONLY` says so); without a Hub
    build, the bundled reference kernel serves with a warning."""
    from ..layers import FuncRepository, LayerRepository, Mode
    from ..plugins import get_manager

    backends = sorted(get_manager().backends())
    mapping: dict[str, dict[str, Any]] = {}
    for name, (repo_id, version, member, kind) in KERNEL_REPOS.items():
        repo = (FuncRepository(repo_id, func_name=member, version=version) if kind == "function"
                else LayerRepository(repo_id, layer_name=member, version=version))
        only = INFERENCE_ONLY.get(name, frozenset())
        mapping[name] = {backend: ({Mode.INFERENCE: repo} if backend in only else repo) for backend in backends}
    return mapping


def _transformers_uses_kernels(hub_kernels: Any) -> bool:
    """Whether transformers marks with HF kernels' decorators: whenever a compatible release is
    installed (5.25: ``_kernels_enabled`` is a function), before 5.25 unless USE_HUB_KERNELS is off."""
    enabled = getattr(hub_kernels, "_kernels_enabled", False)
    return bool(hub_kernels.is_kernels_available() and (callable(enabled) or enabled))


def _unmarked_modules() -> list[str]:
    """transformers modules imported before :func:`enable` whose classes carry no marks."""
    return sorted(m for m in sys.modules if m == "transformers.activations"
                  or (m.startswith("transformers.models.") and ".modeling_" in m))


def enable(*, register_mapping: bool = True) -> None:
    """Make transformers models built from now on carry kernel marks (call it before importing
    or building models; again is safe). ``register_mapping``: also register
    :func:`default_mapping` beneath the process-wide mapping, where neither the backend nor its
    device type is mapped for the name yet (so no mapping is ever replaced).

    :raises ImportError: transformers is not installed (``pip install transformers``).
    """
    global _ENABLED
    try:
        import transformers.integrations as integrations
        import transformers.integrations.hub_kernels as hub_kernels
    except ImportError as e:
        raise ImportError(f"kernel_plugins.integrations.transformers.enable() needs transformers: "
                          f"pip install transformers ({e})") from e
    # once per transformers import, and only where transformers does not mark through HF kernels
    if _ENABLED is not hub_kernels and not _transformers_uses_kernels(hub_kernels):
        if late := _unmarked_modules():
            warn_user(
                "kernel_plugins.integrations.transformers.enable() was called after "
                f"{', '.join(late)} were imported: their layers carry no kernel marks. Call "
                "enable() before importing or building transformers models."
            )
        from .. import layers

        # transformers' deprecated use_kernel_func_from_hub marks classes and functions alike
        for attr, fn in (("use_kernel_forward_from_hub", layers.use_kernel_forward_from_hub),
                         ("use_kernel_func_from_hub", layers.use_kernel_forward_from_hub),
                         ("use_kernelized_func", layers.use_kernelized_func)):
            setattr(hub_kernels, attr, fn)
            setattr(integrations, attr, fn)
    if register_mapping:
        from ..layers import register_kernel_mapping

        register_kernel_mapping(_beneath_current(default_mapping()))
    _ENABLED = hub_kernels


def _beneath_current(defaults: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """``defaults`` less each backend entry that would replace or outrank a mapped one (the
    name already has an entry for that backend or for its device type)."""
    from ..layers import current_mapping
    from ..plugins import get_manager

    current, records = current_mapping(), get_manager().backends()
    out: dict[str, dict[str, Any]] = {}
    for name, per_backend in defaults.items():
        taken = set(current.device_keys(name))
        if kept := {b: repo for b, repo in per_backend.items() if not taken & {b, records[b].spec.device_type}}:
            out[name] = kept
    return out


def is_enabled() -> bool:
    """Whether :func:`enable` was called in this process."""
    return _ENABLED is not None
