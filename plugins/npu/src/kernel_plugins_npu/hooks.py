"""The Huawei Ascend NPU backend: the plugin object :data:`NPU` (entry point ``npu``).

Vendor facts only; :class:`~kernel_plugins.plugin_kit.PrivateUse1Backend` provides the
hooks as methods. Arch variants carry the token ``cann<major><minor>`` of ``torch.version.cann``
(the existing Hub convention; the minor is the last digit), or ``cann-<major>.<minor>`` in
kernels 0.19's names, and need an exact major.minor match; ``torch-cann`` (kernels 0.19's
noarch name), ``torch-npu`` and ``torch-universal`` follow. Ascend devices report
no compute capability.
"""

from __future__ import annotations

from collections.abc import Iterator

from kernel_plugins.plugin_kit import (
    Emulation,
    PrivateUse1Backend,
    RuntimeVersion,
    VariantTokens,
    VendorDevices,
)

from .versions import built_for_torch, parse_cann_version, runs_npu_arch, soc_family, soc_name


def soc_notes(found: VendorDevices) -> Iterator[str]:
    """``SoC version 223 (Ascend 910B family)``, when ``torch.npu.get_soc_version`` exists."""
    get = getattr(found.module, "get_soc_version", None)
    if get is None:
        return
    try:
        soc = get()
    except Exception as e:  # noqa: BLE001 - informational only
        yield f"torch.npu.get_soc_version() failed: {type(e).__name__}: {e}"
        return
    family = soc_family(soc)
    yield f"SoC version {soc}" + (f" ({family} family)" if family else "")


NPU = PrivateUse1Backend(
    name="npu",
    display_name="Huawei Ascend NPU",
    vendor_module="torch_npu",
    import_hint="source the CANN environment (set_env.sh) and check that torch_npu matches torch",
    capability_label="capability (not reported by Ascend)",
    reports_capability=False,
    runtime=RuntimeVersion(
        label="CANN",
        parse=parse_cann_version,
        torch_attr="cann",
        expected="e.g. '8.3.RC1' or '8.5.0'",
        unknown_texts=("not known",),
        advice="source the CANN set_env.sh",
    ),
    tokens=VariantTokens(prefix="cann", minor_width=1),
    noarch_aliases=("cann",),  # kernels 0.19's noarch name; torch-npu still loads
    extra_notes=soc_notes,
    built_for_torch=built_for_torch,  # torch_npu 2.1.0.post3 is built for torch 2.1
    read_arch=soc_name, arch_runs=runs_npu_arch,  # the SoC family, see .versions
    # What torch_npu shows PyTorch (see the README). Every default is illustrative, not
    # a product's data sheet; Ascend devices report no compute capability.
    emulation=Emulation(
        facts={
            "device_name": "Ascend910B2",
            "total_memory": 64 << 30,
            "multi_processor_count": 24,
            "cube_core_num": 24,
            "vector_core_num": 48,
            "L2_cache_size": 192 * 1024**2,
            "soc_version": 222,  # the 910B family
            "cann": "8.3.RC1",
            "version": None,
        },
        not_properties=("soc_version",),
        functions={"get_soc_version": lambda facts: facts["soc_version"]},
        version_attrs={"cann": "cann"},
        # operators other libraries import at import time (transformers imports
        # npu_fusion_attention); calling one under emulation raises
        vendor_ops=("npu_fusion_attention", "npu_rms_norm", "npu_rotary_mul", "npu_swiglu"),
        absent={"capability": "Ascend devices report no compute capability"},
    ),
)
