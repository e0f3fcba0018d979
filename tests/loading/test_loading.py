"""Loading kernels from local folders: layouts, metadata, dependencies, provenance."""

from __future__ import annotations

import os
import sys
import warnings

import pytest

import kernel_plugins
from kernel_plugins.errors import (
    KernelImportError,
    MetadataError,
    MissingDependencyError,
    NoCompatibleVariantError,
    SourceError,
)
from kernel_plugins.registry import module_name
from tests.support.kernels import make_repo, make_variant

CPU_ARCH = "torch{0}{1}-cxx11-cpu-x86_64-linux"


def test_flat_layout_repo_loads_best_variant(manager, tmp_path):
    repo = make_repo(tmp_path / "k", ["torch-cpu", "torch-cuda", "torch-universal"])
    mod = kernel_plugins.load(repo, device="cpu")
    prov = mod.__kernel_provenance__
    assert prov.variant == "torch-cpu" and prov.source == "local" and prov.backend == "cpu"
    assert prov.emulated is False
    assert mod.add_one(1) == 2
    assert prov in kernel_plugins.loaded_kernels()


def test_nested_layout_and_relative_imports(manager, tmp_path):
    code = "from ._impl import twice\n"
    make_variant(tmp_path / "n", "torch-cpu", name="nested-kernel", layout="nested", code=code,
                 extra_files={"_impl.py": "def twice(x):\n    return 2 * x\n"})
    mod = kernel_plugins.load(tmp_path / "n", device="cpu")
    assert mod.twice(4) == 8
    assert mod.__name__ == mod.__kernel_provenance__.module_name


def test_folder_of_variants_and_single_variant_folder(manager, tmp_path):
    make_variant(tmp_path / "vs", "torch-cpu", in_build=False, name="vs-kernel")
    make_variant(tmp_path / "vs", "torch-cuda", in_build=False, name="vs-kernel")
    assert kernel_plugins.load(tmp_path / "vs").__kernel_provenance__.variant == "torch-cpu"
    one = make_variant(tmp_path / "one", "torch-cpu", in_build=False, name="one-kernel")
    assert kernel_plugins.load(one).__kernel_provenance__.variant == "torch-cpu"


def test_two_builds_of_one_kernel_load_side_by_side(manager, tmp_path):
    a = make_variant(tmp_path / "a", "torch-cpu", name="same", kernel_id="_same_aaaa")
    b = make_variant(tmp_path / "b", "torch-cpu", name="same", kernel_id="_same_bbbb")
    ma = kernel_plugins.load(a.parent.parent, device="cpu")
    mb = kernel_plugins.load(b.parent.parent, device="cpu")
    assert ma is not mb
    # each under its own name in the kernels' namespace
    assert (ma.identify(), mb.identify()) == (module_name("_same_aaaa"), module_name("_same_bbbb"))
    # cached per variant path
    assert kernel_plugins.load(a.parent.parent, device="cpu") is ma


def test_same_id_from_another_path_is_refused(manager, tmp_path):
    make_variant(tmp_path / "x1", "torch-cpu", kernel_id="_clash_1234")
    make_variant(tmp_path / "x2", "torch-cpu", kernel_id="_clash_1234", code="VALUE = 2\n")
    kernel_plugins.load(tmp_path / "x1")
    with pytest.raises(KernelImportError, match="already loaded"):
        kernel_plugins.load(tmp_path / "x2")


def test_identical_copy_of_a_loaded_build_is_reused(manager, tmp_path):
    make_variant(tmp_path / "c1", "torch-cpu", kernel_id="_copy_1234")
    make_variant(tmp_path / "c2", "torch-cpu", kernel_id="_copy_1234")
    assert kernel_plugins.load(tmp_path / "c1") is kernel_plugins.load(tmp_path / "c2")


@pytest.mark.parametrize(
    "meta,fragment",
    [
        ({"version": "one"}, "key 'version'"),
        ({"id": "a.b"}, "key 'id'"),
        ({"backend": "cpu"}, "key 'backend'"),
        ({"name": "Bad_Name"}, "key 'name'"),
    ],
)
def test_bad_metadata_names_key_and_file(manager, tmp_path, meta, fragment):
    make_variant(tmp_path / "m", "torch-cpu", metadata=meta)
    with pytest.raises(MetadataError) as e:
        kernel_plugins.load(tmp_path / "m")
    assert fragment in str(e.value) and "metadata.json" in str(e.value)


def test_malformed_metadata_json(manager, tmp_path):
    v = make_variant(tmp_path / "j", "torch-cpu")
    (v / "metadata.json").write_text("{not json")
    with pytest.raises(MetadataError, match="malformed JSON at line 1"):
        kernel_plugins.load(tmp_path / "j")


def test_missing_python_dependency_says_pip_install(manager, tmp_path):
    make_variant(tmp_path / "d", "torch-cpu", python_depends=["einops"])
    import importlib.util

    if importlib.util.find_spec("einops") is not None:
        pytest.skip("einops is installed")
    with pytest.raises(MissingDependencyError, match="pip install einops"):
        kernel_plugins.load(tmp_path / "d")


def test_unknown_python_dependency_is_an_error(manager, tmp_path):
    make_variant(tmp_path / "u", "torch-cpu", python_depends=["nki"])
    with pytest.raises(MetadataError, match="'nki', which is not a known dependency for backend 'cpu'"):
        kernel_plugins.load(tmp_path / "u")


def test_failed_import_leaves_nothing_behind(manager, tmp_path):
    make_variant(tmp_path / "f", "torch-cpu", kernel_id="_fails_0001", code="raise RuntimeError('bad kernel')\n")
    with pytest.raises(KernelImportError, match="bad kernel"):
        kernel_plugins.load(tmp_path / "f")
    assert "_fails_0001" not in sys.modules


def test_no_variant_error_lists_every_variant_with_reason(manager, tmp_path):
    make_repo(tmp_path / "nv", ["torch-cuda", "torch210-cxx11-cu128-x86_64-linux", "weird name"])
    with pytest.raises(NoCompatibleVariantError) as e:
        kernel_plugins.load(tmp_path / "nv", device="cpu", fallback="error")
    text = str(e.value)
    assert "torch-cuda: noarch variant for backend 'cuda'" in text
    assert "torch210-cxx11-cu128-x86_64-linux: built for torch 2.10" in text
    assert "weird name: malformed variant name" in text
    assert "Source local" in text
    assert e.value.resolution.best is None


def test_universal_variant_warns_deprecated(manager, tmp_path):
    make_repo(tmp_path / "uni", ["torch-universal"])
    with pytest.warns(DeprecationWarning, match="torch-cpu for this device"):
        kernel_plugins.load(tmp_path / "uni")


def test_local_kernels_override_and_default_org(manager, tmp_path, monkeypatch):
    make_repo(tmp_path / "lk", ["torch-cpu"], name="lk-kernel")
    monkeypatch.setenv("LOCAL_KERNELS", f"acme/thing=/nonexistent{os.pathsep}acme/lk={tmp_path / 'lk'}")
    mod = kernel_plugins.load("acme/lk")
    assert mod.__kernel_provenance__.source == "local-kernels"
    assert mod.__kernel_provenance__.repo_id == "acme/lk"
    monkeypatch.setenv("KERNEL_PLUGINS_DEFAULT_ORG", "acme")
    assert kernel_plugins.load("lk") is mod


def test_malformed_local_kernels_entry(manager, monkeypatch):
    monkeypatch.setenv("LOCAL_KERNELS", "justapath")
    with pytest.raises(SourceError, match="LOCAL_KERNELS entry 'justapath' is malformed"):
        kernel_plugins.load("acme/x")


def test_symlinked_variant_outside_repo_is_refused(manager, tmp_path):
    outside = make_variant(tmp_path / "outside", "torch-cpu")
    (tmp_path / "repo" / "build").mkdir(parents=True)
    os.symlink(outside, tmp_path / "repo" / "build" / "torch-cpu")
    with pytest.raises(SourceError, match="points outside"):
        kernel_plugins.load(tmp_path / "repo")


def test_missing_path_and_empty_repo(manager, tmp_path):
    with pytest.raises(SourceError, match="does not exist"):
        kernel_plugins.load(tmp_path / "nope")
    (tmp_path / "empty" / "build").mkdir(parents=True)
    with pytest.raises(SourceError, match="holds no build variants"):
        kernel_plugins.load(tmp_path / "empty")


def test_dirty_build_warns(manager, tmp_path):
    make_variant(tmp_path / "dirty", "torch-cpu", metadata={"provenance": {
        "kernel-builder": {"version": "0.19.1"}, "kernel": {"commit": "a" * 40, "dirty": True}}})
    with pytest.warns(UserWarning, match="dirty source tree"):
        kernel_plugins.load(tmp_path / "dirty")


def test_plugin_load_kernel_hook_can_serve_module(manager, tmp_path):
    import types

    from kernel_plugins.hookspecs import hookimpl
    from tests.support.fakes import fake_backend

    served = types.ModuleType("served_kernel")
    seen = []

    @hookimpl
    def load_kernel(device, load):
        seen.append((device.backend, load.variant, load.metadata.name))
        return served

    manager.register(fake_backend("srv", extra_hooks={"load_kernel": load_kernel}), name="srv")
    make_repo(tmp_path / "s", ["torch-srv"], name="srv-kernel")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        mod = kernel_plugins.load(tmp_path / "s", device="srv")
    assert mod is served and seen == [("srv", "torch-srv", "srv-kernel")]
    assert mod.__kernel_provenance__.backend == "srv"


def test_bundled_reference_kernels_load_by_path_without_deprecation(manager):
    from kernel_plugins.reference import reference_repo

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        mod = kernel_plugins.load(reference_repo("rmsnorm"), device="cpu")
    assert mod.__kernel_provenance__.variant == "torch-cpu"
    assert hasattr(mod, "apply_rms_norm")


def test_warnings_point_at_the_callers_code(manager, tmp_path):
    make_repo(tmp_path / "uw", ["torch-universal"])
    with pytest.warns(DeprecationWarning) as record:
        kernel_plugins.load(tmp_path / "uw")
    assert record[0].filename == __file__


def test_hub_pins_on_a_local_folder_are_refused(manager, tmp_path):
    make_repo(tmp_path / "pin", ["torch-cpu"], name="pin-kernel")
    with pytest.raises(SourceError, match="version=1 only applies to Hub repositories"):
        kernel_plugins.load(tmp_path / "pin", version=1)
