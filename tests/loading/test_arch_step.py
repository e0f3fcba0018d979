"""The architecture step of a load: a refused build makes way for the next, only its
``metadata.json`` is fetched (counted on the loopback Hub), the bytes that decided are the
bytes verified, ``check_arch=False`` (API, compat, CLI), kernelize, list-backends, info."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from kernel_plugins_testing.kernel_repos import make_repo

import kernel_plugins
from kernel_plugins import hub, verification
from kernel_plugins.cli.main import main
from kernel_plugins.compat import kernels as compat
from kernel_plugins.detection import system_info
from kernel_plugins.device import DeviceInfo
from kernel_plugins.errors import LayerError, NoCompatibleVariantError
from kernel_plugins.hookspecs import hookimpl
from kernel_plugins.variants import arch_variant_names
from tests.support.fakes import fake_backend
from tests.support.hub import HubServer, make_kernel_repo

CUDA = DeviceInfo(backend="cuda", device_type="cuda", count=1, runtime_version="12.8",
                  capability=(8, 0))
pytestmark = pytest.mark.usefixtures("forget_kernel_modules")


def _arch_name(token: str = "cu128") -> str:
    return arch_variant_names(system_info(), [token])[-1]


def _files(kernel_id: str, backend: str, archs: list[str], value: int) -> dict[str, str]:
    meta = {"name": "arch-step", "id": kernel_id, "version": 1, "license": "MIT",
            "python-depends": [], "backend": {"type": backend, "archs": archs}}
    return {"metadata.json": json.dumps(meta), "__init__.py": f"VALUE = {value}\n",
            "extra/data.txt": f"only downloaded with the variant {kernel_id}\n"}


@pytest.fixture
def fa3(hub_server: HubServer, request: pytest.FixtureRequest) -> tuple[str, str]:
    """An FA3-like repository: an arch build for 9.0a only (Hopper), and a noarch one."""
    repo_id = f"kernels-community/arch-step-{request.node.name[-40:].replace('_', '-').lower()}"
    slug = repo_id.rsplit("-", 1)[-1].replace("-", "_")
    arch = _arch_name()
    make_kernel_repo(hub_server, repo_id, variants={
        arch: _files(f"_arch_step_sm90_{slug}", "cuda", ["9.0a"], 90),
        "torch-cuda": _files(f"_arch_step_noarch_{slug}", "cuda", [], 1),
    })
    return repo_id, arch


def _fetched(server: HubServer) -> list[str]:
    return sorted({p.split("/resolve/", 1)[1].split("/", 1)[1] for p in server.paths("GET")
                   if "/resolve/" in p})


def test_a_refused_build_costs_one_small_file_and_the_next_one_loads(
    manager: object, hub_env: HubServer, fa3: tuple[str, str]
) -> None:
    repo_id, arch = fa3
    module = kernel_plugins.load(repo_id, version=1, device=CUDA)
    assert module.VALUE == 1 and module.__kernel_provenance__.variant == "torch-cuda"
    assert _fetched(hub_env) == sorted([f"build/{arch}/metadata.json", "build/torch-cuda/__init__.py",
                                        "build/torch-cuda/extra/data.txt", "build/torch-cuda/metadata.json"])
    ref = hub.resolve(repo_id, version=1)
    assert set(hub.cached_variants(ref)) == {"torch-cuda"}  # a metadata.json alone is no download


def test_check_arch_false_loads_the_best_with_a_warning_and_downloads_it_whole(
    manager: object, hub_env: HubServer, fa3: tuple[str, str]
) -> None:
    repo_id, arch = fa3
    assert kernel_plugins.load(repo_id, version=1, device=CUDA).VALUE == 1  # peeks the arch build
    hub_env.clear_requests()
    with pytest.warns(UserWarning, match="crash the process") as caught:
        module = compat.get_kernel(repo_id, version=1, backend=CUDA, check_arch=False)  # type: ignore[arg-type]
    assert module.VALUE == 90
    text = str(caught[0].message)
    assert "built for architectures 9.0a" in text and "the device's (8.0)" in text
    assert f"build/{arch}/extra/data.txt" in _fetched(hub_env)


def test_has_kernel_answers_with_the_architecture_step(
    manager: object, hub_env: HubServer, hub_server: HubServer, request: pytest.FixtureRequest
) -> None:
    repo_id = "kernels-community/arch-step-only-hopper"
    make_kernel_repo(hub_server, repo_id, variants={_arch_name(): _files("_arch_step_only_sm90", "cuda", ["9.0a"], 9)})
    hopper = CUDA.replace(capability=(9, 0))
    assert compat.has_kernel(repo_id, version=1, backend=hopper) is True  # type: ignore[arg-type]
    assert compat.has_kernel(repo_id, version=1, backend=CUDA) is False  # type: ignore[arg-type]
    assert compat.has_kernel(repo_id, version=1, backend=CUDA, check_arch=False) is True  # type: ignore[arg-type]


def test_the_metadata_that_decided_is_the_one_verified(
    manager: object, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A metadata.json swapped on disk after the architecture step read it is not what
    gets verified and imported: the bytes that decided are (a local folder has no listing
    that would catch the swap)."""
    arch = _arch_name()
    repo = make_repo(tmp_path / "repo", [arch, "torch-cuda"], archs={arch: ["8.0"]})
    meta_path = repo / "build" / arch / "metadata.json"
    decided = json.loads(meta_path.read_text())
    real = verification.peek_metadata

    def peek_then_swap(off: object, variant: str) -> bytes:
        raw = real(off, variant)  # type: ignore[arg-type]
        meta_path.write_text(json.dumps({**decided, "id": "_swapped_after_the_check",
                                         "backend": {"type": "cuda", "archs": ["12.0a"]}}))
        return raw

    monkeypatch.setattr(verification, "peek_metadata", peek_then_swap)
    module = kernel_plugins.load(repo, device=CUDA)
    prov = module.__kernel_provenance__
    assert prov.variant == arch and prov.metadata.id == decided["id"]
    assert prov.metadata.backend.archs == ("8.0",)


def test_a_hub_metadata_that_differs_from_the_listing_is_refused(
    manager: object, hub_env: HubServer, hf_cache: Path, fa3: tuple[str, str]
) -> None:
    """The architecture step reads the cached blob: a tampered one fails verification."""
    repo_id, arch = fa3
    kernel_plugins.load(repo_id, version=1, device=CUDA.replace(capability=(9, 0)))
    from kernel_plugins import registry

    registry._kernels.clear()  # the next load reads the cache again
    target = next(hf_cache.rglob(f"build/{arch}/metadata.json")).resolve()
    data = json.loads(target.read_text())
    target.chmod(0o644)
    target.write_text(json.dumps({**data, "backend": {"type": "cuda", "archs": ["8.0"]}}))
    from kernel_plugins.errors import IntegrityError

    with pytest.raises(IntegrityError, match="metadata.json"):
        kernel_plugins.load(repo_id, version=1, device=CUDA)


# ------------------------------------------------- a plugin backend, the CLI, kernelize
def _fakegpu(manager: object, arch: str = "v1") -> DeviceInfo:
    @hookimpl
    def check_arch(device: DeviceInfo, archs: tuple[str, ...]) -> bool:
        return device.arch in archs

    device = DeviceInfo(backend="fakegpu", device_type="fakegpu", count=1, arch=arch)
    manager.register(fake_backend("fakegpu", detect=lambda: device,  # type: ignore[attr-defined]
                                  extra_hooks={"check_arch": check_arch}), name="fakegpu")
    return device


def test_the_cli_loads_unchecked_only_when_asked(
    manager: object, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _fakegpu(manager)
    repo = make_repo(tmp_path / "repo", ["torch-fakegpu"], archs={"torch-fakegpu": ["v2"]})
    assert main(["load", str(repo), "--device", "fakegpu"]) == 1
    assert "torch-fakegpu: built for architectures v2; the device's architecture is v1" in capsys.readouterr().err
    assert main(["load", str(repo), "--device", "fakegpu", "--no-check-arch"]) == 0
    out, err = capsys.readouterr()
    assert "variant      torch-fakegpu" in out and "crash the process" in err


def test_kernelize_keeps_the_original_forward_for_a_refused_layer(
    manager: object, tmp_path: Path
) -> None:
    import torch

    from kernel_plugins import layers as kl

    device = _fakegpu(manager)
    repo = make_repo(tmp_path / "repo", ["torch-fakegpu"], archs={"torch-fakegpu": ["v9"]})

    @kl.use_kernel_forward_from_hub("SiluAndMul")
    class SiluAndMul(torch.nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return x

    layer = SiluAndMul()
    mapping = {"SiluAndMul": {"fakegpu": kl.LocalLayerRepository(repo, layer_name="SiluAndMul")}}
    with kl.use_kernel_mapping(mapping), pytest.warns(UserWarning, match="built for architectures v9"):
        kl.kernelize(layer, mode=kl.Mode.INFERENCE, device=device)
    choice = kl.kernel_choice(layer)
    assert choice is not None and not choice.uses_kernel
    with kl.use_kernel_mapping(mapping), pytest.raises(LayerError, match="built for architectures v9"), \
            pytest.warns(UserWarning, match="skipping"):
        kl.kernelize(layer, mode=kl.Mode.INFERENCE, device=device, use_fallback=False)


def test_list_backends_and_info_show_the_architecture(
    manager: object, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _fakegpu(manager, arch="v7")
    assert main(["list-backends", "--json"]) == 0
    rows = {r["name"]: r for r in json.loads(capsys.readouterr().out)["backends"]}
    assert rows["fakegpu"]["arch"] == "v7" and rows["cpu"]["arch"] is None
    repo = make_repo(tmp_path / "repo", ["torch-fakegpu"], archs={"torch-fakegpu": ["v7", "v8"]})
    assert main(["info", str(repo), "--device", "fakegpu"]) == 0
    out = capsys.readouterr().out
    assert "archs: v7, v8" in out and "device-arch: v7" in out


def test_no_variant_error_without_any_fit_lists_the_refusals(manager: object, tmp_path: Path) -> None:
    device = _fakegpu(manager)
    arch = _arch_name("fakegpu10")
    repo = make_repo(tmp_path / "repo", [arch, "torch-fakegpu"],
                     archs={arch: ["v3"], "torch-fakegpu": ["v2"]})
    with pytest.raises(NoCompatibleVariantError) as e:
        kernel_plugins.load(repo, device=device)
    assert f"{arch}: built for architectures v3" in str(e.value)
    assert "torch-fakegpu: built for architectures v2" in str(e.value)


def test_a_dependency_goes_through_the_architecture_step_and_check_arch(
    manager: object, hub_env: HubServer, hub_server: HubServer, fa3: tuple[str, str]
) -> None:
    dep_id, arch = fa3
    top = f"{dep_id}-top"
    meta = {"name": "arch-top", "id": f"_arch_top_{dep_id.rsplit('-', 1)[-1]}", "version": 1,
            "license": "MIT", "python-depends": [], "backend": {"type": "cuda"},
            "kernel-depends": [{"repo-id": dep_id, "version": 1}]}
    code = f"from kernel_plugins import get_kernel_dep\nVALUE = get_kernel_dep({dep_id!r}).VALUE\n"
    make_kernel_repo(hub_server, top, variants={"torch-cuda": {"metadata.json": json.dumps(meta),
                                                               "__init__.py": code}})
    module = kernel_plugins.load(top, version=1, device=CUDA)
    (dep,) = module.__kernel_provenance__.dependencies
    assert module.VALUE == 1 and dep.variant == "torch-cuda"  # the sm_90 build made way
    assert f"build/{arch}/extra/data.txt" not in _fetched(hub_env)
    for name in (module.__name__, dep.module_name):
        kernel_plugins.registry._kernels.pop(name, None)
        sys.modules.pop(name, None)
    with pytest.warns(UserWarning, match="built for architectures 9.0a"):
        module = kernel_plugins.load(top, version=1, device=CUDA, check_arch=False)
    assert module.VALUE == 90 and module.__kernel_provenance__.dependencies[0].variant == arch
