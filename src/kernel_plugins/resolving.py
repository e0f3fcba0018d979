"""Choose the build variant that fits a device, with the installed backends' rules.

:func:`resolve` is pure (no I/O, no torch): from the variant names a source has and the
owner backend's accepted list (its ``list_variants`` hook) it ranks the fits; the reason
of each other name is written only when :attr:`Resolution.decisions` is first read (a
load needs only the best). :func:`check_archs`, the architecture step, then asks the
owner's ``check_arch`` hook about the fits, best first, until one runs on the device.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import NamedTuple

from ._record import field, record
from .detection import get_device, system_info
from .device import DeviceInfo, SystemInfo, version_text
from .errors import NoCompatibleVariantError, VariantNameError
from .plugins import get_manager
from .variants import Variant, parse_variant

__all__ = ["Decision", "Resolution", "resolve", "resolve_variants", "resolve_for", "choose", "check_archs",
           "device_arch"]

Explain = Callable[[Variant], "str | None"]
ArchsOf = Callable[[str], Sequence[str]]


class Decision(NamedTuple):
    """The verdict on one available variant: accepted (with rank) or rejected (with
    reason); an accepted one's ``reason`` is a note (its architectures were not checked)."""

    variant: str
    accepted: bool
    reason: str | None = None
    rank: int | None = None

    def describe(self) -> str:
        """``name: accepted (preference #1)`` or ``name: <reason>``."""
        if not self.accepted:
            return f"{self.variant}: {self.reason}"
        return f"{self.variant}: accepted (preference #{(self.rank or 0) + 1})" + (
            f"; {self.reason}" if self.reason else "")


@record
class Resolution:
    """The result of resolving a set of variant names for a device.

    Attributes:
        accepted: accepted variant names, best first.
        device: the device resolved for. system: the system resolved on.
        refused: the variants the architecture step refused, in the order tried.
        arch_note: why the best variant's architectures were not checked, if they were not.
        rejected: writes the decisions on the names not accepted (called once, for
            :attr:`decisions`).
    """

    accepted: tuple[str, ...]
    device: DeviceInfo
    system: SystemInfo
    refused: tuple[Decision, ...] = ()
    arch_note: str | None = None
    rejected: Callable[[], list[Decision]] = field(default=list, repr=False, compare=False)

    @property
    def best(self) -> str | None:
        """The best accepted variant, or None."""
        return self.accepted[0] if self.accepted else None

    @functools.cached_property
    def decisions(self) -> tuple[Decision, ...]:
        """One :class:`Decision` per available name: the accepted ones in preference order,
        those refused for their architectures, then every other one sorted by name."""
        return (*(Decision(n, True, None if i else self.arch_note, i) for i, n in enumerate(self.accepted)),
                *self.refused, *sorted(self.rejected(), key=lambda d: d.variant))

    def trace(self) -> str:
        """One line per decision, in resolution order."""
        return "\n".join("  " + d.describe() for d in self.decisions) or "  (no variants)"

    def to_dict(self) -> dict[str, object]:
        """A JSON-ready dict."""
        decisions = [{"variant": d.variant, "accepted": d.accepted, "reason": d.reason} for d in self.decisions]
        return {"device": self.device.to_dict(), "system": self.system.to_dict(), "best": self.best,
                "accepted": list(self.accepted), "decisions": decisions}


def _generic_reason(v: Variant, system: SystemInfo) -> str | None:
    """The reason a variant cannot load, from the parts every backend shares (kernels'
    rules: the Python part, CPU and OS, then the framework)."""
    if v.framework == "mlx" and not system.mlx:
        return "an MLX variant: mlx is not installed"
    if v.python is not None:
        if v.python_abi == "abi3" and system.free_threaded:
            return ("built for the abi3 stable ABI, which a free-threaded Python cannot load "
                    "(it needs an abi3t build)")
        if system.python_version < v.python:
            return (f"needs Python >= {version_text(v.python)}, the system has Python "
                    f"{version_text(system.python_version)}")
    if v.os is not None and v.os != system.os:
        return f"built for OS {v.os}, the system is {system.os}"
    if v.cpu is not None and v.cpu != system.cpu:
        return f"built for CPU {v.cpu}, the system is {system.cpu}"
    if v.version is None:
        return None
    tvm, want = v.kind == "tvm-ffi", version_text(v.version)
    lib, built, have = ("tvm-ffi", "built against", system.tvm_ffi_version) if tvm else (
        "torch", "built for", system.torch_version)
    if have is None:
        return f"{built} {lib} {want}, but {lib} is not installed"
    if v.kind == "stable-abi":
        return None if v.version <= have else (
            f"torch stable ABI {want} needs torch >= {want}, installed torch is {version_text(have)}")
    if v.version != have:
        return f"{built} {lib} {want}, installed {lib} is {version_text(have)}"
    have_abi = None if system.cxx11_abi is None else "cxx11" if system.cxx11_abi else "cxx98"
    if v.abi is not None and v.abi != have_abi:
        return f"built with the {v.abi} C++ ABI, installed torch uses {have_abi or 'no tagged C++ ABI (not Linux)'}"
    return None


_FRAMEWORK = {"stable-abi": 0, "arch": 1, "tvm-ffi": 2}


def _order(v: Variant, token_rank: int) -> tuple[object, ...]:
    """kernels' preference: stable ABI (newest first), tagless then tagged torch, tvm-ffi,
    compiled sdk (any-backend after the backend's), noarch (universal last), ``sdk-<backend>``,
    ``sdk``; within one, the backend token's rank, then abi3 before abi3t and newer Python
    first. The name breaks ties (kernels keeps the input order)."""
    py = (v.python_abi == "abi3t", -v.python[0], -v.python[1]) if v.python else (False, 0, 0)
    if v.kind in _FRAMEWORK:
        first = (-v.version[0], -v.version[1]) if v.kind == "stable-abi" and v.version else (0, v.abi is not None)
        return (_FRAMEWORK[v.kind], *first, token_rank, *py, v.name)
    if v.kind == "sdk":
        group = 3 if v.python else 5 if v.noarch_backend else 6
        return (group, 0, 0, token_rank if v.token else 1 << 30, *py, v.name)
    return (4, 0, 0, v.kind == "universal", *py, v.name)


def resolve(available: Iterable[str], device: DeviceInfo, system: SystemInfo, preference: Sequence[str], *,
            explain: Explain | None = None, token_owner: Callable[[str], str | None] | None = None) -> Resolution:
    """Decide for every available variant name whether it fits, and rank the fits.

    A name fits when its shared parts fit the system (:func:`_generic_reason`) and its
    backend is the owner's: its token is one of the tokens of ``preference``'s compiled
    names, or its noarch backend one of ``preference``'s noarch names (``sdk-<backend>``:
    the same, universal aside). The fits are ranked as kernels ranks them (:func:`_order`).

    :param available: variant names found in the source (duplicates ignored).
    :param device: the device to load for. system: the host's system facts.
    :param preference: the owner backend's accepted names, best first (``list_variants``).
    :param explain: the owner backend's ``explain_variant`` (reason for a token it rejects).
    :param token_owner: maps a token prefix (``cu``) to the name of the backend that uses
        it, for "built for another backend" reasons.
    :return: a :class:`Resolution`. Never raises for malformed names (or non-strings):
        they are rejected with their parse error as the reason.
    """
    tokens: dict[str, int] = {}
    noarch: set[str | None] = set()
    for name in preference:
        if isinstance(p := _parsed(name), Variant):
            if p.token is not None:
                tokens.setdefault(p.token, len(tokens))
            elif p.kind in ("noarch", "universal"):
                noarch.add(p.noarch_backend)
    fits, rejected = [], []
    for name in set(available):
        v = _parsed(name)
        reason = f"malformed variant name: {v}" if isinstance(v, str) else _generic_reason(v, system)
        if isinstance(v, Variant) and reason is None:
            b = v.noarch_backend  # sdk-<backend>: any noarch backend of the owner's but universal
            if v.token in tokens if v.token else (b in noarch and not (v.kind == "sdk" and b == "universal")
                                                  if b else v.kind == "sdk"):
                fits.append(_order(v, tokens.get(v.token or "", 0)))
                continue
        rejected.append((name, None if isinstance(v, str) else v, reason))
    accepted = tuple(str(key[-1]) for key in sorted(fits))
    return Resolution(accepted, device, system, rejected=lambda: [
        _rejection(n, v, r, device, explain, token_owner) for n, v, r in rejected])


def _parsed(name: object) -> Variant | str:
    try:
        return parse_variant(name)  # type: ignore[arg-type]
    except VariantNameError as e:
        return str(e)


def _rejection(name: object, v: Variant | None, reason: str | None, device: DeviceInfo, explain: Explain | None,
               token_owner: Callable[[str], str | None] | None) -> Decision:
    """The decision on a name that does not fit, with the most specific reason."""
    if v is None:
        return Decision(str(name), False, reason)
    if reason is None and v.token is not None:
        owner = token_owner(v.token_prefix or "") if token_owner else None
        if owner is not None and owner != device.backend:
            reason = f"built for backend '{owner}' (token {v.token}); the device is '{device.backend}'"
        else:
            reason = (explain(v) if explain else None) or (
                f"backend token {v.token} is not accepted by backend '{device.backend}' on this system")
    elif reason is None and v.noarch_backend is not None:
        reason = (f"{'sdk' if v.kind == 'sdk' else 'noarch'} variant for backend '{v.noarch_backend}'; the "
                  f"device is '{device.device_type}' (backend '{device.backend}', noarch name torch-{device.backend})")
    return Decision(v.name, False, reason or (
        f"not in backend '{device.backend}'s accepted variants on this system"))


def device_arch(device: DeviceInfo) -> str | None:
    """The device's architecture as builds name it: ``arch``, else the capability ``X.Y``."""
    if device.arch or device.capability is None:
        return device.arch
    return "{}.{}".format(*device.capability)


def check_archs(resolution: Resolution, archs_of: ArchsOf) -> Resolution:
    """The architecture step: the owner's ``check_arch`` judges the accepted variants, best
    first, until one runs (``archs_of(name)``: its ``backend.archs`` for the device's backend;
    empty fits). Refused ones move to ``refused``; ``arch_note`` says if the best is unchecked."""
    device, manager = resolution.device, get_manager()
    arch, refused, note = device_arch(device) or "not reported", [], None
    for name in resolution.accepted:
        archs = tuple(archs_of(name))
        shown = ", ".join(a if len(a) <= 40 else a[:37] + "..." for a in archs[:8]) + (
            f" and {len(archs) - 8} more" if len(archs) > 8 else "")
        verdict = manager.check_arch(device, archs) if archs else True
        if verdict is False:
            refused.append(Decision(name, False, f"built for architectures {shown}; the device's "
                                    f"architecture is {arch}"))
            continue
        if verdict is None:
            note = (f"architectures {shown} not checked: backend '{device.backend}' cannot tell "
                    f"whether the device ({arch}) runs them")
        break
    gone = {d.variant for d in refused}
    return dataclasses.replace(resolution, accepted=tuple(n for n in resolution.accepted if n not in gone),
                               refused=tuple(refused), arch_note=note)


def resolve_for(available: Iterable[str], info: DeviceInfo, system: SystemInfo, *,
                archs_of: ArchsOf | None = None) -> Resolution:
    """Resolve variant names for an already-detected device and system (with the
    architecture step when ``archs_of`` is given, see :func:`check_archs`)."""
    manager = get_manager()
    resolution = resolve(list(available), info, system, manager.list_variants(info, system),
                         explain=lambda v: manager.explain_variant(info, system, v), token_owner=manager.token_owner)
    return resolution if archs_of is None else check_archs(resolution, archs_of)


def resolve_variants(available: Iterable[str], device: object = None, system: SystemInfo | None = None, *,
                     archs: Mapping[str, Sequence[str]] | None = None) -> Resolution:
    """Resolve variant names for a device with the installed backends' rules.

    :param available: variant names (e.g. the folders under ``build/``).
    :param device: a device string, ``torch.device`` or :class:`DeviceInfo` (default:
        the preferred device of this machine).
    :param system: system facts (default: this machine's).
    :param archs: variant name -> its ``backend.archs``: includes the architecture step,
        as a load does with each candidate's ``metadata.json``.
    :return: a :class:`Resolution`; never raises for bad names.
    """
    archs_of = None if archs is None else (lambda name: archs.get(name, ()))
    return resolve_for(available, get_device(device), system or system_info(), archs_of=archs_of)


def choose(where: str, names: Iterable[str], info: DeviceInfo, system: SystemInfo, *, kind: str = "",
           archs_of: ArchsOf | None = None) -> str:
    """The best variant among ``names`` for the device (``kind`` names the source kind;
    ``archs_of``: see :func:`check_archs`).

    :raises NoCompatibleVariantError: none fits; lists every variant with its reason.
    """
    resolution = resolve_for(names, info, system, archs_of=archs_of)
    if resolution.best is None:
        raise NoCompatibleVariantError("\n".join([
            f"no build variant of {where} fits {info.summary()}.",
            *([f"Source {kind}: {where}"] if kind else []),
            resolution.trace(),
            "Publish a variant for this device (see `kernel-plugins list-backends` for the names it "
            "accepts) or load on another device.",
        ]), resolution=resolution)
    return resolution.best
