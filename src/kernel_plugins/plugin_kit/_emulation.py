"""The vendor facts a backend declares so that its stack can be emulated on the CPU.

A plugin hands an :class:`Emulation` to its :class:`~kernel_plugins.plugin_kit.PrivateUse1Backend`;
kernel-plugins-testing (installed apart, for tests) builds the stand-ins from it. Nothing
here imports torch or the testing distribution.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from .._record import field, record

__all__ = ["Emulation", "SdkFile"]


@record
class SdkFile:
    """A file of the vendor SDK folder that the emulation writes.

    Attributes: env (the variable naming the folder, e.g. ``NEUWARE_HOME``), name (the
    file name in it), text (its content, a ``str.format`` template over the facts), fact
    (the fact the file depends on: when it is None the file is left out).
    """

    env: str
    name: str
    text: str
    fact: str


@record(kw_only=True, eq=False)
class Emulation:
    """What a vendor stack shows PyTorch, declared as data for tests without hardware.

    Attributes:
        facts: every fact ``emulate(name, **facts)`` accepts, with its default. A fact
            whose default is a string or None must be given as a string or None;
            ``capability`` must be a ``(major, minor)`` pair.
        not_properties: facts that ``torch.<type>.get_device_properties(i)`` does not
            report. It reports every other fact except ``version`` and those named by
            :attr:`version_attrs`, :attr:`sdk_file` and :attr:`distributions` (``device_name`` as ``name``,
            ``capability`` as ``major`` and ``minor``).
        functions: functions of ``torch.<type>`` by name, each given as what it returns
            computed from the facts (``{"is_bf16_supported": lambda f: ...}``).
        version_attrs: ``torch.version`` attributes the vendor sets, each naming the fact
            it holds (None: the attribute is None).
        version: the vendor package's ``__version__`` when the fact ``version`` is None
            (or absent): a template where ``{torch}`` is the installed torch ``X.Y.Z``
            and ``{torch_minor}`` its ``X.Y``.
        package_is_device_module: the vendor package is ``torch.<type>`` itself.
        vendor_ops: vendor operators other libraries import at import time; the
            stand-ins import but raise when called (no vendor kernel runs).
        sdk_file: a file of the vendor SDK folder to write, or None.
        absent: facts this vendor deliberately lacks, each with the reason shown when
            someone gives it (``{"capability": "Ascend devices report no capability"}``).
        torch_backends: ``torch.backends`` attributes the vendor package sets on import
            (``("tpu",)``); each becomes a module marked emulated.
        distributions: distributions read through their metadata only, each naming the
            fact that holds its version (``{"libtpu": "libtpu"}``); no code is emulated.
    """

    facts: Mapping[str, Any]
    not_properties: tuple[str, ...] = ()
    functions: Mapping[str, Callable[[Mapping[str, Any]], Any]] = field(default_factory=dict)
    version_attrs: Mapping[str, str | None] = field(default_factory=dict)
    version: str = "{torch}"
    package_is_device_module: bool = False
    vendor_ops: tuple[str, ...] = ()
    sdk_file: SdkFile | None = None
    absent: Mapping[str, str] = field(default_factory=dict)
    torch_backends: tuple[str, ...] = ()
    distributions: Mapping[str, str] = field(default_factory=dict)

    def properties(self) -> list[str]:
        """The facts the device properties report, in declaration order."""
        skip = {"version", *self.not_properties, *self.distributions.values(),
                *filter(None, self.version_attrs.values()), *([] if self.sdk_file is None else [self.sdk_file.fact])}
        return [name for name in self.facts if name not in skip]
