"""Variant resolution against the pinned HF kernels release, on generated inputs.

kernels' own resolver (``_resolve_variant_for_system``, which takes the system's facts as
arguments) is run in this process next to ours on the same described system and the same
variant names: both must accept the same set and choose the same best variant (any of
kernels' equally ranked ones: kernels keeps the input order between them). A difference is
allowed only where docs/hardware.md lists it under "Differences from kernels" with its
reason; the test reads that list. When the pin moves, the cases that fail are the rules that
changed (docs/contributing.md).
"""

from __future__ import annotations

import random
import re
from importlib import metadata
from pathlib import Path

import kernels._internals.backends as kb
import kernels._internals.variants as kv
import pytest
from packaging.version import Version

from kernel_plugins.device import DeviceInfo, SystemInfo
from kernel_plugins.plugins import PluginManager, reset_manager
from kernel_plugins.resolving import resolve_variants
from kernel_plugins.variants import parse_variant
from tests.support.pins import kernels_pin

DOC = Path(__file__).resolve().parents[2] / "docs" / "hardware.md"
CASES = 600


def documented_differences() -> dict[str, str]:
    """The ids and reasons listed under "## Differences from kernels" (each once)."""
    text = DOC.read_text(encoding="utf-8").split("## Differences from kernels", 1)[1]
    section = text.split("\n## ", 1)[0]
    items = re.findall(r"^- `([a-z0-9-]+)`: (.+)$", section, flags=re.M)
    ids = [i for i, _ in items]
    assert len(ids) == len(set(ids)), f"a difference is listed twice in {DOC.name}: {ids}"
    return dict(items)


# A backend: (ours: backend, device type, runtime text), kernels' Backend, its 0.19 name,
# its legacy token, the 0.19 form, neighbours of the token (other versions) in both forms.
def backends(rng: random.Random) -> list[tuple[DeviceInfo, object, list[str], str]]:
    """(our device, kernels' backend, token forms to use in names, noarch name) per backend."""
    out = [(DeviceInfo(backend="cpu", device_type="cpu", count=1), kb.CPU(), ["cpu"], "cpu")]
    for major, minor in ((12, 8), (12, 4), (13, 0), (11, 8)):
        near = [(major, minor), (major, max(minor - 2, 0)), (major, minor + 1), (major + 1, 0)]
        out.append((DeviceInfo(backend="cuda", device_type="cuda", count=1, runtime_version=f"{major}.{minor}"),
                    kb.CUDA(version=Version(f"{major}.{minor}")),
                    [f for v in near for f in (f"cu{v[0]}{v[1]}", f"cuda-{v[0]}.{v[1]}")], "cuda"))
    for major, minor in ((6, 3), (7, 1)):
        near = [(major, minor), (major, minor - 1), (major, minor + 1), (major + 1, 0)]
        out.append((DeviceInfo(backend="rocm", device_type="cuda", count=1, runtime_version=f"{major}.{minor}.4-x"),
                    kb.ROCm(version=Version(f"{major}.{minor}")),
                    [f for v in near for f in (f"rocm{v[0]}{v[1]}", f"rocm-{v[0]}.{v[1]}")], "rocm"))
    out.append((DeviceInfo(backend="xpu", device_type="xpu", count=1, runtime_version="20250300"),
                kb.XPU(version=Version("2025.3")), ["xpu20253", "xpu-2025.3", "xpu20252", "xpu-2025.2"], "xpu"))
    out.append((DeviceInfo(backend="metal", device_type="mps", count=1), kb.Metal(), ["metal"], "metal"))
    for major, minor in ((8, 3), (10, 0)):
        out.append((DeviceInfo(backend="npu", device_type="npu", count=1, runtime_version=f"{major}.{minor}.RC1"),
                    kb.CANN(version=Version(f"{major}.{minor}")),
                    [f"cann{major}{minor}", f"cann-{major}.{minor}", f"cann{major}{minor + 1}",
                     f"cann-{major}.{minor + 1}"], "cann"))
    out.append((DeviceInfo(backend="neuron", device_type="neuron", count=1), kb.Neuron(), ["neuron"], "neuron"))
    out.append((DeviceInfo(backend="tpu", device_type="tpu", count=1, runtime_version="0.0.51"), kb.TPU(),
                ["tpu"], "tpu"))
    return out


def system_of(rng: random.Random, backend: str) -> SystemInfo:
    """Random system facts (macOS for metal, Linux or Windows otherwise)."""
    darwin = backend == "metal"
    os_ = "darwin" if darwin else rng.choice(["linux", "linux", "linux", "windows"])
    torch = rng.choice([(2, 13), (2, 13), (2, 10), None])
    return SystemInfo(
        cpu="aarch64" if darwin else rng.choice(["x86_64", "x86_64", "aarch64"]), os=os_,
        torch_version=torch, cxx11_abi=rng.choice([True, False]) if torch and os_ == "linux" else None,
        macos_version=rng.choice([(15, 2), (26, 0), (26, 1)]) if darwin else None,
        tvm_ffi_version=rng.choice([None, (0, 1), (0, 2)]),
        free_threaded=rng.random() < 0.25, python_version=rng.choice([(3, 10), (3, 12), (3, 15), (3, 16)]),
        mlx=rng.random() < 0.5,
    )


def names_for(rng: random.Random, system: SystemInfo, forms: list[str], noarch: str) -> list[str]:
    """A random set of names around the system: both grammars, near misses of every part."""
    tv = system.torch_version or (2, 13)
    torch_versions = [tv, (tv[0], tv[1] - 1), (tv[0], tv[1] + 1)]
    cpu, os_ = system.cpu, system.os
    others = ["cu128", "cuda-12.8", "rocm-6.3", "xpu-2025.3", "cann-8.3", "metal", "cpu", "neuron"]
    pool: list[str] = []
    for _ in range(30):
        token = rng.choice(forms + forms + others)
        new = "-" in token or (rng.random() < 0.5 and token.isalpha())
        fit = rng.random() < 0.5  # every shared part fits the system: the backend decides
        tail = f"{cpu}-{os_}" if fit else (
            f"{rng.choice([cpu, cpu, 'x86_64', 'aarch64'])}-{rng.choice([os_, os_, 'linux', 'darwin'])}")
        major, minor = tv if fit else rng.choice(torch_versions)
        tag = "" if system.cxx11_abi is None else "-cxx11" if system.cxx11_abi else "-cxx98"
        if new:
            py = rng.choice(["cpython-3.9-abi3", "cpython-3.12-abi3", "cpython-3.15-abi3t",
                             "cpython-3.16-abi3", "cpython-3.11-abi3t"])
            if fit:
                py = "cpython-3.15-abi3t" if system.free_threaded else "cpython-3.9-abi3"
            abi = rng.choice(["", tag] if fit else ["", "", "-cxx11", "-cxx98"])
            smaj, smin = rng.choice([(2, 9), (2, 11), (major, minor), (1, 5), (3, 0)])
            tmaj, tmin = rng.choice([(0, 1), (0, 2)])
            framework = rng.choice([f"torch-{major}.{minor}{abi}", f"torch-stable-abi-{smaj}.{smin}",
                                    f"tvm-ffi-{tmaj}.{tmin}", "sdk", "sdk"])
            pool.append(f"{framework}-{token}-{py}-{tail}")
            if rng.random() < 0.2:
                pool.append(f"sdk-{py}-{tail}")
        else:
            abi = rng.choice(["", tag] if fit else ["", "-cxx11", "-cxx98"])
            smin = rng.choice([9, 11, minor])
            tmaj, tmin = rng.choice([(0, 1), (0, 2)])
            framework = rng.choice([f"torch{major}{minor}{abi}", f"torch-stable-abi{major}{smin}",
                                    f"tvm-ffi{tmaj}{tmin}"])
            pool.append(f"{framework}-{token}-{tail}")
    pool += [f"torch-{noarch}", "torch-universal", f"mlx-{noarch}", "mlx-universal", "torch-npu", "torch-cuda",
             "torch-cann", "torch-cpu", "sdk", f"sdk-{noarch}", "sdk-cuda", "sdk-universal", "mlx-metal"]
    return rng.sample(pool, rng.randint(1, 9))


def theirs(names: list[str], backend: object, system: SystemInfo) -> tuple[set[str], set[str]]:
    """kernels' accepted names, and the names it ranks first (ties included)."""
    parsed = {}
    for name in names:
        try:
            parsed_one = kv.parse_variant(name)
            parsed[id(parsed_one)] = (parsed_one, name)
        except ValueError:
            pass
    def v(t: tuple[int, int] | None) -> object:
        return None if t is None else Version("{}.{}".format(*t))

    accepted, _ = kv._resolve_variant_for_system(
        variants=[v_ for v_, _ in parsed.values()], selected_backend=backend, cpu=system.cpu, os=system.os,
        torch_version=v(system.torch_version), torch_cxx11_abi=system.cxx11_abi,
        tvm_ffi_version=v(system.tvm_ffi_version), macos_version=v(system.macos_version),
        python_version=v(system.python_version), free_threaded=system.free_threaded, has_mlx=system.mlx,
    )
    names_of = {id(a): parsed[id(a)][1] for a in accepted}
    best = set()
    if accepted:
        top = kv.VariantAccepted(accepted[0])
        for a in accepted:  # a stable sort keeps a tied one first
            if kv._sort_variants([kv.VariantAccepted(a), top])[0].variant is a:
                best.add(names_of[id(a)])
    return set(names_of.values()), best


def why_different(name: str, device: DeviceInfo) -> str | None:
    """The documented difference a name falls under on this device (None: none)."""
    try:
        v = parse_variant(name)
    except Exception:  # noqa: BLE001 - a name we call malformed: no documented difference
        return None
    if device.backend == "npu" and v.noarch_backend == "npu":
        return "npu-noarch"
    if device.backend in ("neuron", "tpu") and v.token == device.backend:
        return "compiled-neuron-tpu"
    return None


def test_resolution_agrees_with_the_pinned_kernels_release(monkeypatch: pytest.MonkeyPatch) -> None:
    assert metadata.version("kernels") == kernels_pin(), "the oracle is the pinned kernels release"
    documented = documented_differences()
    monkeypatch.delenv("KERNEL_PLUGINS_STRICT", raising=False)
    old = reset_manager(PluginManager())  # the installed plugins: npu, neuron, tpu too
    rng = random.Random(19_1)
    seen: set[str] = set()
    failures: list[str] = []
    try:
        table = backends(rng)
        for case in range(CASES):
            device, backend, forms, noarch = table[case % len(table)]
            system = system_of(rng, device.backend)
            names = names_for(rng, system, forms, noarch)
            ours = resolve_variants(names, device, system)
            k_accepted, k_best = theirs(names, backend, system)
            allowed = {n: why_different(n, device) for n in set(ours.accepted) ^ k_accepted}
            seen.update(i for i in allowed.values() if i)
            undocumented = {n for n, i in allowed.items() if i not in documented}
            best_ok = ours.best in k_best or (not k_best and ours.best is None) or (
                why_different(ours.best or "", device) in documented
                or any(why_different(b, device) in documented for b in k_best))
            if undocumented or not best_ok:
                failures.append(f"{device.summary()} on {system}: names {sorted(names)}: ours accepts "
                                f"{list(ours.accepted)}, kernels {sorted(k_accepted)} (best {sorted(k_best)}); "
                                f"undocumented: {sorted(undocumented)}\n{ours.trace()}")
    finally:
        reset_manager(old)
    assert not failures, f"{len(failures)} of {CASES} cases differ:\n" + "\n\n".join(failures[:5])
    assert seen == {"npu-noarch", "compiled-neuron-tpu"}, seen  # each documented one is exercised
    assert seen <= set(documented)
