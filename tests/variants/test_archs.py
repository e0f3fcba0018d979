"""The architecture step of resolution: CUDA and ROCm rules (checked against the pinned HF
``kernels`` itself), XPU, the trace, the next variant that fits, the hook's isolation, bounded
``archs``, and free-threaded Python; devices and systems are described, not detected."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from kernel_plugins.backends.rocm import gfx_name
from kernel_plugins.backends.xpu import TARGETS
from kernel_plugins.device import DeviceInfo, SystemInfo
from kernel_plugins.errors import MetadataError, NoCompatibleVariantError, PluginError
from kernel_plugins.hookspecs import hookimpl
from kernel_plugins.metadata import MAX_ARCHS, parse_metadata
from kernel_plugins.resolving import choose, resolve_variants
from kernel_plugins.variants import judge_archs
from tests.support.fakes import fake_backend

LINUX = SystemInfo(cpu="x86_64", os="linux", torch_version=(2, 13), cxx11_abi=True)
CU = "torch213-cxx11-cu128-x86_64-linux"
ROCM = "torch213-cxx11-rocm63-x86_64-linux"


def cuda(capability: tuple[int, int] | None) -> DeviceInfo:
    return DeviceInfo(backend="cuda", device_type="cuda", count=1, runtime_version="12.8",
                      capability=capability)


def rocm(gcn: str) -> DeviceInfo:
    return DeviceInfo(backend="rocm", device_type="cuda", count=1, runtime_version="6.3",
                      arch=gfx_name(gcn))


#: (archs, capability, runs): every rule of kernels' archs.py, and the "unknown" list.
CUDA_CASES = [
    (["8.0"], (8, 0), True), (["8.0"], (8, 6), True), (["8.6"], (8, 0), False),
    (["8.0"], (9, 0), False), (["9.0"], (8, 9), False),
    (["9.0a"], (9, 0), True), (["9.0a"], (9, 1), False), (["9.0a"], (10, 0), False),
    (["10.0f"], (10, 3), True), (["10.0f"], (12, 0), False), (["10.3f"], (10, 0), False),
    (["8.0+PTX"], (9, 0), True), (["8.0+PTX"], (12, 0), True), (["9.0+PTX"], (8, 9), False),
    (["9.0a+PTX"], (10, 0), False), (["10.0f+PTX"], (12, 0), False),
    (["7.5", "8.0", "9.0a", "10.0f", "12.0"], (12, 1), True),
    (["7.5", "8.0", "9.0a", "10.0f"], (12, 0), False),
    (["sm_90", "9.0"], (9, 0), True), (["sm_90", "8.0"], (9, 0), False),
    (["sm_90", "compute_90"], (9, 0), "unknown"), (["9.0.1", "9"], (9, 0), "unknown"),
    (["9.0b", " 9.0", "9.0+ptx"], (9, 0), "unknown"),
]
ROCM_CASES = [
    (["gfx90a"], "gfx90a:sramecc+:xnack-", True), (["gfx90a", "gfx942"], "gfx942", True),
    (["gfx942"], "gfx90a", False), (["gfx1100", "gfx1201"], "gfx1030", False),
    (["gfx90a"], "gfx90a", True), (["gfx950"], "gfx942:sramecc+", False),
]


def _ours(device: DeviceInfo, variant: str, archs: list[str]) -> object:
    res = resolve_variants([variant, "torch-universal"], device, LINUX, archs={variant: archs})
    if res.best != variant:
        return False
    return "unknown" if res.arch_note else True


@pytest.mark.parametrize("archs,capability,runs", CUDA_CASES)
def test_cuda_rules(manager: object, archs: list[str], capability: tuple[int, int], runs: object) -> None:
    assert _ours(cuda(capability), CU, archs) == runs


@pytest.mark.parametrize("archs,gcn,runs", ROCM_CASES)
def test_rocm_rules(manager: object, archs: list[str], gcn: str, runs: object) -> None:
    assert _ours(rocm(gcn), ROCM, archs) == runs


def test_the_rules_agree_with_the_pinned_kernels_release(manager: object) -> None:
    """Each case above judged by the pinned kernels' own rules (``kernels._internals.archs``:
    the CUDA check, and the ROCm one ``_check_arch_incompatibility`` makes, the device's
    gcnArchName without its flags listed): kernels loads exactly what we accept, and loads
    the lists we call unknown without checking them."""
    from kernels._internals.archs import _supports_cuda_capability

    theirs = [_supports_cuda_capability(list(a), c) for a, c, _ in CUDA_CASES]
    theirs += [g.split(":")[0] in a for a, g, _ in ROCM_CASES]
    ours = [r is not False for *_, r in CUDA_CASES + ROCM_CASES]  # "unknown" loads in both
    assert theirs == ours, [c for c, t, o in zip(CUDA_CASES + ROCM_CASES, theirs, ours, strict=True) if t != o]


def test_a_refused_variant_makes_way_for_the_next_and_the_trace_says_why(manager: object) -> None:
    noarch = "torch-cuda"
    res = resolve_variants([CU, noarch, "torch-rocm"], cuda((8, 0)), LINUX,
                           archs={CU: ["9.0a", "10.0f", "12.0"]})
    assert res.best == noarch and res.accepted == (noarch,)
    assert res.refused[0].variant == CU
    line = next(t for t in res.trace().splitlines() if CU in t)
    assert line.strip() == (f"{CU}: built for architectures 9.0a, 10.0f, 12.0; the device's "
                            "architecture is 8.0")
    assert [d.variant for d in res.decisions] == [noarch, CU, "torch-rocm"]


def test_only_the_candidates_up_to_the_first_fit_are_asked_about(manager: object) -> None:
    asked: list[str] = []
    stable = "torch-stable-abi213-cu128-x86_64-linux"
    archs = {stable: ["9.0"], CU: ["8.0"], "torch-cuda": ["7.0"]}

    def archs_of(name: str) -> list[str]:
        asked.append(name)
        return archs[name]

    assert choose("repo", list(archs), cuda((8, 6)), LINUX, archs_of=archs_of) == CU
    assert asked == [stable, CU]  # torch-cuda's metadata is never read


def test_when_every_variant_is_refused_the_error_lists_each_one(manager: object) -> None:
    with pytest.raises(NoCompatibleVariantError) as e:
        choose("acme/fa3", [CU, "torch-cuda"], cuda((10, 0)), LINUX,
               archs_of={CU: ["9.0a"], "torch-cuda": ["8.0", "9.0"]}.__getitem__)
    text = str(e.value)
    assert f"{CU}: built for architectures 9.0a; the device's architecture is 10.0" in text
    assert "torch-cuda: built for architectures 8.0, 9.0; the device's architecture is 10.0" in text


def test_unreadable_archs_load_and_the_trace_says_they_were_not_checked(manager: object) -> None:
    res = resolve_variants([CU], cuda((9, 0)), LINUX, archs={CU: ["sm_90", "compute_90"]})
    assert res.best == CU
    assert res.decisions[0].describe() == (
        f"{CU}: accepted (preference #1); architectures sm_90, compute_90 not checked: backend "
        "'cuda' cannot tell whether the device (9.0) runs them")


def test_a_device_without_capability_and_a_backend_that_does_not_check(manager: object) -> None:
    res = resolve_variants([CU], cuda(None), LINUX, archs={CU: ["9.0"]})
    assert res.best == CU and "device (not reported)" in str(res.arch_note)
    cpu = DeviceInfo(backend="cpu", device_type="cpu", count=1)
    res = resolve_variants(["torch-cpu"], cpu, LINUX, archs={"torch-cpu": ["x86-64-v4"]})
    assert res.best == "torch-cpu" and "backend 'cpu' cannot tell" in str(res.arch_note)
    assert resolve_variants(["torch-cpu"], cpu, LINUX, archs={"torch-cpu": []}).arch_note is None


def test_a_long_list_is_shown_cut(manager: object) -> None:
    archs = [f"{m}.0" for m in range(20, 40)] + ["x" * 500]
    res = resolve_variants([CU, "torch-cuda"], cuda((8, 0)), LINUX, archs={CU: archs})
    reason = res.refused[0].reason or ""
    assert reason.startswith("built for architectures 20.0, 21.0, 22.0") and "and 13 more" in reason
    assert len(reason) < 200


def test_xpu_names_its_device_by_product_id(manager: object) -> None:
    props = SimpleNamespace(device_id=0x0BD5)
    from kernel_plugins.backends.xpu import XPU

    assert XPU.read_arch is not None
    assert XPU.read_arch(SimpleNamespace(get_device_properties=lambda i: props)) == "pvc"
    assert TARGETS[0xE20B] == "bmg" and 0x0BD1 not in TARGETS
    device = DeviceInfo(backend="xpu", device_type="xpu", count=1, runtime_version="20250300",
                        arch="pvc")
    name = "torch213-cxx11-xpu20253-x86_64-linux"
    assert resolve_variants([name], device, LINUX, archs={name: ["bmg", "PVC"]}).best == name
    assert resolve_variants([name, "torch-xpu"], device, LINUX, archs={name: ["bmg"]}).best == "torch-xpu"
    unknown = resolve_variants([name], device.replace(arch=None), LINUX, archs={name: ["pvc"]})
    assert unknown.best == name and unknown.arch_note


def test_rocm_reads_the_gcn_name_without_feature_flags() -> None:
    assert gfx_name("gfx90a:sramecc+:xnack-") == "gfx90a"
    assert gfx_name("GFX942") == "gfx942"
    assert gfx_name("gfx9-4-generic") is None and gfx_name("sm_90") is None and gfx_name(None) is None


def test_judge_archs_combines_entries() -> None:
    def runs(a: str) -> bool | None:
        return {"yes": True, "no": False}.get(a)

    assert judge_archs(["?", "no", "yes"], runs) is True
    assert judge_archs(["?", "no"], runs) is False
    assert judge_archs(["?", "??"], runs) is None


# ------------------------------------------------------------- the hook's isolation
def _gpu(check_arch: object) -> object:
    def hook(device: DeviceInfo, archs: tuple[str, ...]) -> object:
        return check_arch(archs) if callable(check_arch) else check_arch

    return fake_backend("fakegpu", extra_hooks={"check_arch": hookimpl(hook)})


FAKE = DeviceInfo(backend="fakegpu", device_type="fakegpu", count=1)


def test_a_plugin_answers_for_its_own_device(manager: object) -> None:
    manager.register(_gpu(lambda archs: "v2" in archs), name="fakegpu")
    assert resolve_variants(["torch-fakegpu"], FAKE, LINUX, archs={"torch-fakegpu": ["v2"]}).best
    assert resolve_variants(["torch-fakegpu"], FAKE, LINUX, archs={"torch-fakegpu": ["v1"]}).best is None


@pytest.mark.parametrize("answer", [RuntimeError("boom"), "yes", 1])
def test_a_failing_or_wrong_answer_is_reported_and_counts_as_unchecked(
    manager: object, answer: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    def hook(archs: tuple[str, ...]) -> object:
        if isinstance(answer, Exception):
            raise answer
        return answer

    manager.register(_gpu(hook), name="fakegpu")
    res = resolve_variants(["torch-fakegpu"], FAKE, LINUX, archs={"torch-fakegpu": ["v1"]})
    assert res.best == "torch-fakegpu" and "not checked" in str(res.arch_note)
    failure = manager.failures()[-1]
    assert failure.stage == "check_arch" and "the architectures are not checked" in failure.message
    monkeypatch.setenv("KERNEL_PLUGINS_STRICT", "1")
    with pytest.raises(PluginError, match="check_arch"):
        resolve_variants(["torch-fakegpu"], FAKE, LINUX, archs={"torch-fakegpu": ["v1"]})


# --------------------------------------------------------------- metadata.json archs
def _meta(archs: object) -> dict[str, object]:
    return {"name": "kk", "id": "_kk", "version": 1, "license": "MIT", "python-depends": [],
            "backend": {"type": "cuda", "archs": archs}}


def test_archs_entries_are_validated_and_bounded() -> None:
    with pytest.raises(MetadataError, match=r"key 'backend.archs.1': Input should be a valid string"):
        parse_metadata(_meta(["8.0", 9.0]), where="m.json")
    with pytest.raises(MetadataError, match=r"key 'backend.archs': Input should be a valid tuple"):
        parse_metadata(_meta("8.0"), where="m.json")
    with pytest.raises(MetadataError, match=f"{MAX_ARCHS + 1} architectures; at most {MAX_ARCHS}"):
        parse_metadata(_meta(["8.0"] * (MAX_ARCHS + 1)), where="m.json")
    assert parse_metadata(_meta([]), where="m.json").backend.archs == ()
    assert len(parse_metadata(_meta(["x"] * MAX_ARCHS), where="m.json").backend.archs) == MAX_ARCHS


def test_the_longest_list_allowed_is_judged_quickly(manager: object) -> None:
    """A thousand unreadable entries, and a thousand that do not fit: judged and shown cut."""
    for archs in (["sm_x"] * MAX_ARCHS, ["7.0"] * MAX_ARCHS):
        res = resolve_variants([CU, "torch-cuda"], cuda((9, 0)), LINUX, archs={CU: archs})
        text = res.trace()
        assert len(text) < 1000 and "and 992 more" in text


# ---------------------------------------------------------------- free-threaded Python
FREE = SystemInfo(cpu="x86_64", os="linux", torch_version=(2, 13), cxx11_abi=True, free_threaded=True)


def test_free_threaded_python_refuses_compiled_variants_and_keeps_noarch(manager: object) -> None:
    names = [CU, "torch-stable-abi213-cu128-x86_64-linux", "tvm-ffi01-cu128-x86_64-linux",
             "torch-cuda", "torch-universal"]
    res = resolve_variants(names, cuda((9, 0)), FREE)
    assert res.accepted == ("torch-cuda", "torch-universal")
    reasons = {d.variant: d.reason for d in res.decisions if not d.accepted}
    assert set(reasons) == set(names[:3])
    assert all("free-threaded Python cannot load (it needs an abi3t build)" in str(r) for r in reasons.values())
    assert resolve_variants(names, cuda((9, 0)), LINUX).best == "torch-stable-abi213-cu128-x86_64-linux"


def test_the_system_knows_whether_it_is_free_threaded(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys
    import sysconfig

    real = sysconfig.get_config_var
    monkeypatch.setattr(sysconfig, "get_config_var",
                        lambda k: 1 if k == "Py_GIL_DISABLED" else real(k))
    assert SystemInfo.current().free_threaded is True  # at 3.15 too: abi3 never loads there
    assert SystemInfo.current().python_version == sys.version_info[:2]
    monkeypatch.setattr(sysconfig, "get_config_var", lambda k: 0 if k == "Py_GIL_DISABLED" else real(k))
    assert SystemInfo.current().free_threaded is False
    assert SystemInfo.current().to_dict()["free_threaded"] is False
