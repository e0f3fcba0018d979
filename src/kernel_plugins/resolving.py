"""Choose the build variant that fits a device, with the installed backends' rules.

:func:`resolve` is pure (no I/O, no torch): it takes the variant names a source has, the
owner backend's accepted list (its ``list_variants`` hook) and an explanation callback,
and returns a :class:`Resolution` with a reason for every rejected name. The functions
below it ask the plugin manager for those rules and apply them once per load.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

from .detection import get_device, system_info
from .device import DeviceInfo, SystemInfo
from .errors import NoCompatibleVariantError, VariantNameError
from .plugins import get_manager
from .variants import Variant, parse_variant

__all__ = [
    "Decision", "Resolution", "resolve", "resolve_variants", "resolve_for", "no_variant_message",
    "choose",
]


class Decision(NamedTuple):
    """The verdict on one available variant: accepted (with rank) or rejected (with reason)."""

    variant: str
    accepted: bool
    reason: str | None = None
    rank: int | None = None

    def describe(self) -> str:
        """``name: accepted (#1)`` or ``name: <reason>``."""
        if self.accepted:
            return f"{self.variant}: accepted (preference #{(self.rank or 0) + 1})"
        return f"{self.variant}: {self.reason}"


@dataclass(frozen=True)
class Resolution:
    """The result of resolving a set of variant names for a device.

    Attributes:
        accepted: accepted variant names, best first.
        decisions: one :class:`Decision` per available name, accepted first (in
            preference order), then rejected ones sorted by name.
        device: the device resolved for. system: the system resolved on.
    """

    accepted: tuple[str, ...]
    decisions: tuple[Decision, ...]
    device: DeviceInfo
    system: SystemInfo
    preference: tuple[str, ...] = field(default=(), repr=False)

    @property
    def best(self) -> str | None:
        """The best accepted variant, or None."""
        return self.accepted[0] if self.accepted else None

    def trace(self) -> str:
        """One line per decision, in resolution order."""
        return "\n".join("  " + d.describe() for d in self.decisions) or "  (no variants)"

    def to_dict(self) -> dict[str, object]:
        """A JSON-ready dict."""
        return {
            "device": self.device.to_dict(),
            "system": self.system.to_dict(),
            "best": self.best,
            "accepted": list(self.accepted),
            "decisions": [
                {"variant": d.variant, "accepted": d.accepted, "reason": d.reason}
                for d in self.decisions
            ],
        }


Explain = Callable[[Variant], "str | None"]


def _fmt(v: tuple[int, int] | None) -> str:
    return "none" if v is None else f"{v[0]}.{v[1]}"


def _generic_reason(v: Variant, device: DeviceInfo, system: SystemInfo) -> str | None:
    """The reason a variant cannot load, from the parts every backend shares."""
    if v.kind == "noarch":
        if v.noarch_backend != device.backend:
            return (
                f"noarch variant for backend '{v.noarch_backend}'; the device is "
                f"'{device.device_type}' (backend '{device.backend}', noarch name torch-{device.backend})"
            )
        return None
    if v.kind == "universal":
        return None
    if v.os != system.os:
        return f"built for OS {v.os}, the system is {system.os}"
    if v.cpu != system.cpu:
        return f"built for CPU {v.cpu}, the system is {system.cpu}"
    if v.kind == "tvm-ffi":
        if system.tvm_ffi_version is None:
            return f"built against tvm-ffi {_fmt(v.version)}, but tvm-ffi is not installed"
        if v.version != system.tvm_ffi_version:
            return (
                f"built against tvm-ffi {_fmt(v.version)}, installed tvm-ffi is "
                f"{_fmt(system.tvm_ffi_version)}"
            )
        return None
    if system.torch_version is None:
        return f"built for torch {_fmt(v.version)}, but torch is not installed"
    if v.kind == "stable-abi":
        if v.version is not None and (v.version[0] != system.torch_version[0] or v.version > system.torch_version):
            return (
                f"torch stable ABI {_fmt(v.version)} needs torch >= {_fmt(v.version)} "
                f"(same major), installed torch is {_fmt(system.torch_version)}"
            )
        return None
    if v.version != system.torch_version:
        return f"built for torch {_fmt(v.version)}, installed torch is {_fmt(system.torch_version)}"
    if v.abi is not None and system.cxx11_abi is not None:
        want = "cxx11" if system.cxx11_abi else "cxx98"
        if v.abi != want:
            return f"built with the {v.abi} C++ ABI, installed torch uses {want}"
    return None


def resolve(
    available: Iterable[str],
    device: DeviceInfo,
    system: SystemInfo,
    preference: Sequence[str],
    *,
    explain: Explain | None = None,
    token_owner: Callable[[str], str | None] | None = None,
) -> Resolution:
    """Decide for every available variant name whether it fits, and rank the fits.

    :param available: variant names found in the source (duplicates ignored).
    :param device: the device to load for.
    :param system: the host's system facts.
    :param preference: the owner backend's accepted names, best first.
    :param explain: the owner backend's ``explain_variant`` (reason for a token it rejects).
    :param token_owner: maps a token prefix (``cu``) to the display name of the backend
        that uses it, for "built for another backend" reasons.
    :return: a :class:`Resolution`. Never raises for malformed names: they are rejected
        with their parse error as the reason.
    """
    rank: dict[str, int] = {}
    for i, name in enumerate(preference):
        rank.setdefault(name, i)  # a name listed twice keeps its first (best) place
    accepted: list[tuple[int, str]] = []
    rejected: list[Decision] = []
    unique = set(available)
    if all(type(n) is str for n in unique):
        ordered = sorted(unique)
    else:  # a bad source may hand us non-strings: they are rejected, never a crash
        ordered = sorted(unique, key=lambda n: (str(type(n)), str(n)))
    for name in ordered:
        try:
            v = parse_variant(name)
        except VariantNameError as e:
            rejected.append(Decision(str(name), False, f"malformed variant name: {e}"))
            continue
        if name in rank:
            accepted.append((rank[name], name))
            continue
        reason = _generic_reason(v, device, system)
        if reason is None and v.token is not None:
            prefix = v.token_prefix or ""
            owner = token_owner(prefix) if token_owner else None
            if owner is not None and owner != device.backend:
                reason = f"built for backend '{owner}' (token {v.token}); the device is '{device.backend}'"
            elif explain is not None:
                reason = explain(v)
            if reason is None:
                reason = (
                    f"backend token {v.token} is not accepted by backend '{device.backend}' on "
                    "this system"
                )
        if reason is None:
            reason = f"not in backend '{device.backend}'s accepted variants on this system"
        rejected.append(Decision(name, False, reason))
    accepted.sort()
    decisions = tuple(Decision(n, True, None, i) for i, (_, n) in enumerate(accepted)) + tuple(
        sorted(rejected, key=lambda d: d.variant)
    )
    return Resolution(
        accepted=tuple(n for _, n in accepted),
        decisions=decisions,
        device=device,
        system=system,
        preference=tuple(preference),
    )


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
    :return: a :class:`Resolution`; never raises for bad names.
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
