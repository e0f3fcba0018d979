"""``check_arch=`` with kernels' meaning on every call form that takes it: the nine of the
issue (three repositories of layers, three of functions, ``get_local_kernel``,
``get_locked_kernel``, ``load_kernel``) and ``get_kernel`` / ``has_kernel``. True (the
default) refuses a build whose ``backend.archs`` the device cannot run, with kernels'
``RuntimeError`` and its advice; False loads it, warning that it may crash the process.

One plugin backend (``fakegpu``, architecture ``v1``) judges architectures; the kernel is
a folder built for ``v2`` only, served for a Hub id through ``LOCAL_KERNELS`` (also under a
lock file), so no form needs the Hub.
"""

from __future__ import annotations

import inspect
import json
from pathlib import Path

import pytest
from kernel_plugins_testing.kernel_repos import make_repo
from torch import nn

import kernel_plugins.compat.kernels as kernels
from kernel_plugins.device import DeviceInfo
from kernel_plugins.errors import NoCompatibleVariantError
from kernel_plugins.hookspecs import hookimpl
from tests.lock.conftest import forget_kernel_modules  # noqa: F401 - a fixture
from tests.support.fakes import fake_backend

RID = "kernels-community/arch-compat"
pytestmark = pytest.mark.usefixtures("forget_kernel_modules")


@pytest.fixture
def v2_only(manager, tmp_path, monkeypatch):
    """The folder of a kernel built for architecture v2, the device's being v1; a lock."""

    @hookimpl
    def check_arch(device: DeviceInfo, archs: tuple[str, ...]) -> bool:
        return device.arch in archs

    device = DeviceInfo(backend="fakegpu", device_type="fakegpu", count=1, arch="v1")
    manager.register(fake_backend("fakegpu", detect=lambda: device, priority=100,
                                  extra_hooks={"check_arch": check_arch}), name="fakegpu")
    repo = make_repo(tmp_path / "repo", ["torch-fakegpu"], name="arch-compat",
                     archs={"torch-fakegpu": ["v2"]})
    monkeypatch.setenv("LOCAL_KERNELS", f"{RID}={repo}")
    lock = tmp_path / "kernels.lock"
    lock.write_text(json.dumps([{"dependency": {"repo-id": RID, "version": 1},
                                 "lock": {"commit": "ab" * 20}}]))
    return repo, lock


def _forms(repo: Path, lock: Path) -> dict[str, object]:
    """Each form, called with ``**kw`` (``check_arch``); what it returns serves ``SiluAndMul``
    or is the kernel module."""
    layer, func = {"layer_name": "SiluAndMul"}, {"func_name": "double"}
    return {
        "LayerRepository": lambda **kw: kernels.LayerRepository(RID, version=1, **layer, **kw).load(),
        "LocalLayerRepository": lambda **kw: kernels.LocalLayerRepository(repo, **layer, **kw).load(),
        "LockedLayerRepository": lambda **kw: kernels.LockedLayerRepository(
            RID, lockfile=lock, **layer, **kw).load(),
        "FuncRepository": lambda **kw: kernels.FuncRepository(RID, version=1, **func, **kw).load(),
        "LocalFuncRepository": lambda **kw: kernels.LocalFuncRepository(repo, **func, **kw).load(),
        "LockedFuncRepository": lambda **kw: kernels.LockedFuncRepository(
            RID, lockfile=lock, **func, **kw).load(),
        "get_local_kernel": lambda **kw: kernels.get_local_kernel(repo, **kw),
        "get_locked_kernel": lambda **kw: kernels.get_locked_kernel(RID, lockfile=lock, **kw),
        "load_kernel": lambda **kw: kernels.load_kernel(RID, lockfile=lock, **kw),
        "get_kernel": lambda **kw: kernels.get_kernel(RID, version=1, **kw),
    }


def test_check_arch_refuses_and_false_loads_on_every_form(v2_only):
    repo, lock = v2_only
    forms = _forms(repo, lock)
    for name, call in forms.items():
        assert inspect.signature(getattr(kernels, name)).parameters["check_arch"].default is True, name
        with pytest.raises(RuntimeError, match="does not support the current device") as info:
            call()  # type: ignore[operator]
        assert isinstance(info.value, NoCompatibleVariantError), name
        assert "check_arch=False" in str(info.value) and "built for architectures v2" in str(info.value)
        with pytest.warns(UserWarning, match="crash the process"):
            got = call(check_arch=False)  # type: ignore[operator]
        if name.endswith("Repository"):
            assert isinstance(got, type) and issubclass(got, nn.Module), name
            assert got.__name__ == "SiluAndMul" or "Func" in name, name
        else:
            assert got.VARIANT == "torch-fakegpu" and got.__kernel_provenance__.backend == "fakegpu", name
    assert not kernels.has_kernel(RID, version=1)
    assert kernels.has_kernel(RID, version=1, check_arch=False)


def test_check_arch_is_part_of_a_repository_and_must_be_a_bool(v2_only):
    repo, _ = v2_only
    checked = kernels.LocalLayerRepository(repo, layer_name="SiluAndMul")
    unchecked = kernels.LocalLayerRepository(repo, layer_name="SiluAndMul", check_arch=False)
    assert checked != unchecked and hash(checked) != hash(unchecked)
    assert unchecked.describe() == checked.describe() + " (check_arch False)"
    with pytest.raises(TypeError, match="check_arch must be True or False, got 'no'"):
        kernels.LocalLayerRepository(repo, layer_name="SiluAndMul", check_arch="no")  # type: ignore[arg-type]


def test_kernelize_follows_the_repositorys_check_arch(v2_only):
    repo, _ = v2_only

    @kernels.use_kernel_forward_from_hub("SiluAndMul")
    class SiluAndMul(nn.Module):
        def forward(self, x):
            return x

    for check, uses in ((True, False), (False, True)):
        layer = SiluAndMul()
        mapping = {"SiluAndMul": {"fakegpu": kernels.LocalLayerRepository(
            repo, layer_name="SiluAndMul", check_arch=check)}}
        with kernels.use_kernel_mapping(mapping), pytest.warns(UserWarning):
            kernels.kernelize(layer, mode=kernels.Mode.INFERENCE, device="fakegpu")
        assert (type(layer).forward is not layer.forward.__func__) is uses
