"""What runs is what was verified: bytecode, files swapped after the check, native modules."""

from __future__ import annotations

import importlib.util
import json
import os
import py_compile
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

import kernel_plugins
from kernel_plugins.errors import IntegrityError, KernelImportError
from kernel_plugins.registry import module_name
from tests.support.variant_dirs import unique_id, write_variant


def plant_pyc(folder: Path, module: str, source: str, *, mode: str = "UNCHECKED_HASH") -> Path:
    """Compile ``source`` as the cached bytecode of ``folder/<module>.py``."""
    fake = folder / f".{module}.tmp.py"
    fake.write_text(source)
    target = Path(importlib.util.cache_from_source(str(folder / f"{module}.py")))
    target.parent.mkdir(exist_ok=True)
    py_compile.compile(str(fake), cfile=str(target),
                       invalidation_mode=getattr(py_compile.PycInvalidationMode, mode))
    fake.unlink()
    return target


@pytest.mark.parametrize("mode", ["UNCHECKED_HASH", "CHECKED_HASH", "TIMESTAMP"])
def test_planted_bytecode_never_runs(manager, tmp_path, mode):
    folder = write_variant(tmp_path / "k", {"__init__.py": "from .impl import VALUE\n",
                                            "impl.py": "VALUE = 'source'\n"})
    plant_pyc(folder, "__init__", "VALUE = 'evil'\n", mode=mode)
    plant_pyc(folder, "impl", "VALUE = 'evil'\n", mode=mode)
    module = kernel_plugins.load(tmp_path / "k", device="cpu")
    assert module.VALUE == "source"
    # nothing new was written as bytecode either
    assert sorted(p.name for p in (folder / "__pycache__").iterdir()) == sorted(
        [Path(importlib.util.cache_from_source(str(folder / n))).name for n in ("__init__.py", "impl.py")]
    )


def test_sourceless_module_is_not_importable(manager, tmp_path):
    folder = write_variant(tmp_path / "k", {"__init__.py": "from .hidden import VALUE\n"})
    compiled = tmp_path / "hidden.py"
    compiled.write_text("VALUE = 'evil'\n")
    py_compile.compile(str(compiled), cfile=str(folder / "hidden.pyc"))
    with pytest.raises(KernelImportError, match="No module named .*hidden.* among the verified"):
        kernel_plugins.load(tmp_path / "k", device="cpu")


def test_file_swapped_after_verification_does_not_run(manager, tmp_path, monkeypatch):
    folder = write_variant(tmp_path / "k", {"__init__.py": "from .impl import VALUE\n",
                                            "impl.py": "VALUE = 'verified'\n"}, digest=True)
    original = manager.load_kernel

    def swap_then_import(device, load):  # runs after verification, just before the import
        (folder / "impl.py").write_text("VALUE = 'swapped'\n")
        (folder / "extra.py").write_text("VALUE = 'added'\n")
        return original(device, load)

    monkeypatch.setattr(manager, "load_kernel", swap_then_import)
    module = kernel_plugins.load(tmp_path / "k", device="cpu")
    assert module.VALUE == "verified"
    with pytest.raises(ModuleNotFoundError, match="files added after verification"):
        importlib.import_module(module.__name__ + ".extra")
    # the next load reads again, and the digest catches the change
    monkeypatch.setattr(manager, "load_kernel", original)
    with pytest.raises(IntegrityError, match="impl.py: content does not match the digest"):
        kernel_plugins.load(tmp_path / "k", device="cpu")


def test_inspect_sees_the_verified_source(manager, tmp_path, monkeypatch):
    import inspect

    folder = write_variant(tmp_path / "k", {"__init__.py": "def f():\n    return 1\n"})
    module = kernel_plugins.load(tmp_path / "k", device="cpu")
    assert module.__loader__.get_source(module.__name__) == "def f():\n    return 1\n"
    assert inspect.getsource(module.f).startswith("def f()")
    assert module.__file__ == str(folder / "__init__.py")


_EXT_C = r"""
#include <Python.h>
static struct PyModuleDef def = {PyModuleDef_HEAD_INIT, "%(name)s", NULL, -1, NULL};
PyMODINIT_FUNC PyInit_%(name)s(void) {
    PyObject *m = PyModule_Create(&def);
    if (m) PyModule_AddStringConstant(m, "WHO", "%(who)s");
    return m;
}
"""


def build_extension(tmp_path: Path, name: str, who: str) -> Path:
    cc = shutil.which("cc") or shutil.which("gcc")
    include = sysconfig.get_paths()["include"]
    if cc is None or not Path(include, "Python.h").is_file():
        message = "no C compiler or Python headers to build a test extension (scripts/setup.sh installs them)"
        pytest.fail(message) if os.environ.get("CI") else pytest.skip(message)
    src = tmp_path / f"{name}_{who}.c"
    src.write_text(_EXT_C % {"name": name, "who": who})
    out = tmp_path / f"{name}_{who}{sysconfig.get_config_var('EXT_SUFFIX')}"
    subprocess.run([cc, "-shared", "-fPIC", f"-I{include}", str(src), "-o", str(out)], check=True)
    return out


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="memfd copies are Linux-only")
def test_native_extension_loads_from_its_verified_private_copy(manager, tmp_path, monkeypatch):
    name = "_native_probe"
    good = build_extension(tmp_path, name, "verified")
    evil = build_extension(tmp_path, name, "swapped")
    folder = write_variant(tmp_path / "k", {"__init__.py": f"from . import {name}\n"})
    ext = folder / f"{name}{sysconfig.get_config_var('EXT_SUFFIX')}"
    shutil.copy(good, ext)
    original = manager.load_kernel

    def swap_then_import(device, load):
        shutil.copy(evil, ext)
        return original(device, load)

    monkeypatch.setattr(manager, "load_kernel", swap_then_import)
    module = kernel_plugins.load(tmp_path / "k", device="cpu")
    native = getattr(module, name)
    assert native.WHO == "verified"
    assert native.__file__.startswith("/proc/self/fd/")


def test_digest_mismatch_is_refused_for_local_folders_and_local_kernels(
    manager, tmp_path, monkeypatch
):
    folder = write_variant(tmp_path / "k", {"__init__.py": "VALUE = 1\n"}, digest=True)
    (folder / "__init__.py").write_text("VALUE = 2\n")
    with pytest.raises(IntegrityError, match="__init__.py: content does not match the digest"):
        kernel_plugins.load(tmp_path / "k", device="cpu")
    monkeypatch.setenv("LOCAL_KERNELS", f"acme/k={tmp_path / 'k'}")
    with pytest.raises(IntegrityError, match="does not match the digest"):
        kernel_plugins.load("acme/k", device="cpu")
    meta = json.loads((folder / "metadata.json").read_text())
    assert module_name(meta["id"]) not in sys.modules


@pytest.mark.parametrize("where", ["file", "folder"])
def test_links_out_of_a_local_variant_are_refused(manager, tmp_path, where, monkeypatch):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "evil.py").write_text("VALUE = 'evil'\n")
    folder = write_variant(tmp_path / "k", {"__init__.py": "VALUE = 1\n"})
    if where == "file":
        os.symlink(outside / "evil.py", folder / "evil.py")
        pattern = "points outside the variant folder"
    else:
        os.symlink(outside, folder / "sub")
        pattern = "points outside the variant folder"
    with pytest.raises(IntegrityError, match=pattern):
        kernel_plugins.load(tmp_path / "k", device="cpu")
    monkeypatch.setenv("LOCAL_KERNELS", f"acme/k={tmp_path / 'k'}")
    with pytest.raises(IntegrityError, match=pattern):
        kernel_plugins.load("acme/k", device="cpu")


def test_a_link_to_a_folder_inside_the_variant_is_refused_too(manager, tmp_path):
    folder = write_variant(tmp_path / "k", {"__init__.py": "VALUE = 1\n", "real/x.py": ""})
    os.symlink(folder / "real", folder / "alias")
    with pytest.raises(IntegrityError, match="a link to a folder"):
        kernel_plugins.load(tmp_path / "k", device="cpu")


def test_links_inside_the_variant_are_read_once(manager, tmp_path):
    folder = write_variant(tmp_path / "k", {"__init__.py": "from .alias import V as VALUE\n",
                                            "real.py": "V = 3\n"})
    os.symlink(folder / "real.py", folder / "alias.py")
    assert kernel_plugins.load(tmp_path / "k", device="cpu").VALUE == 3


def test_unique_id_helper_is_unique():
    assert unique_id() != unique_id()


def test_a_metadata_link_out_of_the_variant_is_refused_before_it_is_parsed(manager, tmp_path):
    folder = write_variant(tmp_path / "k", {"__init__.py": "VALUE = 1\n"})
    outside = tmp_path / "elsewhere.json"
    outside.write_text((folder / "metadata.json").read_text())
    (folder / "metadata.json").unlink()
    os.symlink(outside, folder / "metadata.json")
    with pytest.raises(IntegrityError, match="metadata.json: leads outside the variant folder"):
        kernel_plugins.load(tmp_path / "k", device="cpu")
