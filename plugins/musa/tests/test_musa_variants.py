"""Variant names, rejection reasons and resolution for the musa backend."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from kernel_plugins import plugins
from kernel_plugins.device import DeviceInfo, SystemInfo
from kernel_plugins.resolving import resolve_variants
from kernel_plugins.sources import local_variants
from kernel_plugins.variants import parse_variant
from kernel_plugins_testing.conformance import plugin_manager, process_manager
from kernel_plugins_testing.kernel_repos import make_repo

from kernel_plugins_musa import hooks

SYSTEM = SystemInfo(cpu="x86_64", os="linux", torch_version=(2, 13), cxx11_abi=True)


def _device(runtime: str | None = "4030") -> DeviceInfo:
    return DeviceInfo(backend="musa", device_type="musa", count=1, runtime_version=runtime)


@pytest.fixture
def manager(monkeypatch: pytest.MonkeyPatch) -> Iterator[plugins.PluginManager]:
    """Built-in backends plus this plugin, as the process-wide manager."""
    monkeypatch.delenv("KERNEL_PLUGINS_STRICT", raising=False)
    with process_manager(plugin_manager(hooks, name="musa")) as pm:
        yield pm


def test_backend_spec_priority() -> None:
    """Names and tokens are checked by the conformance suite (test_musa_detect.py)."""
    assert 0 < hooks.backend_spec().priority < 100


@pytest.mark.parametrize(
    ("runtime", "token"), [("4030", "musa43"), ("5012", "musa51"), ("4.2.0", "musa42")]
)
def test_variants_name_the_exact_sdk(runtime: str, token: str) -> None:
    names = hooks.list_variants(_device(runtime), SYSTEM)
    assert names[-4:] == [
        f"torch213-{token}-x86_64-linux",
        f"torch213-cxx11-{token}-x86_64-linux",
        "torch-musa",
        "torch-universal",
    ]
    assert names[0] == f"torch-stable-abi213-{token}-x86_64-linux"
    assert {parse_variant(n).token for n in names} - {None} == {token}


@pytest.mark.parametrize("runtime", [None, "40x0", "not known"])
def test_unknown_sdk_gives_noarch_only(runtime: str | None) -> None:
    assert hooks.list_variants(_device(runtime), SYSTEM) == ["torch-musa", "torch-universal"]


def test_explain_other_sdk() -> None:
    v = parse_variant("torch213-cxx11-musa42-x86_64-linux")
    assert hooks.explain_variant(_device("4030"), SYSTEM, v) == (
        "MUSA 4.2 does not match the system's MUSA 4.3 (an exact match is required)"
    )


def test_explain_newer_sdk_is_also_an_exact_mismatch() -> None:
    v = parse_variant("torch213-cxx11-musa51-x86_64-linux")
    reason = hooks.explain_variant(_device("4030"), SYSTEM, v)
    assert reason is not None and "MUSA 5.1 does not match the system's MUSA 4.3" in reason


def test_explain_unknown_system_sdk() -> None:
    v = parse_variant("torch213-cxx11-musa43-x86_64-linux")
    assert hooks.explain_variant(_device(None), SYSTEM, v) == (
        "MUSA 4.3 cannot be checked: the system's MUSA version is unknown "
        "(install a torch_musa build that records its MUSA SDK)"
    )


def test_resolution_against_a_fixture_repo(tmp_path: Path, manager: plugins.PluginManager) -> None:
    repo = make_repo(
        tmp_path / "repo",
        [
            "torch213-musa43-x86_64-linux",
            "torch213-cxx11-musa43-x86_64-linux",
            "torch213-cxx11-musa42-x86_64-linux",
            "torch213-cxx98-musa43-x86_64-linux",
            "torch213-cxx11-musa43-x86_64-windows",
            "torch213-cxx11-cu128-x86_64-linux",
            "torch213-cxx11-rocm63-x86_64-linux",
            "torch-musa",
            "torch-cuda",
            "torch-universal",
        ],
    )
    res = resolve_variants(local_variants(repo).variants, device=_device("4030"), system=SYSTEM)
    assert res.accepted == (
        "torch213-musa43-x86_64-linux",
        "torch213-cxx11-musa43-x86_64-linux",
        "torch-musa",
        "torch-universal",
    )
    reasons = {d.variant: d.reason for d in res.decisions if not d.accepted}
    assert reasons["torch213-cxx11-musa42-x86_64-linux"] == (
        "MUSA 4.2 does not match the system's MUSA 4.3 (an exact match is required)"
    )
    assert reasons["torch213-cxx98-musa43-x86_64-linux"] == (
        "built with the cxx98 C++ ABI, installed torch uses cxx11"
    )
    assert reasons["torch213-cxx11-musa43-x86_64-windows"] == (
        "built for OS windows, the system is linux"
    )
    assert "built for backend 'cuda'" in reasons["torch213-cxx11-cu128-x86_64-linux"]
    assert "built for backend 'rocm'" in reasons["torch213-cxx11-rocm63-x86_64-linux"]
    assert "noarch variant for backend 'cuda'" in reasons["torch-cuda"]


def test_resolution_without_a_known_sdk(tmp_path: Path, manager: plugins.PluginManager) -> None:
    repo = make_repo(tmp_path / "repo", ["torch213-cxx11-musa43-x86_64-linux", "torch-universal"])
    res = resolve_variants(local_variants(repo).variants, device=_device(None), system=SYSTEM)
    assert res.accepted == ("torch-universal",)
    reasons = {d.variant: d.reason for d in res.decisions if not d.accepted}
    assert "system's MUSA version is unknown" in reasons["torch213-cxx11-musa43-x86_64-linux"]
