"""Kernel module names never shadow other modules; failed imports leave nothing behind."""

from __future__ import annotations

import json
import sys

import pytest

import kernel_plugins
from kernel_plugins.cli.main import main
from kernel_plugins.errors import KernelImportError, MetadataError
from kernel_plugins.integrity import snapshot

from .helpers import unique_id, write_variant


@pytest.mark.parametrize(
    "kernel_id, why",
    [
        ("os", "already imported"),
        ("tabnanny", "standard library"),
        ("pluggy", "already imported"),
        ("pytest", "already imported"),
        ("hypothesis", "installed module"),
        ("numpy", "installed module"),
    ],
)
def test_an_id_that_would_shadow_a_module_is_refused_before_reading_files(
    manager, tmp_path, monkeypatch, kernel_id, why
):
    if why != "already imported":  # make sure the module is not imported (restored after)
        for name in [n for n in sys.modules if n == kernel_id or n.startswith(kernel_id + ".")]:
            monkeypatch.delitem(sys.modules, name)
    write_variant(tmp_path / "k", {"__init__.py": "VALUE = 1\n", "big.bin": b"x" * 1000},
                  kernel_id=kernel_id)
    reads: list[str] = []
    real = snapshot._read_one
    monkeypatch.setattr(snapshot, "_read_one", lambda rel, *a, **k: reads.append(rel) or real(rel, *a, **k))
    with pytest.raises(KernelImportError, match=f"metadata id '{kernel_id}'.*{why}"):
        kernel_plugins.load(tmp_path / "k", device="cpu")
    assert reads == []  # refused on metadata.json alone


def test_kernel_calling_sys_exit_is_an_import_error_and_leaves_nothing(manager, tmp_path):
    kid = unique_id("exit")
    write_variant(tmp_path / "k", {"__init__.py": "from . import sub\nimport sys\nsys.exit(0)\n",
                                   "sub.py": "X = 1\n"}, kernel_id=kid)
    for _ in range(2):  # the second load raises again instead of returning a half module
        with pytest.raises(KernelImportError, match=r"SystemExit: 0 \(the kernel's code called sys.exit\)"):
            kernel_plugins.load(tmp_path / "k", device="cpu")
        assert kid not in sys.modules and f"{kid}.sub" not in sys.modules


@pytest.mark.parametrize("code", ["raise KeyError('x')", "raise BaseException('odd')"])
def test_any_exception_while_importing_leaves_nothing(manager, tmp_path, code):
    kid = unique_id("raise")
    write_variant(tmp_path / "k", {"__init__.py": code}, kernel_id=kid)
    with pytest.raises(KernelImportError):
        kernel_plugins.load(tmp_path / "k", device="cpu")
    assert kid not in sys.modules


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
