"""A backend plugin's vendor stand-ins, built from the facts it declares.

A plugin declares what its vendor stack shows PyTorch as a
:class:`kernel_plugins.plugin_kit.Emulation` (data only, shipped in its wheel). Its
``emulate_device`` hook hands that to :func:`install_declared`, which puts stand-ins
next to the ``torch.<name>`` module that :func:`kernel_plugins_testing.emulate`
registered: a vendor package in ``sys.modules``, vendor attributes on ``torch.<name>``,
``torch.version`` and ``torch.backends``, sometimes an SDK folder named by an environment
variable or the metadata of the stack's distributions on ``sys.path``.
:func:`build_declared` builds the same stand-ins without installing them (tests put them
in place with ``monkeypatch``). The building blocks, for a plugin that writes its own
``emulate_device`` hook:

* :class:`StandIns`: what gets installed;
* :func:`merge_facts`: vendor facts over the plugin's defaults, validated;
* :func:`vendor_device_module`: make or configure ``torch.<name>`` for the facts;
* :func:`stand_in_package`: a vendor package module with ``__version__``;
* :func:`torch_release`: the installed torch as ``X.Y.Z`` (for default versions);
* :func:`install_stand_ins`: the body of the plugin's ``install``.

Example (a hand-written emulation, less its docs)::

    DEFAULT_FACTS = {"device_name": "Example 1", "version": None}

    def build_stand_ins(count, facts=None, *, device_module=None):
        merged = merge_facts("mlu", facts or {}, DEFAULT_FACTS, string_facts=("version",))
        module = vendor_device_module(
            "mlu", count, {"name": merged["device_name"]}, device_module=device_module
        )
        package = stand_in_package("torch_mlu", merged["version"] or torch_release())
        return StandIns(package, module)

    def install(count, facts):
        return install_stand_ins(
            "mlu", "torch_mlu", lambda m: build_stand_ins(count, facts, device_module=m)
        )

Importing this module does not import torch.
"""

from __future__ import annotations

import importlib.machinery
import os
import re
import sys
import types
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ._device_module import configure_device_module, make_device_module
from ._errors import EmulationError

if TYPE_CHECKING:
    from kernel_plugins.plugin_kit import PrivateUse1Backend

__all__ = [
    "StandIns",
    "build_declared",
    "install_declared",
    "install_stand_ins",
    "merge_facts",
    "not_emulated",
    "stand_in_package",
    "torch_release",
    "vendor_device_module",
]


@dataclass
class StandIns:
    """What a plugin's ``install`` puts in place.

    Attributes:
        package: the stand-in vendor package (may be ``device_module`` itself when the
            vendor makes ``torch.<name>`` its package).
        device_module: the ``torch.<name>`` module, configured with the vendor facts.
        version_attrs: attributes to set on ``torch.version`` (e.g. the SDK version).
        environ: environment variables to set (e.g. where the SDK is installed).
        backends: modules to set on ``torch.backends`` (what the vendor registers there).
        site: a folder with the metadata of the stack's distributions (no code), to put
            on ``sys.path``; None when there is none.
    """

    package: types.ModuleType
    device_module: types.ModuleType
    version_attrs: dict[str, Any] = field(default_factory=dict)
    environ: dict[str, str] = field(default_factory=dict)
    backends: dict[str, types.ModuleType] = field(default_factory=dict)
    site: Path | None = None


def merge_facts(
    backend: str,
    facts: Mapping[str, Any],
    defaults: Mapping[str, Any],
    *,
    string_facts: Iterable[str] = (),
    string_example: str | None = None,
    unknown_hints: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """``{**defaults, **facts}``, after checking the facts.

    Checks, in order: every fact is a key of ``defaults``; when ``defaults`` has
    ``capability``, it is a ``(major, minor)`` pair of integers >= 0 (the default is
    quoted as the example); every name in ``string_facts`` is a string or None.

    :param backend: the backend name, for the messages.
    :param string_example: quoted in the string-fact message, e.g. ``"4030"``.
    :param unknown_hints: a hint per fact name the backend deliberately lacks, added
        when such a fact is given, e.g. ``{"capability": "X devices report no compute
        capability"}``.
    :raises EmulationError: a fact is unknown or has the wrong type.
    """
    unknown = sorted(set(facts) - set(defaults))
    if unknown:
        hints = [(unknown_hints or {})[k] for k in unknown if k in (unknown_hints or {})]
        hint = f" ({'; '.join(hints)})" if hints else ""
        raise EmulationError(
            f"unknown {backend} emulation fact(s) {', '.join(unknown)}{hint}; known facts: "
            f"{', '.join(sorted(defaults))}"
        )
    merged = {**defaults, **facts}
    if "capability" in defaults:
        cap = merged["capability"]
        if (
            not isinstance(cap, (tuple, list))
            or len(cap) != 2
            or not all(isinstance(x, int) and x >= 0 for x in cap)
        ):
            example = tuple(defaults["capability"])
            raise EmulationError(
                f"fact capability={cap!r} must be a (major, minor) pair, e.g. {example}"
            )
    like = "" if string_example is None else f" (e.g. {string_example!r})"
    for key in string_facts:
        if merged[key] is not None and not isinstance(merged[key], str):
            raise EmulationError(f"fact {key}={merged[key]!r} must be a string{like} or None")
    return merged


def torch_release() -> str:
    """The installed torch's version as ``X.Y.Z`` (``"2.13.0"``; imports torch).

    A version that does not start with ``X.Y.Z`` is returned whole.
    """
    import torch

    m = re.match(r"^\d+\.\d+\.\d+", str(torch.__version__))
    return m.group(0) if m else str(torch.__version__)


def vendor_device_module(
    backend: str,
    count: int,
    properties: Mapping[str, Any],
    *,
    extra: dict[str, Any] | None = None,
    device_module: types.ModuleType | None = None,
) -> types.ModuleType:
    """Configure ``device_module`` (or build a new ``torch.<backend>``) for the vendor.

    :param count: number of devices; with 0 the module has no device properties.
    :param properties: the properties every device reports (a ``name`` and the vendor
        fields), see :func:`kernel_plugins_testing.configure_device_module`.
    :param extra: vendor functions and values to set on the module.
    :param device_module: the emulated ``torch.<backend>`` to configure; None builds a
        new one with :func:`kernel_plugins_testing.make_device_module`.
    """
    props: list[object] = [dict(properties)] if count > 0 else []
    if device_module is None:
        return make_device_module(backend, count, properties=props, extra=extra)
    configure_device_module(device_module, properties=props, extra=extra)
    return device_module


def not_emulated(vendor_module: str, name: str) -> Callable[..., Any]:
    """A stand-in for the vendor operator ``vendor_module.name``: importing it works (as
    libraries do at import time), calling it raises
    :class:`~kernel_plugins_testing.EmulationError` (emulation runs no vendor kernels)."""

    def operator(*args: Any, **kwargs: Any) -> Any:
        raise EmulationError(
            f"{vendor_module}.{name} is a vendor kernel, and the emulated {vendor_module} does "
            f"not run vendor kernels; use a code path without it under emulation (e.g. "
            f"attn_implementation='sdpa' or 'eager' in transformers)"
        )

    operator.__name__ = operator.__qualname__ = name
    operator.__module__ = vendor_module
    operator.__kernel_plugins_emulated__ = True  # type: ignore[attr-defined]
    return operator


def stand_in_package(
    vendor_module: str, version: str, *, vendor_ops: Iterable[str] = ()
) -> types.ModuleType:
    """A module named ``vendor_module`` with ``__version__``, marked as emulated.

    It has a ``__spec__`` (so ``importlib.util.find_spec`` finds it once it is in
    ``sys.modules``) and ``__kernel_plugins_emulated__ = True``.

    :param vendor_ops: names of the vendor package's operators that other libraries
        import (e.g. ``npu_fusion_attention``); each becomes a :func:`not_emulated` stub.
    """
    package = types.ModuleType(
        vendor_module, f"Stand-in for {vendor_module} (EMULATED on CPU, not hardware)."
    )
    package.__spec__ = importlib.machinery.ModuleSpec(vendor_module, None)
    package.__version__ = version  # type: ignore[attr-defined]
    package.__kernel_plugins_emulated__ = True  # type: ignore[attr-defined]
    for name in vendor_ops:
        setattr(package, name, not_emulated(vendor_module, name))
    return package


def install_stand_ins(
    backend: str, vendor_module: str, build: Callable[[types.ModuleType], StandIns]
) -> bool:
    """Install stand-ins next to the emulated ``torch.<backend>`` (a plugin's ``install``).

    Calls ``build(torch.<backend>)``, then puts the package in
    ``sys.modules[vendor_module]``, sets ``version_attrs`` on ``torch.version``,
    ``backends`` on ``torch.backends`` and ``environ`` in ``os.environ``, and puts
    ``site`` first on ``sys.path``.

    :return: True (the ``emulate_device`` hook's "installed").
    :raises EmulationError: ``torch.<backend>`` is missing or not emulated; the
        message says to call :func:`kernel_plugins_testing.emulate` first.
    """
    import torch

    module = getattr(torch, backend, None)
    if module is None or not getattr(module, "__kernel_plugins_emulated__", False):
        raise EmulationError(
            f"torch.{backend} is missing or is not an emulated module: emulate the device "
            f"with kernel_plugins_testing.emulate('{backend}'), which calls this hook"
        )
    stand = build(module)
    sys.modules[vendor_module] = stand.package
    for key, value in stand.version_attrs.items():
        setattr(torch.version, key, value)
    for key, value in stand.backends.items():
        setattr(torch.backends, key, value)
    os.environ.update(stand.environ)
    if stand.site is not None:
        sys.path.insert(0, str(stand.site))
        importlib.invalidate_caches()
    return True


def _default_version(template: str) -> str:
    """The template of :attr:`Emulation.version` with the installed torch filled in."""
    release = torch_release()
    return template.format(torch=release, torch_minor=".".join(release.split(".")[:2]))


def _folder(backend: str, kind: str, workdir: Path | None) -> Path:
    """``workdir/<backend>-<kind>``, or a temporary folder removed at exit."""
    if workdir is None:
        import atexit
        import shutil
        import tempfile

        home = Path(tempfile.mkdtemp(prefix=f"kp-emulated-{backend}-{kind}-"))
        atexit.register(shutil.rmtree, home, True)
    else:
        home = workdir / f"{backend}-{kind}"
        home.mkdir(parents=True, exist_ok=True)
    return home


def _sdk_home(backend: str, text: str | None, name: str, workdir: Path | None) -> Path:
    """A folder for the emulated SDK: ``workdir/<backend>-sdk``, or a temporary one."""
    home = _folder(backend, "sdk", workdir)
    if text is None:
        (home / name).unlink(missing_ok=True)
    else:
        (home / name).write_text(text, encoding="utf-8")
    return home


_DIST_VERSION_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9.+!_-]*$")


def _metadata_site(backend: str, versions: Mapping[str, str], workdir: Path | None) -> Path:
    """A folder holding ``<name>-<version>.dist-info/METADATA`` for each distribution.

    :raises EmulationError: a version is not a plain version string (it names a folder).
    """
    site = _folder(backend, "site", workdir)
    for name, version in versions.items():
        if not _DIST_VERSION_RE.match(version):
            raise EmulationError(f"distribution {name} version {version!r} is not a version, "
                                 "e.g. '0.0.51'")
        info = site / f"{name.replace('-', '_')}-{version}.dist-info"
        info.mkdir(exist_ok=True)
        (info / "METADATA").write_text(
            f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n"
            "Summary: EMULATED stand-in: metadata only, no code\n",
            encoding="utf-8",
        )
    return site


def _backends_module(vendor_module: str, name: str) -> types.ModuleType:
    """What ``vendor_module`` registers as ``torch.backends.<name>``, marked emulated."""
    module = types.ModuleType(
        f"torch.backends.{name}",
        f"Stand-in for {vendor_module}'s torch.backends.{name} (EMULATED on CPU, not hardware).",
    )
    module.__kernel_plugins_emulated__ = True  # type: ignore[attr-defined]
    return module


def build_declared(
    backend: PrivateUse1Backend,
    count: int,
    facts: Mapping[str, Any] | None = None,
    *,
    device_module: types.ModuleType | None = None,
    workdir: Path | None = None,
) -> StandIns:
    """The stand-ins of ``backend``'s declared :class:`~kernel_plugins.plugin_kit.Emulation`.

    :param count: number of devices (0: the stack is present without devices).
    :param facts: overrides of the declared facts (checked by :func:`merge_facts`).
    :param device_module: the emulated ``torch.<type>`` to configure; None builds one.
    :param workdir: where to write the SDK folder and the distributions' metadata, if the
        backend declares them (default: temporary folders removed at exit).
    :raises EmulationError: the backend declares no emulation, or a fact is wrong.
    """
    decl = backend.emulation
    if decl is None:
        raise EmulationError(f"the {backend.name} backend declares no emulation facts")
    defaults = dict(decl.facts)
    merged = merge_facts(backend.name, facts or {}, defaults, unknown_hints=decl.absent)
    for key, default in defaults.items():  # a fact whose default is text takes text
        value = merged[key]
        if (default is None or isinstance(default, str)) and not isinstance(value, (str, type(None))):
            like = f" (e.g. {default!r})" if isinstance(default, str) else ""
            raise EmulationError(f"fact {key}={value!r} must be a string{like} or None")
    props: dict[str, Any] = {}
    for key in decl.properties():
        if key == "capability":
            props["major"], props["minor"] = (int(x) for x in merged[key])
        else:
            props["name" if key == "device_name" else key] = merged[key]
    extra: dict[str, Any] = {
        name: _returning(name, compute(merged)) for name, compute in decl.functions.items()
    }
    version = merged.get("version") or _default_version(decl.version)
    if decl.package_is_device_module:
        extra["__version__"] = version
    module = vendor_device_module(backend.dtype, count, props, extra=extra, device_module=device_module)
    if decl.package_is_device_module:
        module.__spec__ = importlib.machinery.ModuleSpec(backend.vendor_module, None)
        package = module
    else:
        package = stand_in_package(backend.vendor_module, version, vendor_ops=decl.vendor_ops)
    attrs = {a: (None if f is None else merged[f]) for a, f in decl.version_attrs.items()}
    environ: dict[str, str] = {}
    sdk = decl.sdk_file
    if sdk is not None:
        text = None if merged[sdk.fact] is None else sdk.text.format(**merged)
        environ[sdk.env] = str(_sdk_home(backend.name, text, sdk.name, workdir))
    backends = {name: _backends_module(backend.vendor_module, name) for name in decl.torch_backends}
    versions = {d: merged[f] for d, f in decl.distributions.items() if merged[f] is not None}
    site = _metadata_site(backend.name, versions, workdir) if decl.distributions else None
    return StandIns(package, module, attrs, environ, backends, site)


def _returning(name: str, value: Any) -> Callable[..., Any]:
    """A vendor function of ``torch.<type>`` that answers ``value`` whatever it is asked."""

    def function(*args: Any, **kwargs: Any) -> Any:
        return value

    function.__name__ = function.__qualname__ = name
    function.__doc__ = f"Emulated: always {value!r} (a declared vendor fact)."
    return function


def install_declared(backend: PrivateUse1Backend, count: int, facts: Mapping[str, Any]) -> bool:
    """Install ``backend``'s declared stand-ins next to the emulated ``torch.<type>``.

    The body of :meth:`PrivateUse1Backend.emulate_device`; :func:`kernel_plugins_testing.emulate`
    must have created the PrivateUse1 device first.
    """
    return install_stand_ins(
        backend.dtype,
        backend.vendor_module,
        lambda module: build_declared(backend, count, facts, device_module=module),
    )
