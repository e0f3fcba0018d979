"""The ``zip`` build layout of kernels 0.19: ``build/<variant>/<id>.zip`` holds the package.

The archive goes through the verified pipeline: covered by the digest (written here by
kernels' own hasher) and the Hub's listing, read once, imported from the verified bytes.
The refusals of a hostile archive are in tests/integrity/test_archive.py.
"""

from __future__ import annotations

import io
import json
import shutil
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

import kernel_plugins
from kernel_plugins.errors import IntegrityError
from kernel_plugins.registry import module_name
from tests.integrity.test_verified_import import build_extension
from tests.support.hub import HubServer, make_kernel_repo
from tests.support.variant_dirs import metadata, unique_id


def archive(members: dict[str, str | bytes]) -> bytes:
    """The bytes of a ZIP archive holding ``members``."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in members.items():
            z.writestr(name, data)
    return buf.getvalue()


def zip_variant(repo: Path, members: dict[str, str | bytes], *, beside: dict[str, bytes] | None = None,
                digest: bool = True, kernel_id: str | None = None) -> tuple[Path, str]:
    """``repo/build/torch-cpu`` in the zip layout, its digest written by kernels' own hasher;
    returns the folder and the kernel id."""
    from kernels._rust import Digest, DigestAlgorithm

    kernel_id = kernel_id or unique_id("zip")
    folder = repo / "build" / "torch-cpu"
    folder.mkdir(parents=True)
    (folder / f"{kernel_id}.zip").write_bytes(archive(members))
    for name, data in (beside or {}).items():
        (folder / name).write_bytes(data)
    meta = metadata(kernel_id, build_layout="zip")
    if digest:
        found = Digest.hash_variant(DigestAlgorithm.SHA256, folder)
        meta["digest"] = {"algorithm": "sha256", "files": found.files}
    (folder / "metadata.json").write_text(json.dumps(meta))
    return folder, kernel_id


PACKAGE = {"__init__.py": "from .impl import VALUE\ndef add_one(x):\n    return x + 1\n",
           "impl.py": "VALUE = 'zipped'\n", "sub/__init__.py": "", "sub/deep.py": "DEEP = 3\n"}


def test_a_zip_build_loads_here_as_in_kernels(manager: object, tmp_path: Path) -> None:
    import kernels

    folder, kernel_id = zip_variant(tmp_path / "r", PACKAGE)
    theirs = kernels.get_local_kernel(tmp_path / "r", backend="cpu")
    ours = kernel_plugins.load(tmp_path / "r", device="cpu")
    assert ours.__name__ == module_name(kernel_id) and theirs.__name__ == kernel_id
    assert (ours.VALUE, ours.add_one(1)) == (theirs.VALUE, theirs.add_one(1)) == ("zipped", 2)
    assert ours.__file__ == theirs.__file__ == str(folder / f"{kernel_id}.zip" / "__init__.py")
    assert ours.impl.__file__ == str(folder / f"{kernel_id}.zip" / "impl.py")
    assert __import__(f"{ours.__name__}.sub.deep", fromlist=["DEEP"]).DEEP == 3
    assert ours.__kernel_provenance__.metadata.build_layout == "zip"
    assert "def add_one" in ours.__loader__.get_source(ours.__name__)
    sys.modules.pop(kernel_id, None)


def test_the_archive_is_imported_from_the_bytes_that_were_verified(
    manager: object, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder, kernel_id = zip_variant(tmp_path / "r", PACKAGE)
    swapped = archive({**PACKAGE, "impl.py": "VALUE = 'swapped'\n", "extra.py": "X = 1\n"})
    original = manager.load_kernel  # type: ignore[attr-defined]

    def swap_then_import(device, load):  # after verification, just before the import
        (folder / f"{kernel_id}.zip").write_bytes(swapped)
        return original(device, load)

    monkeypatch.setattr(manager, "load_kernel", swap_then_import)
    module = kernel_plugins.load(tmp_path / "r", device="cpu")
    assert module.VALUE == "zipped"
    with pytest.raises(ModuleNotFoundError, match="among the verified files"):
        __import__(f"{module.__name__}.extra")
    monkeypatch.setattr(manager, "load_kernel", original)
    with pytest.raises(IntegrityError, match=rf"{kernel_id}\.zip: content does not match the digest"):
        kernel_plugins.load(tmp_path / "r", device="cpu")


def test_a_changed_archive_is_refused_before_any_of_its_code_runs(manager: object, tmp_path: Path) -> None:
    import kernels

    marker = tmp_path / "ran"
    folder, kernel_id = zip_variant(tmp_path / "r", PACKAGE)
    (folder / f"{kernel_id}.zip").write_bytes(archive({"__init__.py": f"open({str(marker)!r}, 'w')\n"}))
    with pytest.raises(IntegrityError, match=rf"{kernel_id}\.zip: content does not match the digest"):
        kernel_plugins.load(tmp_path / "r", device="cpu")
    with pytest.raises(RuntimeError, match="do not match the digest"):  # kernels refuses it too
        kernels.get_local_kernel(tmp_path / "r", backend="cpu")
    assert not marker.exists() and module_name(kernel_id) not in sys.modules


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="memfd copies are Linux-only")
def test_native_extensions_beside_the_archive_load_from_their_verified_copy(
    manager: object, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    name = "_zip_native_probe"
    good, evil = (build_extension(tmp_path, name, who) for who in ("verified", "swapped"))
    ext = f"{name}{sysconfig.get_config_var('EXT_SUFFIX')}"
    folder, _ = zip_variant(tmp_path / "r", {"__init__.py": f"from . import {name}\n"},
                            beside={ext: good.read_bytes()})
    original = manager.load_kernel  # type: ignore[attr-defined]

    def swap_then_import(device, load):
        shutil.copy(evil, folder / ext)
        return original(device, load)

    monkeypatch.setattr(manager, "load_kernel", swap_then_import)
    native = getattr(kernel_plugins.load(tmp_path / "r", device="cpu"), name)
    assert native.WHO == "verified" and not native.__file__.startswith(str(folder))


def test_a_zip_build_from_the_hub_loads_and_a_planted_archive_is_refused(
    manager: object, hub_env: HubServer, hf_cache: Path
) -> None:
    kernel_id = unique_id("hubzip")
    meta = metadata(kernel_id, build_layout="zip")
    repo_id = f"kernels-community/zip-{kernel_id.strip('_').replace('_', '-')}"
    make_kernel_repo(hub_env, repo_id, variants={"torch-cpu": {
        "metadata.json": json.dumps(meta), f"{kernel_id}.zip": archive(PACKAGE)}})
    module = kernel_plugins.load(repo_id, version=1, device="cpu")
    assert module.VALUE == "zipped" and module.__file__.endswith(f"{kernel_id}.zip/__init__.py")
    cached = Path(module.__kernel_provenance__.path) / f"{kernel_id}.zip"
    assert cached.is_symlink()  # read through the cache's link into blobs/
    blob = cached.resolve()
    blob.chmod(0o644)
    blob.write_bytes(archive({**PACKAGE, "impl.py": "VALUE = 'planted'\n"}))
    from kernel_plugins import registry

    registry._kernels.pop(module.__name__, None)
    for key in [k for k in sys.modules if k.startswith(module.__name__)]:
        del sys.modules[key]
    with pytest.raises(IntegrityError, match=rf"{kernel_id}\.zip"):
        kernel_plugins.load(repo_id, version=1, device="cpu")


def test_check_reads_a_zip_build_as_the_loader_does(
    manager: object, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from kernel_plugins.cli.main import main

    zip_variant(tmp_path / "good", PACKAGE)
    assert main(["check", str(tmp_path / "good")]) == 0, capsys.readouterr().out
    _, kernel_id = zip_variant(tmp_path / "bad", {**PACKAGE, "../escape.py": ""})
    _, other_id = zip_variant(tmp_path / "empty", {"impl.py": ""})
    capsys.readouterr()
    assert main(["check", str(tmp_path / "bad")]) == 1
    assert f"{kernel_id}.zip: member '../escape.py' is refused" in capsys.readouterr().out
    assert main(["check", str(tmp_path / "empty")]) == 1
    assert f"no kernel module: expected __init__.py at the root of {other_id}.zip" in capsys.readouterr().out
