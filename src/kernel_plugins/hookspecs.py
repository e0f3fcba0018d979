"""Hook specifications every backend plugin implements.

A backend plugin is an object whose methods are decorated by :data:`hookimpl` (a
module of such functions works too), named by an entry point of the
``kernel_plugins`` group (``mlu = "kernel_plugins_mlu.hooks:MLU"``; the entry-point
name is the backend name). One object serves one backend. The built-in backends (cpu,
cuda, rocm, xpu, metal) are plugin objects of exactly this kind. The examples below show
the hooks as methods.

Each docstring follows one order: summary, when it is called, calling convention,
parameters, return value, example.
"""

from __future__ import annotations

from types import ModuleType
from typing import TYPE_CHECKING, Any

import pluggy

if TYPE_CHECKING:
    from pathlib import Path

    from .device import BackendSpec, DeviceInfo, SystemInfo
    from .provenance import KernelLoad
    from .variants import Variant

__all__ = ["hookspec", "hookimpl", "PROJECT_NAME"]

PROJECT_NAME = "kernel_plugins"

#: Marker for hook specifications (used only by this module).
hookspec = pluggy.HookspecMarker(PROJECT_NAME)
#: Marker plugins use on their hook implementations.
hookimpl = pluggy.HookimplMarker(PROJECT_NAME)


@hookspec
def backend_spec() -> BackendSpec:  # type: ignore[empty-body]
    """Declare the backend this plugin provides.

    **When:** once per plugin, the first time the plugin manager loads plugins.

    **Calling convention:** asked of every plugin separately; a plugin that raises or
    returns something other than a :class:`~kernel_plugins.device.BackendSpec` is
    reported and skipped. Two plugins declaring the same name: the second is skipped.

    :return: the backend's :class:`~kernel_plugins.device.BackendSpec`.

    Example::

        @hookimpl
        def backend_spec(self):
            return BackendSpec(name="mlu", device_type="mlu", display_name="Cambricon MLU",
                               priority=50, arch_tokens=("mlu",))
    """


@hookspec
def detect_device(index: int | None) -> DeviceInfo | None:
    """Report the devices of this backend present on the machine, with the facts of one.

    **When:** on the first call that needs devices (``get_device``, ``load``, ``list-backends``),
    with ``index`` None; with ``index`` N for a call that names device N (``"cuda:1"``). Cached.

    **Calling convention:** asked of every backend separately. It must be cheap and must
    not raise because the stack is absent: return None instead. An exception is caught and
    shown as this backend's error; it never crashes the caller (unless
    ``KERNEL_PLUGINS_STRICT=1``). Import the vendor package only when it is installed.

    :param index: the device whose name, capability and architecture to report, set as
        ``DeviceInfo.index`` (None: device 0's). Without this parameter: device 0's, noted.
    :return: a :class:`~kernel_plugins.device.DeviceInfo` when the software stack and at
        least one device are present, else None.

    Example::

        @hookimpl
        def detect_device(self, index=None):
            if importlib.util.find_spec("torch_mlu") is None:
                return None
            ...
            return DeviceInfo(backend="mlu", device_type="mlu", count=n, ...)
    """


@hookspec
def list_variants(device: DeviceInfo, system: SystemInfo) -> list[str]:  # type: ignore[empty-body]
    """Name the build variants this backend accepts on this system, best first.

    **When:** during variant resolution, for the device a kernel is loaded for.

    **Calling convention:** asked only of the backend that owns ``device``; deterministic.
    Resolution reads the backend tokens of these names (best first) and their noarch
    backends: a name in either grammar fits when its shared parts fit the system and its
    token or noarch backend is one of these; the fits are ranked as HF kernels 0.19 ranks
    them. Use :func:`kernel_plugins.variants.arch_variant_names` with the tokens in kernels
    0.19's form (``"mlu-3.13"``: both grammars follow), so that the answer is one line.

    :param device: the device a kernel is being loaded for.
    :param system: the host's :class:`~kernel_plugins.device.SystemInfo`.
    :return: variant names, best first (arch names, then ``torch-<backend>``, then
        ``torch-universal``).

    Example::

        @hookimpl
        def list_variants(self, device, system):
            return arch_variant_names(system, ["mlu-3.13"]) + noarch_variant_names("mlu")
    """


@hookspec(firstresult=True)
def explain_variant(device: DeviceInfo, system: SystemInfo, variant: Variant) -> str | None:
    """Say why a variant's backend token does not fit this device.

    **When:** during resolution, for each arch variant whose generic parts (OS, CPU,
    torch, ABI, tvm-ffi) fit but which the owner's ``list_variants`` did not accept.

    **Calling convention:** asked only of the backend that owns ``device``; optional.
    When it returns None the core writes a generic reason.

    :param device: the device a kernel is being loaded for.
    :param system: the host's system facts.
    :param variant: the parsed :class:`~kernel_plugins.variants.Variant`.
    :return: a reason naming the component and both values, e.g.
        ``"CUDA 13.0 is newer than the system's CUDA 12.8"``, or None.

    Example::

        @hookimpl
        def explain_variant(self, device, system, variant):
            return MLU_TOKENS.explain(variant, "MLU runtime", parse_version(device.runtime_version))
    """


@hookspec(firstresult=True)
def check_arch(device: DeviceInfo, archs: tuple[str, ...]) -> bool | None:
    """Say whether the device runs a build made for these architectures.

    **When:** during resolution, for the best ranked variant whose ``metadata.json`` (its
    only file fetched so far) lists ``backend.archs`` for this backend; again for the next
    one each time the answer is False.

    **Calling convention:** asked only of the owner of ``device``; optional. Pure and
    cheap: judge the facts ``detect_device`` put in ``device`` (``arch``, ``capability``).
    Raising or answering anything but True, False or None is reported and counts as None.
    :func:`kernel_plugins.variants.judge_archs` combines answers per entry.

    :param device: the device a kernel is being loaded for.
    :param archs: ``backend.archs`` as the build wrote it (1 to 1,000 strings).
    :return: True when the device runs such a build; False when not (the variant is
        refused, the trace names both architectures, the next variant is tried); None when
        the backend does not check or reads no entry (it loads, the trace says unchecked).

    Example::

        @hookimpl
        def check_arch(self, device, archs):
            return judge_archs(archs, lambda a: a == device.arch if a.startswith("mp_") else None)
    """


@hookspec(firstresult=True)
def load_kernel(device: DeviceInfo, load: KernelLoad) -> ModuleType | None:
    """Provide or prepare the import of a resolved kernel variant.

    **When:** after a variant was chosen, verified and its ``python-depends`` checked,
    just before its module is imported.

    **Calling convention:** asked only of the backend that owns ``device``; the first
    non-None answer wins. Return None to let the core importer import the variant
    (after, for example, importing the vendor package the kernel's native code needs);
    return a module to serve the kernel yourself.

    :param device: the device the kernel is loaded for.
    :param load: a :class:`~kernel_plugins.provenance.KernelLoad` (repo id, variant name,
        variant path, validated metadata, module name to import under).
    :return: the kernel module, or None.

    Example::

        @hookimpl
        def load_kernel(self, device, load):
            import torch_mlu  # noqa: F401  the kernel's .so links against it
            return None
    """


@hookspec(firstresult=True)
def locate_kernel(repo_id: str, device: DeviceInfo) -> Path | None:
    """Serve a kernel repository that ships inside the plugin distribution.

    **When:** before the Hub is asked, for a repo id that has no local override.

    **Calling convention:** asked of every backend; the first non-None answer wins.

    :param repo_id: the requested ``org/name``.
    :param device: the device the kernel is loaded for.
    :return: the absolute path of a kernel repository folder (holding ``build/``), or
        None. Anything else (``""``, a relative path, a file, a missing folder) is this
        plugin's error: it is reported and the plugin skipped, never resolved against
        the working directory. Only a folder inside the plugin's own package is trusted
        as installed; any other is loaded like a ``LOCAL_KERNELS`` path (signatures apply).

    Example::

        @hookimpl
        def locate_kernel(self, repo_id, device):
            if repo_id == "acme/mlu-ops":
                return Path(__file__).parent / "kernels" / "mlu-ops"
            return None
    """


@hookspec(firstresult=True)
def synchronize(device: DeviceInfo) -> bool | None:
    """Wait for all queued work on the device to finish (used for timing).

    **When:** by the benchmark command around each timed region.

    **Calling convention:** asked only of the backend that owns ``device``.

    :param device: the device to synchronise.
    :return: True when synchronised; None when the backend has nothing to wait for.

    Example::

        @hookimpl
        def synchronize(self, device):
            torch.mlu.synchronize()
            return True
    """


@hookspec(firstresult=True)
def explain_no_device() -> str | None:
    """Say why ``detect_device`` found no device, in one line a user can act on.

    **When:** after this backend's ``detect_device`` returned None; the answer is shown
    by ``kernel-plugins list-backends`` and in the error for a requested device.

    **Calling convention:** asked only of that backend. Optional: without it the user
    reads "no device present".

    :return: the specific cause, e.g. ``"torch_mlu is not installed"``, ``"the installed
        torch 2.13.0+cpu is not a CUDA build (torch.version.cuda is None)"`` or ``"the
        driver sees 0 devices"``; None when the backend cannot tell.

    Example::

        @hookimpl
        def explain_no_device(self):
            return None if module_installed("torch_mlu") else "torch_mlu is not installed"
    """


@hookspec(firstresult=True)
def emulate_device(count: int, facts: dict[str, Any]) -> bool | None:
    """Install stand-ins for this backend's vendor stack, for tests without hardware.

    **When:** from :func:`kernel_plugins_testing.emulate`, after the core has set up an
    emulated PrivateUse1 device named after the backend.

    **Calling convention:** asked only of the backend being emulated.

    :param count: number of emulated devices.
    :param facts: vendor facts to report (versions, device name, capability...).
    :return: True when installed; None when the backend cannot be emulated.

    Example::

        @hookimpl
        def emulate_device(self, count, facts):
            sys.modules["torch_mlu"] = make_stand_in(...)
            return True
    """


@hookspec
def paired_torch() -> str | None:
    """Name the torch release the backend's installed vendor extension was built for.

    **When:** the installed torch is outside the supported releases (the error names it).

    **Calling convention:** asked of every backend; optional.

    :return: e.g. ``"torch_mlu 1.22.0+torch2.4.0 was built for torch 2.4"``, or None.

    Example::

        @hookimpl
        def paired_torch(self):
            return "torch_acme 2.1+torch2.4 was built for torch 2.4"
    """
