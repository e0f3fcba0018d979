"""The Moore Threads MUSA backend: the plugin object :data:`MUSA` (entry point ``musa``).

Vendor facts only; :class:`~kernel_plugins.plugin_kit.PrivateUse1Backend` provides the
hooks as methods. Arch variants carry the token ``musa<major><minor>`` of the MUSA SDK in
``torch.version.musa`` and need an exact major.minor match; ``torch-musa`` and
``torch-universal`` follow. The device's architecture is ``mp_<major*10+minor>``, judged
against a build's ``backend.archs`` by :func:`~.versions.runs_musa_arch`.
"""

from __future__ import annotations

from kernel_plugins.plugin_kit import (
    Emulation,
    PrivateUse1Backend,
    RuntimeVersion,
    VariantTokens,
)

from .versions import musa_arch, musa_target, parse_musa_version, runs_musa_arch

MUSA = PrivateUse1Backend(
    name="musa",
    display_name="Moore Threads MUSA",
    vendor_module="torch_musa",
    import_hint=(
        "check that the MUSA SDK libraries (libmusart) are on LD_LIBRARY_PATH and match torch_musa"
    ),
    capability_label="MUSA architecture (major*10+minor)",
    runtime=RuntimeVersion(
        label="MUSA",
        parse=parse_musa_version,
        torch_attr="musa",
        expected="major*1000+minor*10+patch, e.g. '4030' for MUSA 4.3.0",
        advice="install a torch_musa build that records its MUSA SDK",
    ),
    tokens=VariantTokens(prefix="musa"),
    read_arch=musa_target, arch_runs=runs_musa_arch,  # mp_22 and friends, see .versions
    # What torch_musa shows PyTorch (see the README): torch_musa IS torch.musa. Every
    # default is illustrative, not a product's data sheet.
    emulation=Emulation(
        facts={
            "device_name": "MTT S4000",
            "capability": (2, 2),
            "total_memory": 48 << 30,
            "multi_processor_count": 128,
            "is_multi_gpu_board": False,
            "is_integrated": False,
            "runtime": "4030",  # torch.version.musa: SDK 4.3.0
            "version": "2.7.1+5ee0a64",
        },
        functions={
            "is_bf16_supported": lambda facts: musa_arch(facts["capability"]) >= 22,
            "get_arch_list": lambda facts: [f"mp_{musa_arch(facts['capability'])}"],
        },
        version_attrs={"musa": "runtime"},
        package_is_device_module=True,
    ),
)
