"""Variant parsing and resolution rules (the existing Hub rules, plus reasons)."""

from __future__ import annotations

import random

import pytest

from kernel_plugins.device import DeviceInfo, SystemInfo
from kernel_plugins.errors import VariantNameError
from kernel_plugins.resolving import resolve_variants
from kernel_plugins.variants import (
    arch_variant_names,
    decode_token_version,
    noarch_variant_names,
    parse_variant,
)

LINUX = SystemInfo(cpu="x86_64", os="linux", torch_version=(2, 13), cxx11_abi=True)
CUDA128 = DeviceInfo(backend="cuda", device_type="cuda", count=1, runtime_version="12.8")


@pytest.mark.parametrize(
    "name,kind,version,abi,token,cpu,os",
    [
        ("torch210-cxx11-cu128-x86_64-linux", "arch", (2, 10), "cxx11", "cu128", "x86_64", "linux"),
        ("torch29-cxx98-cu126-aarch64-linux", "arch", (2, 9), "cxx98", "cu126", "aarch64", "linux"),
        ("torch210-cu128-x86_64-windows", "arch", (2, 10), None, "cu128", "x86_64", "windows"),
        ("torch29-metal-aarch64-darwin", "arch", (2, 9), None, "metal", "aarch64", "darwin"),
        ("torch-stable-abi211-cu128-x86_64-linux", "stable-abi", (2, 11), None, "cu128", "x86_64", "linux"),
        ("tvm-ffi01-cu128-x86_64-linux", "tvm-ffi", (0, 1), None, "cu128", "x86_64", "linux"),
        ("torch213-cxx11-cann100-aarch64-linux", "arch", (2, 13), "cxx11", "cann100", "aarch64", "linux"),
        ("torch-cuda", "noarch", None, None, None, None, None),
        ("torch-universal", "universal", None, None, None, None, None),
    ],
)
def test_parse_every_form(name, kind, version, abi, token, cpu, os):
    v = parse_variant(name)
    assert (v.kind, v.version, v.abi, v.token, v.cpu, v.os) == (kind, version, abi, token, cpu, os)


@pytest.mark.parametrize(
    "bad",
    ["", "torch210-cu128-x86_64", "torch210-cxx11-cu128-x86_64-solaris", "../torch-cpu",
     "torch-cpu/x", "Torch-CPU", "torch-\u00e9", "x" * 300, "torch210-cxx14-cu128-x86_64-linux"],
)
def test_malformed_names_raise_named_error(bad):
    with pytest.raises(VariantNameError) as e:
        parse_variant(bad)
    assert str(e.value)


def test_token_versions_keep_two_digit_majors():
    assert decode_token_version("128", major_width=2) == (12, 8)
    assert decode_token_version("1210", major_width=2) == (12, 10)
    assert decode_token_version("83") == (8, 3)
    assert decode_token_version("100", major_width=2) == (10, 0)


@pytest.mark.parametrize(
    ("digits", "widths", "version"),
    [("03", {}, (0, 3)), ("012", {"major_width": 2}, (0, 12)), ("01", {"major_width": 4}, (0, 1)),
     ("03", {"minor_width": 1}, (0, 3)), ("00", {}, (0, 0)), ("0", {}, None), ("", {}, None),
     ("8", {"minor_width": 1}, None), ("12", {"major_width": 2}, None)],
)
def test_a_major_of_0_is_one_digit_whatever_the_widths(digits, widths, version):
    assert decode_token_version(digits, **widths) == version


def _zero_x_backend():
    """A PrivateUse1 backend whose runtime numbers its releases 0.x, as libtpu does."""
    from kernel_plugins.plugin_kit import PrivateUse1Backend, RuntimeVersion, VariantTokens
    from kernel_plugins.variants import VariantTokens as CoreTokens

    assert VariantTokens is CoreTokens
    return PrivateUse1Backend(
        name="zerox", display_name="Zero X", vendor_module="torch_zerox", import_hint="reinstall",
        runtime=RuntimeVersion(label="libtpu", parse=lambda t: tuple(map(int, str(t).split("."))),
                               torch_attr="zerox"),
        tokens=VariantTokens(prefix="zx"),
    )


def test_a_0x_runtime_explains_a_refused_variant_by_its_version():
    """Regression: a token of a 0.x runtime was encoded but not decoded, so the reason was
    "backend token 'zx03' does not encode a libtpu version"."""
    backend = _zero_x_backend()
    device = DeviceInfo(backend="zerox", device_type="zerox", count=1, runtime_version="0.4.1")
    assert "torch213-cxx11-zx04-x86_64-linux" in backend.list_variants(device, LINUX)
    reason = backend.explain_variant(device, LINUX, parse_variant("torch213-cxx11-zx03-x86_64-linux"))
    assert reason == "libtpu 0.3 does not match the system's libtpu 0.4 (an exact match is required)"


def test_every_backend_decodes_a_major_of_0(manager):
    """The built-in backends too: a CUDA 0.x token is another major, not an undecodable token."""
    res = resolve_variants(["torch213-cxx11-cu03-x86_64-linux", "torch-cuda"], CUDA128, LINUX)
    assert reasons(res)["torch213-cxx11-cu03-x86_64-linux"] == (
        "CUDA 0.3 has another major version than the system's CUDA 12.8"
    )


def reasons(res):
    return {d.variant: d.reason for d in res.decisions if not d.accepted}


def test_cuda_same_major_rule_and_reasons(manager):
    names = [f"torch213-cxx11-cu{v}-x86_64-linux" for v in ("128", "126", "120", "129", "130", "118", "1210")]
    res = resolve_variants(names, CUDA128, LINUX)
    assert res.accepted == (
        "torch213-cxx11-cu128-x86_64-linux",
        "torch213-cxx11-cu126-x86_64-linux",
        "torch213-cxx11-cu120-x86_64-linux",
    )
    r = reasons(res)
    assert r["torch213-cxx11-cu129-x86_64-linux"] == "CUDA 12.9 is newer than the system's CUDA 12.8"
    assert r["torch213-cxx11-cu1210-x86_64-linux"] == "CUDA 12.10 is newer than the system's CUDA 12.8"
    assert "CUDA 13.0 has another major version than the system's CUDA 12.8" == r[
        "torch213-cxx11-cu130-x86_64-linux"
    ]
    assert "11.8" in r["torch213-cxx11-cu118-x86_64-linux"]


def test_preference_order_across_forms(manager):
    system = SystemInfo(cpu="x86_64", os="linux", torch_version=(2, 13), cxx11_abi=True, tvm_ffi_version=(0, 1))
    names = [
        "torch-universal", "torch-cuda", "tvm-ffi01-cu128-x86_64-linux",
        "torch213-cxx11-cu126-x86_64-linux", "torch213-cxx11-cu128-x86_64-linux",
        "torch213-cu126-x86_64-linux", "torch-stable-abi211-cu126-x86_64-linux",
        "torch-stable-abi212-cu120-x86_64-linux", "torch-stable-abi211-cu128-x86_64-linux",
    ]
    shuffled = names[:]
    random.Random(1).shuffle(shuffled)
    res = resolve_variants(shuffled, CUDA128, system)
    assert res.accepted == (
        "torch-stable-abi212-cu120-x86_64-linux",
        "torch-stable-abi211-cu128-x86_64-linux",
        "torch-stable-abi211-cu126-x86_64-linux",
        "torch213-cu126-x86_64-linux",
        "torch213-cxx11-cu128-x86_64-linux",
        "torch213-cxx11-cu126-x86_64-linux",
        "tvm-ffi01-cu128-x86_64-linux",
        "torch-cuda",
        "torch-universal",
    )
    assert res.best == "torch-stable-abi212-cu120-x86_64-linux"
    assert resolve_variants(names, CUDA128, system).decisions == res.decisions


@pytest.mark.parametrize(
    "name,fragment",
    [
        ("torch212-cxx11-cu128-x86_64-linux", "built for torch 2.12, installed torch is 2.13"),
        ("torch213-cxx98-cu128-x86_64-linux", "cxx98 C++ ABI, installed torch uses cxx11"),
        ("torch213-cxx11-cu128-aarch64-linux", "built for CPU aarch64, the system is x86_64"),
        ("torch213-cu128-x86_64-windows", "built for OS windows, the system is linux"),
        ("torch-stable-abi214-cu128-x86_64-linux", "needs torch >= 2.14"),
        ("tvm-ffi01-cu128-x86_64-linux", "tvm-ffi is not installed"),
        ("torch-rocm", "noarch variant for backend 'rocm'"),
        ("torch213-cxx11-rocm63-x86_64-linux", "built for backend 'rocm'"),
        ("torch213-cxx11-zzz1-x86_64-linux", "backend token zzz1 is not accepted"),
        ("bad variant", "malformed variant name"),
    ],
)
def test_rejection_reasons_name_component_and_values(manager, name, fragment):
    res = resolve_variants([name, "torch-cuda"], CUDA128, LINUX)
    assert res.accepted == ("torch-cuda",)
    assert fragment in reasons(res)[name]


def test_rejected_listed_after_accepted_and_every_name_has_a_decision(manager):
    names = ["torch-cpu", "zz", "torch-cuda", "torch213-cxx11-cu130-x86_64-linux"]
    res = resolve_variants(names, CUDA128, LINUX)
    assert [d.accepted for d in res.decisions] == [True, False, False, False]
    assert {d.variant for d in res.decisions} == set(names)


def test_tvm_ffi_version_must_match(manager):
    system = SystemInfo(cpu="x86_64", os="linux", torch_version=(2, 13), cxx11_abi=True, tvm_ffi_version=(0, 2))
    res = resolve_variants(["tvm-ffi01-cu128-x86_64-linux", "tvm-ffi02-cu128-x86_64-linux"], CUDA128, system)
    assert res.accepted == ("tvm-ffi02-cu128-x86_64-linux",)
    assert "installed tvm-ffi is 0.2" in reasons(res)["tvm-ffi01-cu128-x86_64-linux"]


def test_rocm_minor_at_or_below_and_xpu_exact_match(manager):
    rocm = DeviceInfo(backend="rocm", device_type="cuda", count=1, runtime_version="6.3.42131-fa1d09cbd")
    names = ["torch213-cxx11-rocm63-x86_64-linux", "torch213-cxx11-rocm62-x86_64-linux",
             "torch213-cxx11-rocm64-x86_64-linux", "torch-2.13-rocm-7.0-cpython-3.9-abi3-x86_64-linux",
             "torch-rocm", "torch-cuda"]
    res = resolve_variants(names, rocm, LINUX)
    assert res.accepted == ("torch213-cxx11-rocm63-x86_64-linux", "torch213-cxx11-rocm62-x86_64-linux", "torch-rocm")
    assert reasons(res)["torch213-cxx11-rocm64-x86_64-linux"] == "ROCm 6.4 is newer than the system's ROCm 6.3"
    assert "ROCm 7.0 has another major version" in reasons(res)["torch-2.13-rocm-7.0-cpython-3.9-abi3-x86_64-linux"]
    xpu = DeviceInfo(backend="xpu", device_type="xpu", count=1, runtime_version="20250300")
    res = resolve_variants(["torch213-cxx11-xpu20253-x86_64-linux", "torch213-cxx11-xpu20252-x86_64-linux"], xpu, LINUX)
    assert res.accepted == ("torch213-cxx11-xpu20253-x86_64-linux",)
    assert "oneAPI 2025.2 does not match" in reasons(res)["torch213-cxx11-xpu20252-x86_64-linux"]


def test_metal_arch_needs_macos_26(manager):
    mps = DeviceInfo(backend="metal", device_type="mps", count=1)
    old = SystemInfo(cpu="aarch64", os="darwin", torch_version=(2, 13), macos_version=(15, 2))
    new = SystemInfo(cpu="aarch64", os="darwin", torch_version=(2, 13), macos_version=(26, 0))
    names = ["torch213-metal-aarch64-darwin", "torch-metal"]
    res_old = resolve_variants(names, mps, old)
    assert res_old.accepted == ("torch-metal",)
    assert "need macOS >= 26.0, the system has macOS 15.2" in reasons(res_old)["torch213-metal-aarch64-darwin"]
    assert resolve_variants(names, mps, new).accepted == tuple(names)


def test_plugin_helper_builds_names_that_parse_back():
    names = arch_variant_names(LINUX, ["cu128", "cu126"]) + noarch_variant_names("cuda")
    assert names[-2:] == ["torch-cuda", "torch-universal"]
    for n in names:
        v = parse_variant(n)
        if v.token:
            assert v.token in ("cu128", "cu126")
    # no torch: only noarch make sense
    assert arch_variant_names(SystemInfo(cpu="x86_64", os="linux"), ["cu128"]) == []


def test_resolution_to_dict_is_json_ready(manager):
    import json

    res = resolve_variants(["torch-cpu"], "cpu", LINUX)
    data = json.loads(json.dumps(res.to_dict()))
    assert data["best"] == "torch-cpu"
    assert data["decisions"][0] == {"variant": "torch-cpu", "accepted": True, "reason": None}


def test_cpu_prefers_its_arch_variant_over_noarch_in_resolution(manager):
    arch = "torch213-cxx11-cpu-x86_64-linux"
    for names in (["torch-cpu", arch, "torch-universal"], ["torch-universal", arch, "torch-cpu"]):
        res = resolve_variants(names, "cpu", LINUX)
        assert res.accepted == (arch, "torch-cpu", "torch-universal")
        assert res.best == arch


def test_cpu_loads_its_arch_variant_over_noarch(manager, tmp_path):
    import kernel_plugins
    from kernel_plugins.detection import system_info
    from tests.support.kernels import make_variant

    arch = [n for n in arch_variant_names(system_info(), ["cpu"]) if parse_variant(n).kind == "arch"][-1]
    for variant in ("torch-cpu", arch):
        make_variant(tmp_path / "k", variant, code=f"VARIANT = {variant!r}\n")
    module = kernel_plugins.load(tmp_path / "k", device="cpu")
    assert module.VARIANT == arch and module.__kernel_provenance__.variant == arch


# ---------------------------------------------------------------- kernels 0.19's names
PY312 = SystemInfo(cpu="x86_64", os="linux", torch_version=(2, 13), cxx11_abi=True, python_version=(3, 12))
NEW_CU = "torch-2.13-cuda-12.8-cpython-3.9-abi3-x86_64-linux"


@pytest.mark.parametrize(
    ("name", "system", "fragment"),
    [
        (NEW_CU, SystemInfo(cpu="x86_64", os="linux", torch_version=(2, 13), free_threaded=True,
                            python_version=(3, 15)), "abi3 stable ABI, which a free-threaded Python"),
        ("torch-2.13-cuda-12.8-cpython-3.16-abi3-x86_64-linux", PY312, "needs Python >= 3.16, the system has Python 3.12"),
        ("torch-2.13-cuda-12.8-cpython-3.15-abi3t-x86_64-linux", PY312, "needs Python >= 3.15"),
        ("torch-2.13-cuda-12.8-cpython-3.12-abi3t-x86_64-linux", PY312, "abi3t (free-threaded stable ABI) needs Python >= 3.15"),
        ("torch-2.13-cu-12.8-cpython-3.9-abi3-x86_64-linux", PY312, "the backend is 'cuda' in a 0.19 name"),
        ("torch-2.12-cuda-12.8-cpython-3.9-abi3-x86_64-linux", PY312, "built for torch 2.12, installed torch is 2.13"),
        ("torch-stable-abi-2.14-cuda-12.8-cpython-3.9-abi3-x86_64-linux", PY312, "needs torch >= 2.14"),
        ("torch-2.13-cuda-12.9-cpython-3.9-abi3-x86_64-linux", PY312, "CUDA 12.9 is newer than the system's CUDA 12.8"),
        ("torch-2.13-rocm-6.3-cpython-3.9-abi3-x86_64-linux", PY312, "built for backend 'rocm'"),
        ("sdk-rocm-6.3-cpython-3.9-abi3-x86_64-linux", PY312, "built for backend 'rocm'"),
        ("sdk-cpython-3.9-abi3-aarch64-linux", PY312, "built for CPU aarch64"),
        ("sdk-cuda-12.8", PY312, "a versioned sdk backend needs the -cpython-"),
        ("sdk-rocm", PY312, "sdk variant for backend 'rocm'"),
        ("sdk-universal", PY312, "sdk variant for backend 'universal'"),
        ("mlx-cuda", PY312, "an MLX variant: mlx is not installed"),
        ("torch213-cxx11-cu128-x86_64-windows", SystemInfo(cpu="x86_64", os="windows", torch_version=(2, 13)),
         "built with the cxx11 C++ ABI, installed torch uses no tagged C++ ABI (not Linux)"),
    ],
)
def test_every_new_rule_gives_its_reason(manager, name, system, fragment):
    res = resolve_variants([name, "torch-cuda"], CUDA128, system)
    assert res.accepted == ("torch-cuda",)
    assert fragment in reasons(res)[name]


def test_both_grammars_and_sdk_forms_rank_as_kernels_ranks_them(manager):
    system = SystemInfo(cpu="x86_64", os="linux", torch_version=(2, 13), cxx11_abi=True, python_version=(3, 15),
                        mlx=True)
    ranked = [
        "torch-stable-abi-2.13-cuda-12.6-cpython-3.9-abi3-x86_64-linux",
        "torch-stable-abi212-cu128-x86_64-linux",
        "torch-2.13-cuda-12.8-cpython-3.12-abi3-x86_64-linux",  # a newer Python first
        "torch213-cu128-x86_64-linux",
        "torch-2.13-cuda-12.8-cpython-3.15-abi3t-x86_64-linux",  # abi3 before abi3t
        "torch213-cxx11-cu126-x86_64-linux",
        "sdk-cuda-12.8-cpython-3.9-abi3-x86_64-linux",
        "sdk-cpython-3.12-abi3-x86_64-linux",  # any backend after the backend's
        "mlx-cuda", "torch-universal", "sdk-cuda", "sdk",
    ]
    shuffled = ranked[::-1]
    assert resolve_variants(shuffled, CUDA128, system).accepted == tuple(ranked)
    assert resolve_variants(ranked, CUDA128, system).accepted == tuple(ranked)


def test_a_legacy_token_and_its_0_19_form_are_one_backend_version(manager):
    for runtime, legacy, new in (("12.8", "cu128", "cuda-12.8"), ("12.6", "cu126", "cuda-12.6")):
        device = CUDA128.replace(runtime_version=runtime)
        names = [f"torch213-{legacy}-x86_64-linux", f"torch-2.13-{new}-cpython-3.9-abi3-x86_64-linux"]
        assert set(resolve_variants(names, device, LINUX).accepted) == set(names)
        assert parse_variant(names[0]).token == parse_variant(names[1]).token == legacy


def test_a_repository_in_the_new_names_loads_its_best_here(manager, tmp_path):
    """The issue's cases: a 0.19 arch name beats torch-cpu; a repository with only ``sdk`` loads."""
    import kernel_plugins
    from kernel_plugins.detection import system_info
    from tests.support.kernels import make_variant

    s = system_info()
    arch = "torch-{}.{}-cpu-cpython-3.9-abi3-{}-{}".format(*s.torch_version, s.cpu, s.os)
    for variant in ("torch-cpu", arch):
        make_variant(tmp_path / "k", variant, code=f"VARIANT = {variant!r}\n")
    assert kernel_plugins.load(tmp_path / "k", device="cpu").VARIANT == arch
    make_variant(tmp_path / "sdk", "sdk", code="VARIANT = 'sdk'\n")
    assert kernel_plugins.load(tmp_path / "sdk", device="cpu").VARIANT == "sdk"


def test_list_backends_and_variants_show_the_python_facts(manager, capsys):
    from kernel_plugins.cli.list_backends import system_line
    from kernel_plugins.cli.main import main

    assert main(["list-backends"]) == 0
    out = capsys.readouterr().out
    assert system_line(SystemInfo.current()) in out and "Python {}.{}".format(*SystemInfo.current().python_version) in out
    free = SystemInfo(cpu="x86_64", os="linux", free_threaded=True, python_version=(3, 15))
    assert system_line(free) == ("system: x86_64 linux, Python 3.15 (free-threaded: abi3t builds only), "
                                 "torch not installed")
    assert "abi3t too" in system_line(SystemInfo(cpu="x86_64", os="linux", python_version=(3, 15)))


def test_rocm_reads_its_version_where_kernels_0_19_does(monkeypatch):
    """torch.version.rocm (torch >= 2.10; ROCm 10.0 ships HIP 7.15), else torch.version.hip."""
    from types import SimpleNamespace

    import torch

    from kernel_plugins.backends.rocm import ROCM

    monkeypatch.setattr(torch.version, "cuda", None)
    monkeypatch.setattr(torch.version, "hip", "7.15.0-abc", raising=False)
    monkeypatch.setattr(torch.version, "rocm", "10.0.1", raising=False)
    for name, value in {"is_available": lambda: True, "device_count": lambda: 1,
                        "get_device_name": lambda i=0: "MI355X", "get_device_capability": lambda i=0: (9, 5),
                        "get_device_properties": lambda i=0: SimpleNamespace(gcnArchName="gfx950")}.items():
        monkeypatch.setattr(torch.cuda, name, value)
    info = ROCM.detect_device()
    assert info is not None and info.runtime_version == "10.0.1"
    assert "torch-stable-abi213-rocm100-x86_64-linux" in ROCM.list_variants(info, LINUX)
    monkeypatch.delattr(torch.version, "rocm")
    assert ROCM.detect_device().runtime_version == "7.15.0-abc"
