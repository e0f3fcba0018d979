"""Kernels live in their own namespace, never at top level; failed imports leave nothing behind."""

from __future__ import annotations

import importlib
import json
import pickle
import sys

import pytest

import kernel_plugins
from kernel_plugins.cli.main import main
from kernel_plugins.errors import KernelImportError, MetadataError
from kernel_plugins.registry import module_name
from tests.support.variant_dirs import unique_id, write_variant


@pytest.mark.parametrize("kernel_id", ["os", "tabnanny", "pytest", "kp_not_installed_anywhere"])
def test_a_kernel_id_never_meets_a_top_level_module(manager, tmp_path, monkeypatch, kernel_id):
    """Issue: an id naming a module that is not installed (or not imported yet) took its
    place for the whole process; kernels now live under ``kernel_plugins._kernels``."""
    for name in [n for n in sys.modules if n == kernel_id or n.startswith(kernel_id + ".")]:
        if kernel_id == "tabnanny":  # not imported: the kernel must not stand in for it
            monkeypatch.delitem(sys.modules, name)
    before = sys.modules.get(kernel_id)
    write_variant(tmp_path / "k", {"__init__.py": "from .sub import X\nVALUE = 7\n",
                                   "sub.py": "X = 1\n"}, kernel_id=kernel_id)
    module = kernel_plugins.load(tmp_path / "k", device="cpu")
    assert module.__name__ == f"kernel_plugins._kernels.{kernel_id}" == module_name(kernel_id)
    assert (module.VALUE, module.X) == (7, 1)  # relative imports inside the kernel work
    assert sys.modules.get(kernel_id) is before
    assert module.__kernel_provenance__.module_name == module.__name__
    if kernel_id == "kp_not_installed_anywhere":
        with pytest.raises(ModuleNotFoundError):
            importlib.import_module(kernel_id)
    else:
        real = importlib.import_module(kernel_id)
        assert real is not module and not hasattr(real, "VALUE")
    assert importlib.import_module(module_name(kernel_id)) is module


def test_a_layer_of_a_kernel_pickles_by_its_namespaced_name(manager, tmp_path):
    kid = unique_id("pickle")
    write_variant(tmp_path / "k", {"__init__.py": "from . import layers\n",
                                   "layers.py": "class Layer:\n    def __init__(self):\n"
                                   "        self.v = 3\n"}, kernel_id=kid)
    module = kernel_plugins.load(tmp_path / "k", device="cpu")
    data = pickle.dumps(module.layers.Layer())
    assert f"{module_name(kid)}.layers".encode() in data
    again = pickle.loads(data)
    assert type(again) is module.layers.Layer and again.v == 3


def test_kernel_calling_sys_exit_is_an_import_error_and_leaves_nothing(manager, tmp_path):
    kid = unique_id("exit")
    write_variant(tmp_path / "k", {"__init__.py": "from . import sub\nimport sys\nsys.exit(0)\n",
                                   "sub.py": "X = 1\n"}, kernel_id=kid)
    for _ in range(2):  # the second load raises again instead of returning a half module
        with pytest.raises(KernelImportError, match=r"SystemExit: 0 \(the kernel's code called sys.exit\)"):
            kernel_plugins.load(tmp_path / "k", device="cpu")
        assert module_name(kid) not in sys.modules and f"{module_name(kid)}.sub" not in sys.modules


@pytest.mark.parametrize("code", ["raise KeyError('x')", "raise BaseException('odd')"])
def test_any_exception_while_importing_leaves_nothing(manager, tmp_path, code):
    kid = unique_id("raise")
    write_variant(tmp_path / "k", {"__init__.py": code}, kernel_id=kid)
    with pytest.raises(KernelImportError):
        kernel_plugins.load(tmp_path / "k", device="cpu")
    assert module_name(kid) not in sys.modules


def test_cli_load_of_a_kernel_that_exits_fails_loudly(manager, tmp_path, capsys):
    write_variant(tmp_path / "k", {"__init__.py": "raise SystemExit(0)\n"})
    assert main(["load", str(tmp_path / "k")]) == 1
    assert "SystemExit" in capsys.readouterr().err


def test_the_same_build_loaded_twice_is_one_module(manager, tmp_path):
    kid = unique_id("twice")
    write_variant(tmp_path / "a", {"__init__.py": "VALUE = 1\n"}, kernel_id=kid)
    write_variant(tmp_path / "b", {"__init__.py": "VALUE = 1\n"}, kernel_id=kid)
    write_variant(tmp_path / "c", {"__init__.py": "VALUE = 2\n"}, kernel_id=kid)
    first = kernel_plugins.load(tmp_path / "a", device="cpu")
    assert kernel_plugins.load(tmp_path / "b", device="cpu") is first
    with pytest.raises(KernelImportError, match="already loaded .* with different files"):
        kernel_plugins.load(tmp_path / "c", device="cpu")


def test_huge_metadata_is_refused_before_parsing(manager, tmp_path):
    folder = write_variant(tmp_path / "k", {"__init__.py": ""})
    (folder / "metadata.json").write_text(json.dumps({"pad": "x" * (2 << 20)}))
    with pytest.raises(MetadataError, match="larger than the 1048576 allowed"):
        kernel_plugins.load(tmp_path / "k", device="cpu")


def test_deeply_nested_metadata_is_a_clear_error(manager, tmp_path):
    folder = write_variant(tmp_path / "k", {"__init__.py": ""})
    (folder / "metadata.json").write_text("[" * 200_000 + "]" * 200_000)
    with pytest.raises(MetadataError, match="nested too deeply"):
        kernel_plugins.load(tmp_path / "k", device="cpu")
    assert main(["check", str(tmp_path / "k")]) == 1


@pytest.mark.parametrize("kernel_id", ["__class__", "__spec__", "__path__", "__dict__", "__x"])
def test_a_kernel_id_reserved_for_python_is_refused(manager, tmp_path, kernel_id):
    """Issue: ``__class__`` raised a raw TypeError and left a stale entry; ``__spec__`` loaded
    and then broke every other kernel import of the process."""
    write_variant(tmp_path / "k", {"__init__.py": "VALUE = 1\n"}, kernel_id=kernel_id)
    with pytest.raises(MetadataError, match=f"'{kernel_id}' must not start with two underscores"):
        kernel_plugins.load(tmp_path / "k", device="cpu")
    write_variant(tmp_path / "ok", {"__init__.py": "VALUE = 2\n"})
    assert kernel_plugins.load(tmp_path / "ok", device="cpu").VALUE == 2


def test_a_failed_import_under_a_reserved_name_is_cleaned_up_whole(manager, tmp_path):
    """The clean-up of a failed import cannot fail halfway, whatever the name (the metadata
    check keeps such names out; this is the importer's own guard)."""
    from kernel_plugins import registry
    from kernel_plugins.importer import import_snapshot
    from kernel_plugins.integrity import read_variant
    from kernel_plugins.metadata import parse_metadata_bytes
    from kernel_plugins.provenance import KernelLoad

    folder = write_variant(tmp_path / "k", {"__init__.py": "VALUE = 1\n"})
    meta = parse_metadata_bytes((folder / "metadata.json").read_bytes(), where="m")
    name = f"{registry.NAMESPACE}.__class__"
    load = KernelLoad("k", "torch-cpu", folder, meta, name)
    for _ in range(2):  # the same error again: nothing was left behind
        with pytest.raises(KernelImportError, match="TypeError"):
            import_snapshot(load, read_variant(folder))
        assert name not in registry._kernels and name not in sys.modules
    assert type(sys.modules[registry.NAMESPACE]) is type(sys)
