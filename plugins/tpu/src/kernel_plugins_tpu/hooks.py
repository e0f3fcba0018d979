"""The Google TPU backend: the plugin object :data:`TPU` (entry point ``tpu``).

Targets Google's ``torch_tpu``. It registers itself through torch's device-backend
autoload and sets ``torch.backends.tpu`` when it is imported, whether or not the host has
TPU chips; ``torch.tpu`` exists only on hosts with TPU devices. So detection (the
``detect_device`` method of :class:`TpuBackend`; the other hooks come from
:class:`~kernel_plugins.plugin_kit.PrivateUse1Backend`) asks for ``torch.backends.tpu``
(as kernels 0.17.2) or ``torch.accelerator`` (as kernels 0.19) first, then for devices in
``torch.tpu``.
TPU kernels are Pallas kernels (jax) wrapped for torch: only noarch variants
(``torch-tpu``, ``torch-universal``) load, and ``python-depends`` may name ``jax`` and
``libtpu``. The runtime is libtpu, whose releases are numbered 0.x; its version is read
from the distribution's metadata (nothing is imported for it). The priority is above
Neuron's and CUDA's: kernels 0.17.2 checks TPU before both. The device's architecture is
its generation as Cloud TPU names it (``v6e`` for a "TPU v6 lite", :func:`tpu_generation`),
judged against a build's ``backend.archs`` by :func:`runs_tpu_arch`. See docs/vendors.md.
"""

from __future__ import annotations

import re
from importlib import metadata
from types import ModuleType

from kernel_plugins.plugin_kit import (
    DeviceInfo,
    Emulation,
    PrivateUse1Backend,
    PyDepend,
    RuntimeReading,
    RuntimeVersion,
    VendorDevices,
    check_privateuse1_free,
    device_name_of,
    hookimpl,
    import_vendor,
    module_installed,
    no_torch_reason,
    torch_if_installed,
    unparsable_note,
)

#: The distributions that ship libtpu, newest naming first.
LIBTPU_DISTRIBUTIONS = ("libtpu", "libtpu-nightly")
_LIBTPU_RE = re.compile(r"^(\d+)\.(\d+)(?:\.(\d+))?")


def parse_libtpu_version(text: object) -> tuple[int, ...] | None:
    """``"0.0.51"`` -> ``(0, 0, 51)``, ``"0.1.dev20240610"`` -> ``(0, 1)``; None when unreadable."""
    m = _LIBTPU_RE.match(text) if isinstance(text, str) else None
    return None if m is None else tuple(int(g) for g in m.groups() if g is not None)


def read_libtpu_version() -> RuntimeReading:
    """The version in libtpu's distribution metadata (``libtpu``, else ``libtpu-nightly``)."""
    for name in LIBTPU_DISTRIBUTIONS:
        try:
            text = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
        if parse_libtpu_version(text) is None:
            return RuntimeReading(text, unparsable_note(f"{name} version", text, "e.g. '0.0.51'"))
        return RuntimeReading(text)
    return RuntimeReading(None, "libtpu is not installed (torch_tpu needs it: pip install libtpu)")


def tpu_generation(device_name: str | None) -> str | None:
    """``"TPU v6 lite"`` -> ``"v6e"``, ``"TPU v5 lite"`` -> ``"v5e"``, ``"TPU v5"`` ->
    ``"v5p"``, ``"TPU v4"`` -> ``"v4"``; None for another name (device names unverified)."""
    m = re.fullmatch(r"tpu\s*v?([0-9]+)\s*(lite|[a-z])?", (device_name or "").strip().lower())
    if m is None:
        return None
    return f"v{m[1]}" + ("e" if m[2] == "lite" else m[2] or ("p" if m[1] == "5" else ""))


def runs_tpu_arch(device: DeviceInfo, arch: str) -> bool | None:
    """Whether ``arch`` (a generation: ``v5e``, ``v5p``, ``v6e``) is the device's; None:
    not a generation, or the device's is unknown."""
    name = arch.strip().lower()
    if device.arch is None or not re.fullmatch(r"v[0-9]+[a-z]?", name):
        return None
    return name == device.arch


def stack_loaded(torch: ModuleType) -> bool:
    """Whether Google's torch_tpu is loaded: it sets ``torch.backends.tpu`` on import, or
    ``torch.accelerator`` names ``tpu`` as the current accelerator (kernels 0.19 asks that)."""
    if hasattr(torch.backends, "tpu"):
        return True
    try:
        current = torch.accelerator.current_accelerator()
    except Exception:  # noqa: BLE001 - an old torch (no torch.accelerator) or no accelerator
        return False
    return getattr(current, "type", None) == "tpu"


def _device_name(module: object, index: int = 0) -> str | None:
    """``torch.tpu.get_device_properties(index).name``, when that exists (the name is optional)."""
    try:
        return device_name_of(module.get_device_properties(index))  # type: ignore[attr-defined]
    except Exception:  # noqa: BLE001 - the torch.tpu.* names beyond device_count are unverified
        return None


class TpuBackend(PrivateUse1Backend):
    """The TPU backend: the PrivateUse1 facts, with its own detection."""

    @hookimpl
    def detect_device(self, index: int | None = None) -> DeviceInfo | None:
        """TPU devices: ``torch_tpu`` imported, ``torch.backends.tpu`` set, ``torch.tpu`` has some;
        device ``index``'s name and generation (None: 0's).

        ``torch_tpu`` is never imported while another backend owns PrivateUse1 here (that
        is a :class:`~kernel_plugins.errors.PluginError` naming both).
        """
        torch = torch_if_installed()
        if torch is None or not module_installed(self.vendor_module):
            return None
        check_privateuse1_free(self.vendor_module, self.name)
        vendor = import_vendor(self.vendor_module, self.import_hint)
        module = getattr(torch, self.dtype, None)
        if not stack_loaded(torch) or module is None or not module.is_available():
            return None
        count = int(module.device_count())
        if count <= 0:
            return None
        runtime = self.runtime
        reading = RuntimeReading(None) if runtime is None else runtime.reading(torch, self.name)
        found = VendorDevices(self.name, self.dtype, torch, vendor, module, count, index)
        name = _device_name(module, index or 0)
        return found.info(
            runtime_version=reading.text,
            name=name,
            notes=() if reading.note is None else (reading.note,),
            arch=tpu_generation(name),
        )

    @hookimpl
    def explain_no_device(self) -> str | None:
        """torch, torch_tpu, ``torch.backends.tpu``, then the devices of ``torch.tpu``."""
        torch = torch_if_installed()
        if torch is None:
            return no_torch_reason()
        if not module_installed(self.vendor_module):
            return f"{self.vendor_module} (the {self.display_name} extension) is not installed"
        if not stack_loaded(torch):
            return (
                f"{self.vendor_module} is installed but torch.backends.tpu is not set: it did not "
                f"register itself with torch {torch.__version__}; {self.import_hint}"
            )
        if getattr(torch, self.dtype, None) is None:
            return (
                "torch_tpu is loaded (torch.backends.tpu is set) but torch.tpu does not exist: "
                "torch_tpu creates it only on hosts with TPU devices"
            )
        return (
            "torch.tpu sees 0 TPU devices (check that this host's TPU chips are visible and "
            "not held by another process)"
        )


TPU = TpuBackend(
    name="tpu",
    display_name="Google TPU",
    vendor_module="torch_tpu",
    import_hint="install the torch_tpu release that matches torch, with jax and libtpu",
    priority=120,
    capability_label="capability (not reported by TPU)",
    reports_capability=False,
    runtime=RuntimeVersion(
        label="libtpu",
        parse=parse_libtpu_version,
        read=read_libtpu_version,
        advice="pip install libtpu",
    ),
    python_depends={"jax": PyDepend("jax", "jax"), "libtpu": PyDepend("libtpu", "libtpu")},
    accelerator_sync=True,
    arch_runs=runs_tpu_arch,
    noarch_reason=(
        "TPU kernels are Pallas kernels (jax) compiled at run time and ship as the noarch "
        "variant torch-tpu"
    ),
    # What torch_tpu shows PyTorch (see the README): torch.tpu with the devices,
    # torch.backends.tpu, and libtpu's distribution metadata. Every default is
    # illustrative; the torch.tpu.* names beyond the generic ones are unverified, so
    # nothing vendor-specific is added. jax is NOT emulated (a kernel needing it fails as
    # on a machine without it), nor is libtpu's code (only its version is shown).
    emulation=Emulation(
        facts={
            "device_name": "TPU v6 lite",
            "total_memory": 32 << 30,
            "version": None,
            "libtpu": "0.0.51",
        },
        version="{torch_minor}.0",
        torch_backends=("tpu",),
        distributions={"libtpu": "libtpu"},
        absent={"capability": "TPU devices report no compute capability"},
    ),
)
