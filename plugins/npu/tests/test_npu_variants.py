"""Variant names, rejection reasons and resolution for the npu backend."""

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

from kernel_plugins_npu import hooks

SYSTEM = SystemInfo(cpu="aarch64", os="linux", torch_version=(2, 13), cxx11_abi=True)


def _device(runtime: str | None = "8.3.RC1") -> DeviceInfo:
    return DeviceInfo(backend="npu", device_type="npu", count=1, runtime_version=runtime)


@pytest.fixture
def manager(monkeypatch: pytest.MonkeyPatch) -> Iterator[plugins.PluginManager]:
    """Built-in backends plus this plugin, as the process-wide manager."""
    monkeypatch.delenv("KERNEL_PLUGINS_STRICT", raising=False)
    with process_manager(plugin_manager(hooks, name="npu")) as pm:
        yield pm


def test_backend_spec_priority() -> None:
    """Names and tokens are checked by the conformance suite (test_npu_detect.py)."""
    assert 0 < hooks.backend_spec().priority < 100


@pytest.mark.parametrize(
    ("runtime", "token"),
    [("8.3.RC1", "cann83"), ("8.5.0", "cann85"), ("9.0.0", "cann90"), ("10.0.RC1", "cann100")],
)
def test_variants_name_the_exact_cann(runtime: str, token: str) -> None:
    names = hooks.list_variants(_device(runtime), SYSTEM)
    assert names[-4:] == [
        f"torch213-{token}-aarch64-linux",
        f"torch213-cxx11-{token}-aarch64-linux",
        "torch-npu",
        "torch-universal",
    ]
    assert {parse_variant(n).token for n in names} - {None} == {token}


@pytest.mark.parametrize("runtime", [None, "not known", "8"])
def test_unknown_cann_gives_noarch_only(runtime: str | None) -> None:
    assert hooks.list_variants(_device(runtime), SYSTEM) == ["torch-npu", "torch-universal"]


@pytest.mark.parametrize(
    ("variant", "system", "reason"),
    [
        (
            "torch213-cxx11-cann82-aarch64-linux",
            "8.3.RC1",
            "CANN 8.2 does not match the system's CANN 8.3 (an exact match is required)",
        ),
        (
            "torch213-cxx11-cann100-aarch64-linux",
            "8.3.RC1",
            "CANN 10.0 does not match the system's CANN 8.3 (an exact match is required)",
        ),
        (
            "torch213-cxx11-cann83-aarch64-linux",
            "10.0.0",
            "CANN 8.3 does not match the system's CANN 10.0 (an exact match is required)",
        ),
        (
            "torch213-cxx11-cann83-aarch64-linux",
            "not known",
            "CANN 8.3 cannot be checked: the system's CANN version is unknown "
            "(source the CANN set_env.sh)",
        ),
        (
            "torch213-cxx11-cann8-aarch64-linux",
            "8.3.RC1",
            "backend token 'cann8' does not encode a CANN version",
        ),
    ],
)
def test_explain(variant: str, system: str, reason: str) -> None:
    assert hooks.explain_variant(_device(system), SYSTEM, parse_variant(variant)) == reason


def test_resolution_against_a_fixture_repo(tmp_path: Path, manager: plugins.PluginManager) -> None:
    repo = make_repo(
        tmp_path / "repo",
        [
            "torch213-cxx11-cann83-aarch64-linux",
            "torch213-cxx11-cann83-x86_64-linux",
            "torch213-cxx11-cann82-aarch64-linux",
            "torch213-cxx11-cann100-aarch64-linux",
            "torch-stable-abi212-cann83-aarch64-linux",
            "tvm-ffi01-cann83-aarch64-linux",
            "torch213-cxx11-cu128-aarch64-linux",
            "torch-npu",
            "torch-cuda",
            "torch-universal",
        ],
    )
    res = resolve_variants(local_variants(repo).variants, device=_device("8.3.RC1"), system=SYSTEM)
    assert res.accepted == (
        "torch-stable-abi212-cann83-aarch64-linux",
        "torch213-cxx11-cann83-aarch64-linux",
        "torch-npu",
        "torch-universal",
    )
    reasons = {d.variant: d.reason for d in res.decisions if not d.accepted}
    assert reasons["torch213-cxx11-cann82-aarch64-linux"] == (
        "CANN 8.2 does not match the system's CANN 8.3 (an exact match is required)"
    )
    assert reasons["torch213-cxx11-cann100-aarch64-linux"] == (
        "CANN 10.0 does not match the system's CANN 8.3 (an exact match is required)"
    )
    assert reasons["torch213-cxx11-cann83-x86_64-linux"] == (
        "built for CPU x86_64, the system is aarch64"
    )
    assert reasons["tvm-ffi01-cann83-aarch64-linux"] == (
        "built against tvm-ffi 0.1, but tvm-ffi is not installed"
    )
    assert "built for backend 'cuda'" in reasons["torch213-cxx11-cu128-aarch64-linux"]
    assert "noarch variant for backend 'cuda'" in reasons["torch-cuda"]


def test_cann_10_accepts_its_own_build(tmp_path: Path, manager: plugins.PluginManager) -> None:
    repo = make_repo(
        tmp_path / "repo",
        [
            "torch213-cxx11-cann100-aarch64-linux",
            "torch213-cxx11-cann10-aarch64-linux",
            "torch-npu",
        ],
    )
    res = resolve_variants(local_variants(repo).variants, device=_device("10.0.RC1"), system=SYSTEM)
    assert res.accepted == ("torch213-cxx11-cann100-aarch64-linux", "torch-npu")
    reasons = {d.variant: d.reason for d in res.decisions if not d.accepted}
    assert reasons["torch213-cxx11-cann10-aarch64-linux"] == (
        "CANN 1.0 does not match the system's CANN 10.0 (an exact match is required)"
    )
