"""A hostile package archive (``build-layout: zip``) is refused before any of its code runs."""

from __future__ import annotations

import importlib.util
import io
import json
import marshal
import stat
import sys
import warnings
import zipfile
from pathlib import Path

import pytest

import kernel_plugins
from kernel_plugins.errors import IntegrityError, KernelImportError
from kernel_plugins.integrity import archive as archive_module
from kernel_plugins.registry import module_name
from tests.support.variant_dirs import metadata, unique_id


def build(entries: list[tuple[zipfile.ZipInfo | str, bytes]]) -> bytes:
    """A ZIP archive of ``entries`` as given (duplicates and odd names kept)."""
    buf = io.BytesIO()
    with warnings.catch_warnings(), zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        warnings.simplefilter("ignore")  # "Duplicate name"
        for info, data in entries:
            z.writestr(info, data)
    return buf.getvalue()


def info(name: str, mode: int) -> zipfile.ZipInfo:
    entry = zipfile.ZipInfo(name)
    entry.external_attr = mode << 16
    return entry


def encrypted(data: bytes) -> bytes:
    """``data`` (an archive) with every member marked encrypted (flag bit 0, both headers)."""
    out = bytearray(data)
    for sig, at in ((b"PK\x03\x04", 6), (b"PK\x01\x02", 8)):
        i = out.find(sig)
        while i >= 0:
            out[i + at] |= 1
            i = out.find(sig, i + 4)
    return bytes(out)


def load_zip(root: Path, data: bytes | None, *, beside: dict[str, str] | None = None) -> tuple[object, str]:
    """Write a zip-layout variant (the archive ``data``, None: no archive) and load it;
    returns the result (module or the exception) and the kernel id."""
    kernel_id = unique_id("arc")
    folder = root / "build" / "torch-cpu"
    folder.mkdir(parents=True)
    if data is not None:
        (folder / f"{kernel_id}.zip").write_bytes(data)
    for name, text in (beside or {}).items():
        (folder / name).write_text(text)
    (folder / "metadata.json").write_text(json.dumps(metadata(kernel_id, build_layout="zip")))
    try:
        return kernel_plugins.load(root, device="cpu"), kernel_id
    except Exception as e:  # noqa: BLE001 - the caller checks which
        return e, kernel_id


def test_hostile_archives_are_refused_naming_the_member(
    manager: object, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    marker = tmp_path / "ran"
    init = f"open({str(marker)!r}, 'a').write('ran')\n".encode()
    monkeypatch.setattr(archive_module, "MAX_FILES", 8)
    monkeypatch.setattr(archive_module, "MAX_ARCHIVE_BYTES", 1 << 20)
    cases: dict[str, tuple[bytes | None, str]] = {
        "dot-dot": (build([("__init__.py", init), ("../evil.py", b"")]), "'../evil.py' is refused: its path"),
        "deep dot-dot": (build([("__init__.py", init), ("a/../../x.py", b"")]), "'a/../../x.py' is refused"),
        "absolute": (build([("__init__.py", init), ("/etc/evil.py", b"")]), "'/etc/evil.py' is refused"),
        "backslash": (build([("__init__.py", init), ("a\\..\\b.py", b"")]), r"is refused: its path"),
        "empty part": (build([("__init__.py", init), ("a//b.py", b"")]), "'a//b.py' is refused"),
        "duplicate": (build([("__init__.py", b"X = 1\n"), ("__init__.py", init)]),
                      "'__init__.py' is refused: the name is given twice"),
        "same after ./": (build([("__init__.py", init), ("./__init__.py", b"")]), "given twice"),
        "like a file beside": (build([("__init__.py", init), ("metadata.json", b"{}")]),
                               "'metadata.json' is refused: the name is given twice"),
        "symlink": (build([("__init__.py", init), (info("impl.py", mode=stat.S_IFLNK | 0o777), b"/etc/passwd")]),
                    "'impl.py' is refused: it is a link"),
        "encrypted": (encrypted(build([("__init__.py", init)])), "'__init__.py' is refused: it is encrypted"),
        "bomb": (build([("__init__.py", init), ("zeros.bin", bytes(2 << 20))]),
                 f"'zeros.bin' is refused: the members unpack to more than {1 << 20} bytes"),
        "many members": (build([("__init__.py", init), *((f"m{i}.py", b"") for i in range(9))]),
                         "more than 8 members"),
        "too large": (build([("__init__.py", init), ("noise.bin", bytes(range(256)) * 5000)]) + bytes(1 << 20),
                      f"larger than {1 << 20} bytes"),
        "not a zip": (b"PK\x03\x04 but nothing more" * 10, "not a usable ZIP archive"),
        "missing": (None, "missing; metadata.json says \"build-layout\": \"zip\""),
    }
    for case, (data, expected) in cases.items():
        got, kernel_id = load_zip(tmp_path / case.replace(" ", "-"), data)
        assert isinstance(got, IntegrityError), (case, got)
        assert expected in str(got), (case, str(got))
        assert module_name(kernel_id) not in sys.modules, case
    assert not marker.exists()


def test_a_member_that_beside_files_would_shadow_is_refused(manager: object, tmp_path: Path) -> None:
    got, _ = load_zip(tmp_path / "r", build([("__init__.py", b"from .impl import V\n"), ("impl.py", b"V = 1\n")]),
                      beside={"impl.py": "V = 'beside'\n"})
    assert isinstance(got, IntegrityError) and "'impl.py' is refused: the name is given twice" in str(got)


def test_bytecode_in_the_archive_never_runs(manager: object, tmp_path: Path) -> None:
    evil = marshal.dumps(compile("V = 'bytecode'\n", "impl.py", "exec"))
    pyc = importlib.util.MAGIC_NUMBER + b"\x01\x00\x00\x00" + bytes(8) + evil  # an unchecked hash-based pyc
    cache = importlib.util.cache_from_source("impl.py")
    module, _ = load_zip(tmp_path / "r", build([
        ("__init__.py", b"from .impl import V\n"), ("impl.py", b"V = 'source'\n"),
        ("impl.pyc", pyc), (cache, pyc), ("hidden.pyc", pyc), ("__pycache__/hidden.cpython-311.pyc", pyc)]))
    assert getattr(module, "V", module) == "source"
    with pytest.raises(ModuleNotFoundError, match="among the verified files"):
        __import__(f"{module.__name__}.hidden")  # type: ignore[attr-defined]


def test_members_named_like_real_modules_stay_inside_the_kernel(manager: object, tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    shadow = f"open({str(marker)!r}, 'a').write('shadow')\n".encode()
    module, _ = load_zip(tmp_path / "r", build([
        ("__init__.py", b"from . import json as own\nimport os, json, torch\nSEP = os.sep\n"),
        ("os.py", shadow), ("torch/__init__.py", shadow), ("json.py", b"MINE = True\n"),
        ("kernel_plugins/__init__.py", shadow)]))
    import json as real_json
    import os

    assert module.SEP == os.sep and module.own.MINE  # type: ignore[attr-defined]
    assert module.json is real_json and sys.modules["os"] is os and "MINE" not in vars(real_json)  # type: ignore[attr-defined]
    assert not marker.exists()


def test_a_zip_layout_without_a_package_in_the_archive_names_it(manager: object, tmp_path: Path) -> None:
    got, kernel_id = load_zip(tmp_path / "r", build([("impl.py", b"")]))
    assert isinstance(got, KernelImportError) and "no kernel module found" in str(got)


def test_an_archive_that_is_a_link_out_or_a_fifo_is_refused_without_waiting(manager: object, tmp_path: Path) -> None:
    import os

    from tests.support.threads import within

    outside = tmp_path / "outside.zip"
    outside.write_bytes(build([("__init__.py", b"V = 'outside'\n")]))
    for case in ("link", "fifo"):
        kernel_id = unique_id("arc")
        folder = tmp_path / case / "build" / "torch-cpu"
        folder.mkdir(parents=True)
        (folder / "metadata.json").write_text(json.dumps(metadata(kernel_id, build_layout="zip")))
        os.symlink(outside, folder / f"{kernel_id}.zip") if case == "link" else os.mkfifo(folder / f"{kernel_id}.zip")
        with pytest.raises(IntegrityError, match="leads outside the variant folder" if case == "link" else "regular"):
            within(30, lambda root=tmp_path / case: kernel_plugins.load(root, device="cpu"))
        assert module_name(kernel_id) not in sys.modules
