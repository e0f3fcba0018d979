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
from .device import SystemInfo, version_text
from .errors import VariantNameError

__all__ = [
    "Variant", "parse_variant", "validate_variant_name", "arch_variant_names", "noarch_variant_names", "split_token",
    "decode_token_version", "version_token_reason", "UNIVERSAL", "VariantTokens", "judge_archs",
]

UNIVERSAL = "torch-universal"
MAX_NAME_LENGTH = 128
#: Backends whose legacy token prefix is not their 0.19 name (``cu128`` is ``cuda-12.8``).
NEW_NAMES = {"cu": "cuda"}
_LEGACY_PREFIX = {new: old for old, new in NEW_NAMES.items()}
#: The Python part of a legacy name (implicit): CPython 3.9 or later, the abi3 stable ABI.
LEGACY_PYTHON = (3, 9)
#: The oldest Python whose free-threaded build loads ``abi3t`` extensions (PEP 803).
ABI3T_MIN_PYTHON = (3, 15)

Kind = Literal["arch", "stable-abi", "tvm-ffi", "noarch", "universal", "sdk"]

_TAIL = r"-(?P<cpu>x86_64|aarch64)-(?P<os>linux|darwin|windows)"
_PY = r"-cpython-(?P<pM>[0-9]+)\.(?P<pm>[0-9]+)-(?P<pabi>abi3t?)"
_BACKEND = r"(?P<b>[a-z]+)(?:-(?P<bM>[0-9]+)\.(?P<bm>[0-9]+))?"
# The arch forms, one match per name (resolution parses hundreds): legacy (torch210-cxx11-cu128-...,
# torch-stable-abi211-..., tvm-ffi01-...) and 0.19 (torch-2.10-cuda-12.8-cpython-3.9-abi3-...).
_ARCH_RE = re.compile(
    r"(?:(?:torch-stable-abi(?P<s>[0-9]{2,})|torch(?P<a>[0-9]{2,})(?:-(?P<abi>cxx11|cxx98))?"
    r"|tvm-ffi(?P<t>[0-9]{2,}))-(?P<token>[a-z]+[0-9]*)"
    r"|(?:torch-stable-abi-(?P<ns>[0-9]+\.[0-9]+)|torch-(?P<na>[0-9]+\.[0-9]+)(?:-(?P<nabi>cxx11|cxx98))?"
    r"|tvm-ffi-(?P<nt>[0-9]+\.[0-9]+))-" + _BACKEND + _PY + ")" + _TAIL
)
_SDK_RE = re.compile(r"sdk(?:-" + _BACKEND + ")?(?:" + _PY + _TAIL + ")?")
_NOARCH_RE = re.compile(r"(?P<fw>torch|mlx)-(?P<backend>[a-z][a-z0-9_]*)")
_SAFE_NAME_RE = re.compile(r"[a-z0-9_.\-]+")
_TOKEN_RE = re.compile(r"^(?P<prefix>[a-z]+)(?P<digits>[0-9]*)$")


class Variant(NamedTuple):
    """A parsed build-variant name, in either grammar (an immutable named tuple: cheap to
    build by the hundred). A 0.19 name and its legacy twin parse to the same parts.

    Attributes:
        name: the folder name under ``build/``.
        kind: ``arch`` (torch + ABI tag or tagless), ``stable-abi``, ``tvm-ffi``,
            ``noarch`` (``torch-<backend>``, ``mlx-<backend>``), ``universal``
            (``torch-universal``, ``mlx-universal``) or ``sdk`` (no framework).
        version: torch version (arch), stable-ABI version or tvm-ffi version, as
            ``(major, minor)``; None for the others.
        abi: ``"cxx11"``/``"cxx98"`` for ABI-tagged arch variants, else None.
        token: the backend token in the legacy form (``cu128`` for ``cu128`` and
            ``cuda-12.8``; ``cann83``, ``cpu``), None when the name has no compiled backend.
        cpu: ``x86_64``/``aarch64`` or None. os: ``linux``/``darwin``/``windows`` or None.
        noarch_backend: the backend of a noarch, universal (``universal``) or ``sdk-<backend>``
            variant.
        python: the oldest CPython the compiled parts load in (legacy names: 3.9), or None.
        python_abi: ``abi3`` or ``abi3t`` (free-threaded, Python >= 3.15) with :attr:`python`.
        framework: ``mlx`` for ``mlx-<backend>``, else None.
    """

    name: str
    kind: Kind
    version: tuple[int, int] | None = None
    abi: str | None = None
    token: str | None = None
    cpu: str | None = None
    os: str | None = None
    noarch_backend: str | None = None
    python: tuple[int, int] | None = None
    python_abi: str | None = None
    framework: str | None = None

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
    m = (_ARCH_RE.fullmatch(name) or _SDK_RE.fullmatch(name)) if len(name) <= MAX_NAME_LENGTH else None
    v = _from_match(name, m) if m else None
    if isinstance(v, Variant):
        return v
    if v:
        raise VariantNameError(f"variant name {name!r}: {v}")
    m = _NOARCH_RE.fullmatch(name) if len(name) <= MAX_NAME_LENGTH else None
    if m and not name.startswith("torch-stable-abi"):
        backend, fw = m.group("backend", "fw")
        return Variant(name, "universal" if backend == "universal" else "noarch", noarch_backend=backend,
                       framework=None if fw == "torch" else fw)
    validate_variant_name(name)
    raise VariantNameError(
        f"variant name {name!r} has no known form: expected e.g. torch210-cxx11-cu128-x86_64-linux, "
        "torch-2.10-cuda-12.8-cpython-3.9-abi3-x86_64-linux (also torch-stable-abi..., tvm-ffi...), "
        "sdk[-<backend>][-cpython-...], torch-<backend>, mlx-<backend> or torch-universal")


def _from_match(name: str, m: re.Match[str]) -> Variant | str:
    """The :class:`Variant` of an arch or sdk match, or why its parts do not fit together."""
    g = m.groupdict()
    legacy = g.get("token") is not None
    python, python_abi, token = (LEGACY_PYTHON, "abi3", g["token"]) if legacy else (None, g["pabi"], None)
    if not legacy:
        if g["b"] in NEW_NAMES:
            return f"the backend is {NEW_NAMES[g['b']]!r} in a 0.19 name ({g['b']!r} is the legacy prefix)"
        if g["bM"] is not None and g["pM"] is None:
            return "a versioned sdk backend needs the -cpython-<P>.<Q>-<abi>-<cpu>-<os> part"
        if g["pM"] is not None:
            python = (int(g["pM"]), int(g["pm"]))
            if python_abi == "abi3t" and python < ABI3T_MIN_PYTHON:
                return "abi3t (free-threaded stable ABI) needs Python >= 3.15, the name says {}.{}".format(*python)
        if g["b"] is not None:
            token = _LEGACY_PREFIX.get(g["b"], g["b"]) + ("" if g["bM"] is None else f"{int(g['bM'])}{int(g['bm'])}")
    if name.startswith("sdk"):
        if python is None:  # sdk or sdk-<backend>: nothing compiled
            return Variant(name, "sdk", noarch_backend=g["b"])
        return Variant(name, "sdk", None, None, token, g["cpu"], g["os"], None, python, python_abi)
    kind: Kind = "stable-abi" if g["s"] or g["ns"] else "arch" if g["a"] or g["na"] else "tvm-ffi"
    digits = g["s"] or g["a"] or g["t"]  # legacy: one digit of major (torch210 = 2.10, tvm-ffi01 = 0.1)
    major, minor = (digits[0], digits[1:]) if digits else (g["ns"] or g["na"] or g["nt"]).split(".")
    return Variant(name, kind, (int(major), int(minor)), g["abi"] or g["nabi"], token, g["cpu"], g["os"], None,
                   python, python_abi)


def split_token(token: str) -> tuple[str, str]:
    """Split a backend token into letters and digits: ``"cu128"`` -> ``("cu", "128")``."""
    m = _TOKEN_RE.match(token)
    if not m:
        raise VariantNameError(f"backend token {token!r} is not letters followed by digits")
    return m.group("prefix"), m.group("digits")


def decode_token_version(digits: str, major_width: int = 1, *,
                         minor_width: int | None = None) -> tuple[int, int] | None:
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


def version_token_reason(label: str, variant_version: tuple[int, int] | None, system_version: tuple[int, int] | None,
                         rule: Literal["exact", "same-major"], *, token: str | None = None) -> str:
    """Write a rejection reason for a versioned backend token.

    ``rule="same-major"`` is the CUDA rule (same major, minor <= the system's);
    ``"exact"`` needs the same major.minor. Examples::

        CUDA 13.0 is newer than the system's CUDA 12.8
        CUDA 11.8 has another major version than the system's CUDA 12.8
        CANN 8.2 does not match the system's CANN 8.3 (an exact match is required)
    """
    if variant_version is None:
        return f"backend token {token!r} does not encode a {label} version"
    built, have = f"{label} {version_text(variant_version)}", f"{label} {version_text(system_version)}"
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
    """Compiled variant names for ``tokens`` (best first, in either grammar: ``cu128`` or
    ``cuda-12.8``) on ``system``, in kernels' preference order.

    Order: torch stable-ABI (the torch's own version; older stable ABIs fit too), tagless torch arch,
    ABI-tagged torch arch, tvm-ffi, then ``sdk-<token>-cpython-...`` for each token given in
    the 0.19 form (or unversioned). The names are legacy on a Python with a GIL; on a
    free-threaded one (abi3 cannot load there) they are 0.19 names with ``abi3t``, for the
    tokens given in the 0.19 form, and none before Python 3.15.

    >>> s = SystemInfo(cpu="x86_64", os="linux", torch_version=(2, 13), cxx11_abi=True)
    >>> arch_variant_names(s, ["cuda-12.8"])[-2:]
    ['torch213-cxx11-cu128-x86_64-linux', 'sdk-cuda-12.8-cpython-3.11-abi3-x86_64-linux']
    """
    free = system.free_threaded
    if free and system.python_version < ABI3T_MIN_PYTHON:
        return []
    # (legacy token, 0.19 form or None): "cuda-12.8" -> ("cu128", "cuda-12.8"), "cu128" -> ("cu128", None)
    pairs = [(_LEGACY_PREFIX.get(n, n) + v.replace(".", "") if v else t, t if v or t.isalpha() else None)
             for t in tokens for n, _, v in [t.partition("-")]]
    py = "cpython-{}.{}-abi3{}".format(*system.python_version, "t" if free else "")
    tail = f"{system.cpu}-{system.os}"

    def names_of(old_framework: str, new_framework: str) -> list[str]:
        if free:
            return [f"{new_framework}-{new}-{py}-{tail}" for _, new in pairs if new]
        return [f"{old_framework}-{old}-{tail}" for old, _ in pairs]

    names: list[str] = []
    if system.torch_version is not None:
        major, minor = system.torch_version
        names += names_of(f"torch-stable-abi{major}{minor}", f"torch-stable-abi-{major}.{minor}")
        names += names_of(f"torch{major}{minor}", f"torch-{major}.{minor}")
        if system.cxx11_abi is not None:
            tag = "cxx11" if system.cxx11_abi else "cxx98"
            names += names_of(f"torch{major}{minor}-{tag}", f"torch-{major}.{minor}-{tag}")
    if (tvm := system.tvm_ffi_version) is not None:
        names += names_of("tvm-ffi{}{}".format(*tvm), "tvm-ffi-{}.{}".format(*tvm))
    return names + [f"sdk-{new}-{py}-{tail}" for _, new in pairs if new]


def noarch_variant_names(backend: str) -> list[str]:
    """``["torch-<backend>", "torch-universal"]``."""
    return [f"torch-{backend}", UNIVERSAL]


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

    One runtime version gives both grammars: the legacy token ``<prefix><major><minor>``
    (CANN 8.3 -> ``cann83``) and the 0.19 form ``<name>-<major>.<minor>`` (``cann-8.3``;
    the name is the prefix, except CUDA's ``cu`` -> ``cuda``). Both resolve alike.

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
        """The legacy token of ``(major, minor)``: ``(8, 3)`` -> ``"cann83"``."""
        return f"{self.prefix}{version[0]}{version[1]}"

    def form(self, version: tuple[int, int]) -> str:
        """The 0.19 form of ``(major, minor)``: ``(8, 3)`` -> ``"cann-8.3"``."""
        return f"{NEW_NAMES.get(self.prefix, self.prefix)}-{version[0]}.{version[1]}"

    def accepted(self, version: tuple[int, int] | None) -> list[str]:
        """The tokens accepted on a system whose runtime is ``version``, best first, in the
        0.19 form (:func:`arch_variant_names` writes both grammars from it)."""
        if version is None:
            return []
        if self.rule == "exact":
            return [self.form(version)]
        return [self.form((version[0], minor)) for minor in range(version[1], -1, -1)]

    def decode(self, token: str) -> tuple[int, int] | None:
        """``"cann83"`` -> ``(8, 3)``; None when ``token`` is not this form."""
        digits = token[len(self.prefix) :] if token.startswith(self.prefix) else ""
        if not (digits.isascii() and digits.isdigit()):
            return None
        return decode_token_version(digits, self.major_width, minor_width=self.minor_width)

    def explain(self, variant: Variant, label: str, system_version: tuple[int, int] | None) -> str | None:
        """The ``explain_variant`` reason for ``variant`` (see :func:`version_token_reason`);
        None for a variant whose token has another prefix (not this backend's).

        >>> v = parse_variant("torch213-cxx11-cu130-x86_64-linux")
        >>> VariantTokens(prefix="cu", major_width=2, rule="same-major").explain(v, "CUDA", (12, 8))
        "CUDA 13.0 has another major version than the system's CUDA 12.8"
        """
        if variant.token is None or split_token(variant.token)[0] != self.prefix:
            return None
        return version_token_reason(label, self.decode(variant.token), system_version, self.rule, token=variant.token)
