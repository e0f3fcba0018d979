"""The Cambricon MLU backend: the plugin object :data:`MLU` (entry point ``mlu``).

Vendor facts only; :class:`~kernel_plugins.plugin_kit.PrivateUse1Backend` provides the
hooks. Arch variants carry the token ``mlu<major><minor>`` of the CNToolkit release (from
the environment or ``$NEUWARE_HOME/version.txt``, see :mod:`.versions`), exact match.
"""

from __future__ import annotations

from collections.abc import Iterator

from kernel_plugins.plugin_kit import (
    Emulation,
    PrivateUse1Backend,
    RuntimeVersion,
    SdkFile,
    VariantTokens,
    VendorDevices,
    torch_major_minor,
    unparsable_note,
)

from .versions import (
    NEUWARE_ENV,
    TOOLKIT_ENV,
    VERSION_FILE,
    built_for_torch,
    mlu_target,
    parse_extension_version,
    parse_toolkit_version,
    read_toolkit_version,
    runs_mlu_arch,
)


def extension_notes(found: VendorDevices) -> Iterator[str]:
    """A note when ``torch_mlu.__version__`` is unparsable or names another torch."""
    text = found.extension_version
    ext = parse_extension_version(text)
    if ext is None:
        yield unparsable_note("torch_mlu.__version__", text, "e.g. '1.22.0+torch2.4.0'")
    elif ext.torch_major_minor != torch_major_minor(found.torch):
        built, installed = ext.torch, found.torch.__version__
        yield f"torch_mlu {text} was built for torch {built}, but torch {installed} is installed"


MLU = PrivateUse1Backend(
    name="mlu",
    display_name="Cambricon MLU",
    vendor_module="torch_mlu",
    import_hint=(
        "check that NEUWARE_HOME and LD_LIBRARY_PATH point at a Neuware install matching torch_mlu"
    ),
    capability_label="MLU compute capability",
    runtime=RuntimeVersion(
        label="CNToolkit",
        parse=parse_toolkit_version,
        read=read_toolkit_version,
        advice=f"set {TOOLKIT_ENV}, e.g. 3.13.5, when $NEUWARE_HOME/version.txt is missing",
    ),
    tokens=VariantTokens(prefix="mlu"),
    extra_notes=extension_notes,
    built_for_torch=built_for_torch,  # 1.22.0+torch2.4.0 is built for torch 2.4
    read_arch=mlu_target, arch_runs=runs_mlu_arch,  # mtp_592 and friends, see .versions
    # What torch_mlu shows PyTorch (see the README), for tests: illustrative defaults.
    emulation=Emulation(
        facts={
            "device_name": "MLU590-H8",
            "capability": (5, 0),
            "cluster_count": 12,
            "core_num_per_cluster": 4,
            "multi_processor_count": 48,  # cluster_count * core_num_per_cluster
            "total_memory": 64 << 30,
            "frequency": 1300,
            "dram_bandwidth": 1228,
            "supports_linear_memory": True,
            "version": None,
            "toolkit": "3.13.5",
        },
        functions={"is_bf16_supported": lambda facts: facts["capability"][0] >= 5},
        version_attrs={"mlu": None},  # the real extension sets torch.version.mlu = None
        version="1.22.0+torch{torch}",
        sdk_file=SdkFile(NEUWARE_ENV, VERSION_FILE, "Neuware Version {toolkit}\n", "toolkit"),
    ),
)
