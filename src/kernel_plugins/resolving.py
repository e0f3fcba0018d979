"""Choose the build variant that fits a device, with the installed backends' rules.

The rules themselves live in :mod:`kernel_plugins.variants` (pure) and in each backend's
``list_variants`` / ``explain_variant`` hooks; this module asks the plugin manager for
them and applies them once per load.
"""

from __future__ import annotations

from collections.abc import Iterable

from .detection import get_device, system_info
from .device import DeviceInfo, SystemInfo
from .errors import NoCompatibleVariantError
from .plugins import get_manager
from .variants import Resolution, resolve

__all__ = ["resolve_variants", "resolve_for", "no_variant_message", "choose"]


def resolve_for(available: Iterable[str], info: DeviceInfo, system: SystemInfo) -> Resolution:
    """Resolve variant names for an already-detected device and system."""
    manager = get_manager()
    return resolve(
        list(available),
        info,
        system,
        manager.list_variants(info, system),
        explain=lambda v: manager.explain_variant(info, system, v),
        token_owner=manager.token_owner,
    )


def resolve_variants(
    available: Iterable[str], device: object = None, system: SystemInfo | None = None
) -> Resolution:
    """Resolve variant names for a device with the installed backends' rules.

    :param available: variant names (e.g. the folders under ``build/``).
    :param device: a device string, ``torch.device`` or :class:`DeviceInfo` (default:
        the preferred device of this machine).
    :param system: system facts (default: this machine's).
    :return: a :class:`~kernel_plugins.variants.Resolution`; never raises for bad names.
    """
    return resolve_for(available, get_device(device), system or system_info())


def no_variant_message(
    where: str, info: DeviceInfo, resolution: Resolution, kind: str = ""
) -> str:
    """The message of a :class:`NoCompatibleVariantError`: every variant with its reason."""
    return "\n".join([
        f"no build variant of {where} fits {info.summary()}.",
        *([f"Source {kind}: {where}"] if kind else []),
        resolution.trace(),
        "Publish a variant for this device (see `kernel-plugins list-backends` for the names it "
        "accepts) or load on another device.",
    ])


def choose(
    where: str, names: Iterable[str], info: DeviceInfo, system: SystemInfo, *, kind: str = ""
) -> str:
    """The best variant among ``names`` for the device (``kind`` names the source kind).

    :raises NoCompatibleVariantError: none fits; lists every variant with its reason.
    """
    resolution = resolve_for(names, info, system)
    if resolution.best is None:
        raise NoCompatibleVariantError(
            no_variant_message(where, info, resolution, kind), resolution=resolution
        )
    return resolution.best
