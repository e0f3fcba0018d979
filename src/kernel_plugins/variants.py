"""Build-variant names: parsing, validation, and the naming helpers plugins use.

Everything here is pure (no I/O, no torch). Choosing among names is
:mod:`kernel_plugins.resolving`.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterable, Sequence
from typing import Literal, NamedTuple

from ._record import record
from .device import SystemInfo
from .errors import VariantNameError

__all__ = [
    "Variant",
    "parse_variant",
    "validate_variant_name",
    "arch_variant_names",
    "noarch_variant_names",
    "split_token",
    "decode_token_version",
    "version_token_reason",
    "UNIVERSAL",
    "VariantTokens",
    "judge_archs",
]

UNIVERSAL = "torch-universal"
#: Oldest torch stable-ABI version builders publish (torch-stable-abi29 ...).
STABLE_ABI_MIN_MINOR = 9
MAX_NAME_LENGTH = 128

Kind = Literal["arch", "stable-abi", "tvm-ffi", "noarch", "universal"]

# One pattern for the three versioned forms (one match per name: resolution parses hundreds).
_VERSIONED_RE = re.compile(
    r"(?:torch-stable-abi(?P<s>[0-9]{2,})|torch(?P<a>[0-9]{2,})(?:-(?P<abi>cxx11|cxx98))?"
    r"|tvm-ffi(?P<t>[0-9]{2,}))"
    r"-(?P<token>[a-z]+[0-9]*)-(?P<cpu>x86_64|aarch64)-(?P<os>linux|darwin|windows)"
)
_NOARCH_RE = re.compile(r"torch-(?P<backend>[a-z][a-z0-9_]*)")
_SAFE_NAME_RE = re.compile(r"[a-z0-9_.\-]+")
_TOKEN_RE = re.compile(r"^(?P<prefix>[a-z]+)(?P<digits>[0-9]*)$")


class Variant(NamedTuple):
    """A parsed build-variant name (an immutable named tuple: cheap to build by the hundred).

    Attributes:
        name: the folder name under ``build/``.
        kind: ``arch`` (torch + ABI tag or tagless), ``stable-abi``, ``tvm-ffi``,
            ``noarch`` (``torch-<backend>``) or ``universal`` (legacy ``torch-universal``).
        version: torch version (arch), stable-ABI version or tvm-ffi version, as
            ``(major, minor)``; None for noarch/universal.
        abi: ``"cxx11"``/``"cxx98"`` for ABI-tagged arch variants, else None.
        token: the backend token (``cu128``, ``cann83``, ``mlu313``), None for noarch.
        cpu: ``x86_64``/``aarch64`` or None. os: ``linux``/``darwin``/``windows`` or None.
        noarch_backend: the backend of a ``torch-<backend>`` variant.
    """

    name: str
    kind: Kind
    version: tuple[int, int] | None = None
    abi: str | None = None
    token: str | None = None
    cpu: str | None = None
    os: str | None = None
    noarch_backend: str | None = None

    @property
    def token_prefix(self) -> str | None:
        """Letters of the backend token (``cu`` for ``cu128``), or None."""
        return split_token(self.token)[0] if self.token else None


def validate_variant_name(name: object) -> str:
    """Check that ``name`` is a safe, plain variant folder name and return it.

    Raises :class:`VariantNameError` for non-strings, empty or huge names, path
    separators, ``..`` and characters outside ``[a-z0-9_.-]``.
    """
    if not isinstance(name, str):
        raise VariantNameError(f"variant name must be a string, got {type(name).__name__}")
    if not name:
        raise VariantNameError("variant name is empty; expected e.g. 'torch-cpu'")
    problem = None
    if len(name) > MAX_NAME_LENGTH:
        problem = f"is {len(name)} characters long (at most {MAX_NAME_LENGTH})"
    elif "/" in name or "\\" in name or ".." in name or name == ".":
        problem = "contains a path separator or '..'; a variant is one folder directly under build/"
    elif not _SAFE_NAME_RE.fullmatch(name):
        problem = "has characters other than lowercase ASCII letters, digits, '_', '.', '-'"
    if problem:
        raise VariantNameError(f"variant name {name if len(name) <= 60 else name[:57] + '...'!r} {problem}")
    return name


def parse_variant(name: str) -> Variant:
    """Parse a variant name into a :class:`Variant`.

    Raises :class:`VariantNameError` naming the form expected when the name fits none.

    >>> parse_variant("torch210-cxx11-cu128-x86_64-linux").token
    'cu128'
    """
    if type(name) is not str:
        validate_variant_name(name)  # raises, naming the type
    return _parse(name)


@functools.lru_cache(maxsize=4096)
def _parse(name: str) -> Variant:
    """:func:`parse_variant` (cached: names repeat). The patterns admit only safe names, so
    the character checks of :func:`validate_variant_name` run only for a name that fails."""
    m = _VERSIONED_RE.fullmatch(name) if len(name) <= MAX_NAME_LENGTH else None
    if m:
        stable, arch, tvm, abi, token, cpu, os_ = m.group("s", "a", "t", "abi", "token", "cpu", "os")
        digits = stable or arch or tvm
        kind: Kind = "stable-abi" if stable else ("arch" if arch else "tvm-ffi")
        # one-digit major, then the minor: torch210 = 2.10, tvm-ffi01 = 0.1
        return Variant(name, kind, (int(digits[0]), int(digits[1:])), abi, token, cpu, os_)
    if name == UNIVERSAL:
        return Variant(name=name, kind="universal")
    m = _NOARCH_RE.fullmatch(name) if len(name) <= MAX_NAME_LENGTH else None
    if m and not name.startswith("torch-stable-abi"):
        return Variant(name=name, kind="noarch", noarch_backend=m.group("backend"))
    validate_variant_name(name)
    raise VariantNameError(
        f"variant name {name!r} has no known form: expected torch<M><m>[-cxx11|-cxx98]-<backend>-"
        "<cpu>-<os> (e.g. torch210-cxx11-cu128-x86_64-linux), torch-stable-abi<M><m>-..., "
        "tvm-ffi<M><m>-..., torch-<backend> or torch-universal"
    )


def split_token(token: str) -> tuple[str, str]:
    """Split a backend token into letters and digits: ``"cu128"`` -> ``("cu", "128")``."""
    m = _TOKEN_RE.match(token)
    if not m:
        raise VariantNameError(f"backend token {token!r} is not letters followed by digits")
    return m.group("prefix"), m.group("digits")


def decode_token_version(
    digits: str, major_width: int = 1, *, minor_width: int | None = None
) -> tuple[int, int] | None:
    """Decode the digits of a backend token into ``(major, minor)``: the inverse of
    :meth:`VariantTokens.token`.

    ``major_width`` says how many leading digits form the major version: CUDA uses 2
    (``128`` -> 12.8, ``1210`` -> 12.10), MUSA 1 (``43`` -> 4.3). ``minor_width``, when
    given, counts from the end instead: Ascend CANN's minor is the last digit
    (``83`` -> 8.3, ``100`` -> 10.0). A major of 0 is the one digit ``0`` whatever the
    widths (libtpu 0.x: ``03`` -> 0.3). Returns None when the digits are too short.

    >>> decode_token_version("100", minor_width=1), decode_token_version("012", 2)
    ((10, 0), (0, 12))
    """
    if digits.startswith("0"):
        major_width = 1
    elif minor_width is not None:
        major_width = len(digits) - minor_width
    if not 0 < major_width < len(digits):
        return None
    return int(digits[:major_width]), int(digits[major_width:])


def version_token_reason(
    label: str,
    variant_version: tuple[int, int] | None,
    system_version: tuple[int, int] | None,
    rule: Literal["exact", "same-major"],
    *,
    token: str | None = None,
) -> str:
    """Write a rejection reason for a versioned backend token.

    ``rule="same-major"`` is the CUDA rule (same major, minor <= the system's);
    ``"exact"`` needs the same major.minor. Examples::

        CUDA 13.0 is newer than the system's CUDA 12.8
        CUDA 11.8 has another major version than the system's CUDA 12.8
        CANN 8.2 does not match the system's CANN 8.3 (an exact match is required)
    """

    def fmt(v: tuple[int, int] | None) -> str:
        return "unknown" if v is None else f"{v[0]}.{v[1]}"

    if variant_version is None:
        return f"backend token {token!r} does not encode a {label} version"
    built, have = f"{label} {fmt(variant_version)}", f"{label} {fmt(system_version)}"
    if system_version is None:
        return f"{built} cannot be checked: the system's {label} version is unknown"
    if rule == "exact":
        return f"{built} does not match the system's {have} (an exact match is required)"
    if variant_version[0] != system_version[0]:
        return f"{built} has another major version than the system's {have}"
    if variant_version > system_version:
        return f"{built} is newer than the system's {have}"
    return f"{built} is not accepted on {have}"


def arch_variant_names(system: SystemInfo, tokens: Sequence[str]) -> list[str]:
    """Arch variant names for ``tokens`` (best first) on ``system``, in preference order.

    Order: torch stable-ABI (newest ABI first, then token order), tagless torch arch,
    ABI-tagged torch arch, then tvm-ffi. Returns [] when torch is not installed and no
    tvm-ffi is present, and on free-threaded Python before 3.15.

    >>> s = SystemInfo(cpu="x86_64", os="linux", torch_version=(2, 13), cxx11_abi=True)
    >>> arch_variant_names(s, ["cu128"])[-1]
    'torch213-cxx11-cu128-x86_64-linux'
    """
    tail = f"{system.cpu}-{system.os}"
    names: list[str] = []
    if system.torch_version is not None and not system.free_threaded:  # no stable ABI there
        major, minor = system.torch_version
        for abi_minor in range(minor, STABLE_ABI_MIN_MINOR - 1, -1):
            names += [f"torch-stable-abi{major}{abi_minor}-{t}-{tail}" for t in tokens]
        names += [f"torch{major}{minor}-{t}-{tail}" for t in tokens]
        if system.cxx11_abi is not None:
            tag = "cxx11" if system.cxx11_abi else "cxx98"
            names += [f"torch{major}{minor}-{tag}-{t}-{tail}" for t in tokens]
    if system.tvm_ffi_version is not None and not system.free_threaded:
        tmaj, tmin = system.tvm_ffi_version
        names += [f"tvm-ffi{tmaj}{tmin}-{t}-{tail}" for t in tokens]
    return names


def noarch_variant_names(backend: str, *, universal: bool = True) -> list[str]:
    """``["torch-<backend>", "torch-universal"]`` (the universal one optional)."""
    return [f"torch-{backend}"] + ([UNIVERSAL] if universal else [])


def judge_archs(archs: Iterable[str], runs: Callable[[str], bool | None]) -> bool | None:
    """Combine ``runs(entry)`` (True: the device runs code built for it; None: unreadable)
    over ``backend.archs``: True when one runs, None when none is readable, else False."""
    readable = False
    for arch in archs:
        if verdict := runs(arch):
            return True
        readable = readable or verdict is False
    return False if readable else None


@record(kw_only=True)
class VariantTokens:
    """The form of a backend's arch-variant token and its compatibility rule.

    The token is ``<prefix><major><minor>`` of the runtime version (CANN 8.3 ->
    ``cann83``).

    Attributes:
        prefix: the letters, e.g. ``"cann"``.
        major_width: how many leading digits are the major (see
            :func:`decode_token_version`).
        minor_width: how many trailing digits are the minor, when that is the fixed
            part instead (CANN: 1, so CANN 10.0 is ``cann100``).
        rule: ``"exact"`` (same major.minor) or ``"same-major"`` (same major, minor up
            to the system's; every such minor is listed, newest first).
    """

    prefix: str
    major_width: int = 1
    minor_width: int | None = None
    rule: Literal["exact", "same-major"] = "exact"

    def token(self, version: tuple[int, int]) -> str:
        """The token of ``(major, minor)``: ``(8, 3)`` -> ``"cann83"``."""
        return f"{self.prefix}{version[0]}{version[1]}"

    def accepted(self, version: tuple[int, int] | None) -> list[str]:
        """The tokens accepted on a system whose runtime is ``version``, best first."""
        if version is None:
            return []
        if self.rule == "exact":
            return [self.token(version)]
        return [self.token((version[0], minor)) for minor in range(version[1], -1, -1)]

    def decode(self, token: str) -> tuple[int, int] | None:
        """``"cann83"`` -> ``(8, 3)``; None when ``token`` is not this form."""
        digits = token[len(self.prefix) :] if token.startswith(self.prefix) else ""
        if not (digits.isascii() and digits.isdigit()):
            return None
        return decode_token_version(digits, self.major_width, minor_width=self.minor_width)

    def explain(
        self, variant: Variant, label: str, system_version: tuple[int, int] | None
    ) -> str | None:
        """The ``explain_variant`` reason for ``variant`` (see :func:`version_token_reason`);
        None for a variant whose token has another prefix (not this backend's).

        >>> v = parse_variant("torch213-cxx11-cu130-x86_64-linux")
        >>> VariantTokens(prefix="cu", major_width=2, rule="same-major").explain(v, "CUDA", (12, 8))
        "CUDA 13.0 has another major version than the system's CUDA 12.8"
        """
        if variant.token is None or split_token(variant.token)[0] != self.prefix:
            return None
        return version_token_reason(
            label, self.decode(variant.token), system_version, self.rule, token=variant.token
        )
