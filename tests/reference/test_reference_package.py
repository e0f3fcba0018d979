"""The reference kernels as kernel repositories: discovery, metadata, layout and hygiene."""

from __future__ import annotations

import ast
import contextlib
import inspect
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import kernel_plugins
import kernel_plugins.reference as reference
from kernel_plugins.reference import (
    BACKENDS,
    REFERENCE_ROOT,
    reference_names,
    reference_repo,
    reference_source,
)

NAMES = ["activation", "rmsnorm", "rotary"]
ALLOWED_IMPORTS = {  # plain PyTorch and the standard library's data helpers: nothing that
    # compiles, builds, loads native code or starts a process (no ctypes, subprocess, os,
    # tempfile, torch._dynamo or torch._inductor)
    "__future__",
    "collections.abc",
    "dataclasses",
    "json",
    "math",
    "pathlib",
    "torch",
    "torch.nn.functional",
    "typing",
}


def _variant(name: str, backend: str = "cpu") -> Path:
    repo = reference_repo(name)
    assert repo is not None
    return repo / "build" / f"torch-{backend}"


def _metadata(name: str, backend: str = "cpu") -> dict:
    return json.loads((_variant(name, backend) / "metadata.json").read_text("utf-8"))


def test_reference_root_is_the_package_folder() -> None:
    assert isinstance(REFERENCE_ROOT, Path)
    assert REFERENCE_ROOT.is_absolute()
    assert REFERENCE_ROOT == Path(reference.__file__).resolve().parent


def test_reference_names_lists_every_bundled_kernel() -> None:
    assert reference_names() == NAMES


@pytest.mark.parametrize("name", NAMES)
def test_reference_repo_returns_a_repository_with_a_noarch_variant_per_backend(name: str) -> None:
    repo = reference_repo(name)
    assert repo is not None and repo.name == name
    assert reference_source(name) == REFERENCE_ROOT / name
    variants = sorted(p.name for p in (repo / "build").iterdir())
    assert variants == sorted(f"torch-{b}" for b in BACKENDS)
    assert "torch-universal" not in variants
    assert {"cpu", "cuda", "rocm", "xpu", "metal", "mlu", "musa", "npu", "neuron", "tpu"} <= set(BACKENDS)


@pytest.mark.parametrize(
    "name",
    ["missing", "kernels-community/activation", "../reference", "", "Activation", "build"],
)
def test_reference_repo_returns_none_for_unknown_names(name: str) -> None:
    assert reference_repo(name) is None


def test_importing_the_index_does_not_import_torch() -> None:
    src = Path(reference.__file__).resolve().parents[2]
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(src), os.environ.get("PYTHONPATH", "")]),
    }
    code = (
        "import sys, kernel_plugins.reference as r; r.reference_names(); "
        "print('torch' in sys.modules)"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == "False"


@pytest.mark.parametrize("backend", list(BACKENDS))
@pytest.mark.parametrize("name", NAMES)
def test_metadata_is_valid(name: str, backend: str) -> None:
    from kernel_plugins.metadata import read_metadata

    meta = _metadata(name, backend)
    assert meta["name"] == name
    # the API version of the community kernel it stands in for (rotary's v2 added
    # apply_rotary_transformers); the loader lets it serve version=N only for that N
    assert meta["version"] == {"activation": 1, "rmsnorm": 1, "rotary": 2}[name]
    assert meta["license"] == "Apache-2.0"
    assert meta["python-depends"] == list(BACKENDS[backend])
    assert meta["backend"] == {"type": backend}
    prefix = f"_{name}_reference_"
    assert meta["id"].startswith(prefix) and meta["id"].endswith(f"_{backend}")
    fp = meta["id"][len(prefix) : -len(backend) - 1]
    assert len(fp) == 8 and all(c in "0123456789abcdef" for c in fp)
    assert read_metadata(_variant(name, backend)).id == meta["id"]  # the loader's validation


def test_metadata_ids_are_unique() -> None:
    ids = [_metadata(n, b)["id"] for n in NAMES for b in BACKENDS]
    assert len(set(ids)) == len(ids)


@pytest.mark.parametrize("name", NAMES)
def test_every_variant_holds_the_same_flat_package(name: str) -> None:
    sources = {
        p.name: p
        for folder in (REFERENCE_ROOT / "_common", REFERENCE_ROOT / name / "torch-ext")
        for p in folder.glob("*.py")
    }
    assert {"__init__.py", "_ops.py", "_fast.py"} <= set(sources)
    for backend in BACKENDS:
        variant = _variant(name, backend)
        files = sorted(p.name for p in variant.glob("*.py"))
        assert files == sorted(sources), backend
        for file_name in files:
            assert (variant / file_name).read_bytes() == sources[file_name].read_bytes()


def _sources() -> list[Path]:
    folders = [REFERENCE_ROOT / "_common", *(REFERENCE_ROOT / n / "torch-ext" for n in NAMES)]
    return sorted(p for folder in folders for p in folder.glob("*.py"))


@pytest.mark.parametrize("path", _sources(), ids=lambda p: f"{p.parents[1].name}/{p.name}")
def test_sources_are_self_contained_and_device_agnostic(path: Path) -> None:
    tree = ast.parse(path.read_text("utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 0:
            assert node.module in ALLOWED_IMPORTS, f"absolute import of {node.module}"
        elif isinstance(node, ast.Import):
            for alias in node.names:
                assert alias.name in ALLOWED_IMPORTS, f"import of {alias.name}"
        elif isinstance(node, ast.Attribute):
            assert node.attr != "cuda", "no .cuda() / torch.cuda: the kernel runs on any device"
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            if path.name == "_fast.py":  # the one routing decision: cache blocking on the CPU
                continue
            assert node.value not in {"cuda", "cpu"}, "no hard-coded device"


@pytest.mark.parametrize("name", NAMES)
def test_namespace_is_the_metadata_id(name: str, load) -> None:
    module = load(name)
    meta_id = _metadata(name)["id"]
    assert module.__name__.rpartition(".")[2] == meta_id  # (under a private package, if any)
    assert module._ops.NAMESPACE == meta_id
    assert module.ops.name == meta_id


@pytest.mark.parametrize("name", NAMES)
def test_kernel_properties_cover_every_public_function(name: str, load) -> None:
    module = load(name)
    public = {n for n in module.__all__ if inspect.isfunction(getattr(module, n))}
    props = module.__kernel_properties__
    assert set(props) == public
    for value in props.values():
        assert isinstance(value, frozenset)
        assert value <= {"deterministic", "batch_invariant"}
        assert "deterministic" in value


@pytest.mark.parametrize("name", NAMES)
def test_dir_lists_the_kernels_api_and_no_imported_helpers(name: str, load) -> None:
    public = {n for n in dir(load(name)) if not n.startswith("_")}
    assert public == set(load(name).__all__)  # no annotations, TYPE_CHECKING, Callable...


@pytest.mark.parametrize("name", NAMES)
def test_importing_twice_in_one_process_works(name: str, load, importer) -> None:
    import torch

    first = load(name)
    again = importer(_variant(name), f"{_metadata(name)['id']}_again")
    try:
        assert again.ops.name == first.ops.name
        assert again.__kernel_properties__ == first.__kernel_properties__
        if name == "activation":
            x = torch.randn(3, 8)
            out = again.silu_and_mul(torch.empty(3, 4), x)
            assert torch.equal(out, torch.nn.functional.silu(x[:, :4]) * x[:, 4:])
    finally:
        for key in [k for k in sys.modules if k.startswith(again.__name__)]:
            del sys.modules[key]


def test_the_wheel_holds_each_source_file_once(tmp_path: Path) -> None:
    """No per-backend copies: every reference .py file is in the wheel exactly once."""
    import hashlib
    import zipfile

    pytest.importorskip("hatchling")
    root = Path(reference.__file__).resolve().parents[3]
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(tmp_path),
            str(root),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    (wheel,) = tmp_path.glob("kernel_plugins-*.whl")
    seen: dict[str, str] = {}
    with zipfile.ZipFile(wheel) as zf:
        names = zf.namelist()
        for n in names:
            if n.startswith("kernel_plugins/reference/") and n.endswith(".py"):
                digest = hashlib.sha256(zf.read(n)).hexdigest()
                assert digest not in seen, f"{n} duplicates {seen.get(digest)}"
                seen[digest] = n
    assert not [n for n in names if "/build/" in n and "reference" in n]
    for name in NAMES:
        assert f"kernel_plugins/reference/{name}/torch-ext/__init__.py" in names
        assert f"kernel_plugins/reference/{name}/kernel.json" in names


def test_variants_are_assembled_in_the_configured_cache(tmp_path: Path, monkeypatch) -> None:
    from kernel_plugins.reference import _layout

    monkeypatch.setenv(_layout.CACHE_ENV, str(tmp_path / "cache"))
    repo = reference_repo("rotary")
    assert repo is not None and repo.is_relative_to(tmp_path / "cache")
    assert repo.parent.name == _layout.fingerprint("rotary")
    variant = repo / "build" / "torch-npu"
    assert json.loads((variant / "metadata.json").read_text())["backend"] == {"type": "npu"}
    # copies (the loader refuses links out of a variant), pinned by a digest in metadata.json
    packaged = REFERENCE_ROOT / "rotary" / "torch-ext" / "_ops.py"
    assert not (variant / "_ops.py").is_symlink()
    assert (variant / "_ops.py").read_bytes() == packaged.read_bytes()
    assert reference_repo("rotary") == repo  # the second call reuses it
    assert not [p for p in repo.parent.iterdir() if p.name.startswith(".")]  # no staging left


def test_a_changed_file_in_the_reference_cache_is_refused(tmp_path: Path, monkeypatch) -> None:
    from kernel_plugins.errors import IntegrityError
    from kernel_plugins.reference import _layout
    from tests.support.digests import kernels_digest

    monkeypatch.setenv(_layout.CACHE_ENV, str(tmp_path / "cache"))
    repo = reference_repo("activation")
    assert repo is not None
    variant = repo / "build" / "torch-cpu"
    digest = json.loads((variant / "metadata.json").read_text())["digest"]
    assert digest == {"algorithm": "sha256", "files": kernels_digest(variant)}
    (variant / "_ops.py").write_text("raise SystemExit('planted')\n")
    kernel_id = json.loads((variant / "metadata.json").read_text())["id"]
    for name in [n for n in sys.modules if n.partition(".")[0] == kernel_id]:
        monkeypatch.delitem(sys.modules, name)  # imported by an earlier test: free the name
    with pytest.raises(IntegrityError, match="_ops.py: content does not match the digest"):
        kernel_plugins.load(repo, device="cpu")


def test_a_third_party_backend_gets_a_variant_too(tmp_path: Path, monkeypatch) -> None:
    from kernel_plugins.reference import _layout

    monkeypatch.setenv(_layout.CACHE_ENV, str(tmp_path / "cache"))
    repo = reference_repo("rmsnorm", ("acme",))
    assert repo is not None and (repo / "build" / "torch-acme" / "metadata.json").is_file()
    assert repo.parent.name != _layout.fingerprint("rmsnorm")  # its own repository


def test_an_unwritable_configured_cache_is_a_clear_error(tmp_path: Path, monkeypatch) -> None:
    from kernel_plugins.reference import _layout

    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    monkeypatch.setenv(_layout.CACHE_ENV, str(blocker / "cache"))
    with pytest.raises(
        OSError, match=f"cannot create the reference kernel 'rmsnorm'.*{_layout.CACHE_ENV}"
    ):
        reference_repo("rmsnorm")


# ------------------------------------------------- the cache never changes what runs

PLANT = "open({marker!r}, 'w').write('planted code ran')\n"

LOAD_IN_A_FRESH_PROCESS = r"""
import warnings, torch, kernel_plugins
from kernel_plugins.reference import reference_repo
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    act = kernel_plugins.load(reference_repo("activation"), device="cpu")
x = torch.randn(4, 8)
assert torch.equal(act.silu_and_mul(torch.empty(4, 4), x), torch.nn.functional.silu(x[:, :4]) * x[:, 4:])
print("loaded")
"""


def _packaged(name: str, backend: str = "cpu") -> dict[str, bytes]:
    from kernel_plugins.reference import _layout

    prefix = f"build/torch-{backend}/"
    expected = _layout.expected_files(name)
    return {k.removeprefix(prefix): v for k, v in expected.items() if k.startswith(prefix)}


def _same_as_packaged(repo: Path, name: str) -> bool:
    variant = repo / "build" / "torch-cpu"
    return {p.name: p.read_bytes() for p in variant.iterdir()} == _packaged(name)


def test_an_edited_file_with_a_rewritten_digest_never_runs(tmp_path: Path, monkeypatch) -> None:
    """The attack of issue 20: edit a cached source and make metadata.json's digest match."""
    from kernel_plugins_testing import run_forked

    from kernel_plugins.reference import _layout
    from tests.support.digests import kernels_digest

    monkeypatch.setenv(_layout.CACHE_ENV, str(tmp_path / "cache"))
    repo = reference_repo("activation")
    assert repo is not None
    variant = repo / "build" / "torch-cpu"
    marker = tmp_path / "marker"
    ops = variant / "_ops.py"
    ops.write_text(PLANT.format(marker=str(marker)) + ops.read_text())
    meta = json.loads((variant / "metadata.json").read_text())
    meta["digest"]["files"] = kernels_digest(variant)  # the digest now vouches for the edit
    (variant / "metadata.json").write_text(json.dumps(meta))
    done = run_forked(
        LOAD_IN_A_FRESH_PROCESS, env={_layout.CACHE_ENV: str(tmp_path / "cache")}, timeout=300
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip().endswith("loaded")
    assert not marker.exists()  # the planted line never ran
    assert _same_as_packaged(repo, "activation")  # the copy was rebuilt from the package


def test_a_damaged_entry_is_repaired(tmp_path: Path, monkeypatch) -> None:
    from kernel_plugins.reference import _layout

    monkeypatch.setenv(_layout.CACHE_ENV, str(tmp_path / "cache"))
    repo = reference_repo("rmsnorm")
    assert repo is not None
    (repo / "build" / "torch-cpu" / "metadata.json").unlink()
    (repo / "build" / "torch-npu" / "_ops.py").unlink()
    assert reference_repo("rmsnorm") == repo
    assert _same_as_packaged(repo, "rmsnorm")
    assert (repo / "build" / "torch-npu" / "_ops.py").read_bytes() == _packaged("rmsnorm")["_ops.py"]
    assert not [p for p in repo.parent.iterdir() if p.name.startswith(".")]  # nothing left over


@pytest.mark.parametrize(
    "plant",
    ["build/torch28-cxx11-cpu-x86_64-linux/__init__.py", "build/torch-cpu/_extra.py", "kernels.lock"],
)
def test_anything_planted_in_a_cached_repository_is_removed(
    tmp_path: Path, monkeypatch, plant: str
) -> None:
    """An extra file or variant (an arch variant would be preferred over the noarch one)."""
    from kernel_plugins.reference import _layout

    monkeypatch.setenv(_layout.CACHE_ENV, str(tmp_path / "cache"))
    repo = reference_repo("rotary")
    assert repo is not None
    (repo / plant).parent.mkdir(parents=True, exist_ok=True)
    (repo / plant).write_text("raise SystemExit('planted')\n")
    assert reference_repo("rotary") == repo
    assert not (repo / plant).exists()
    assert sorted(p.name for p in (repo / "build").iterdir()) == sorted(f"torch-{b}" for b in BACKENDS)


def test_an_unwritable_home_never_uses_the_temp_folder(tmp_path: Path, monkeypatch) -> None:
    import tempfile

    from kernel_plugins.reference import _layout

    blocker = tmp_path / "home"
    blocker.write_text("not a folder: ~/.cache cannot be created")
    temp = tmp_path / "tmp"
    temp.mkdir()
    monkeypatch.delenv(_layout.CACHE_ENV, raising=False)
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    monkeypatch.setenv("HOME", str(blocker))
    monkeypatch.setattr(tempfile, "tempdir", str(temp))
    with pytest.raises(OSError, match=f"cannot create the reference kernel 'rotary'.*{_layout.CACHE_ENV}"):
        reference_repo("rotary")
    assert list(temp.iterdir()) == []


@pytest.mark.skipif(not hasattr(os, "getuid"), reason="folder owners are a POSIX notion")
def test_a_cache_folder_of_another_user_is_refused(tmp_path: Path, monkeypatch) -> None:
    from kernel_plugins.reference import _layout

    prepared = tmp_path / "prepared"
    prepared.mkdir()
    from tests.support.owners import give_to_another_user

    give_to_another_user(prepared)  # what another user's mkdir leaves behind (never skipped under CI)
    monkeypatch.setenv(_layout.CACHE_ENV, str(prepared))
    with pytest.raises(OSError, match="belongs to another user"):
        reference_repo("activation")
    assert list(prepared.iterdir()) == []


@pytest.mark.skipif(not hasattr(os, "getuid"), reason="folder owners are a POSIX notion")
def test_a_cache_folder_that_is_a_link_is_refused_and_its_target_left_alone(tmp_path: Path, monkeypatch) -> None:
    """Issue: a link (another user's) as the cache was followed and its target chmod'ed."""
    import stat

    from kernel_plugins.reference import _layout

    target = tmp_path / "mine"
    target.mkdir()
    target.chmod(0o777)
    link = tmp_path / "shared-link"
    link.symlink_to(target)
    with contextlib.suppress(PermissionError):  # root: the link is another user's, as planted
        os.lchown(link, os.getuid() + 1, -1)
    monkeypatch.setenv(_layout.CACHE_ENV, str(link))
    with pytest.raises(OSError, match="shared-link is a symbolic link, not a folder of yours"):
        reference_repo("activation")
    assert stat.S_IMODE(target.stat().st_mode) == 0o777 and list(target.iterdir()) == []


@pytest.mark.skipif(not hasattr(os, "getuid"), reason="folder modes are a POSIX notion")
def test_the_cache_folders_are_writable_only_by_their_owner(tmp_path: Path, monkeypatch) -> None:
    import stat

    from kernel_plugins.reference import _layout

    root = tmp_path / "cache"
    root.mkdir()
    root.chmod(0o777)
    monkeypatch.setenv(_layout.CACHE_ENV, str(root))
    repo = reference_repo("activation")
    assert repo is not None
    assert stat.S_IMODE(root.stat().st_mode) & 0o022 == 0
    assert stat.S_IMODE(repo.parent.stat().st_mode) == 0o700
