"""kernel-plugins hooks of the Moore Threads MUSA backend (entry point ``musa``).

Vendor facts only; :class:`~kernel_plugins.plugin_kit.PrivateUse1Backend` builds the
hooks. Arch variants carry the token ``musa<major><minor>`` of the MUSA SDK in
``torch.version.musa`` and need an exact major.minor match; ``torch-musa`` and
``torch-universal`` follow.
"""

from __future__ import annotations

from kernel_plugins.plugin_kit import PrivateUse1Backend, RuntimeVersion, VariantTokens

from .versions import parse_musa_version

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
    emulation="kernel_plugins_musa.emulation",
)
globals().update(MUSA.hookimpls())
