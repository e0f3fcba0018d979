"""The git_lfs_concat variant hash: from file listings and from disk (no server)."""

from __future__ import annotations

import hashlib
import os
import subprocess
from pathlib import Path

import pytest

from kernel_plugins.integrity import read_variant
from kernel_plugins.integrity.varianthash import (
    FileHash,
    compare_files,
    git_blob_id,
    snapshot_file_hashes,
    split_listing,
    variant_hash,
)


def test_git_blob_id_matches_git() -> None:
    for data in (b"", b"hello\n", bytes(range(256)) * 50):
        done = subprocess.run(
            ["git", "hash-object", "--stdin"], input=data, capture_output=True, check=True
        )
        assert git_blob_id(data) == done.stdout.decode().strip()


def test_variant_hash_follows_the_published_recipe() -> None:
    files = {
        "z.py": FileHash("git", "11" * 20),
        "a/b.so": FileHash("lfs", "22" * 32),
        "a.py": FileHash("git", "33" * 20),
        "__pycache__/a.cpython-311.pyc": FileHash("git", "44" * 20),
        "x.pyc": FileHash("git", "55" * 20),
    }
    # sorted by path bytes: "a.py" < "a/b.so" < "z.py"; *.pyc and __pycache__ skipped
    concat = (
        b"a.py" + bytes.fromhex("33" * 20)
        + b"a/b.so" + bytes.fromhex("22" * 32)
        + b"z.py" + bytes.fromhex("11" * 20)
    )
    assert variant_hash(files) == "sha256-" + hashlib.sha256(concat).hexdigest()


def test_disk_hash_equals_listing_hash_for_git_files(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    variant = repo / "build" / "torch-cpu"
    (variant / "sub").mkdir(parents=True)
    (variant / "__init__.py").write_text("X = 1\n")
    (variant / "sub" / "m.py").write_bytes(b"\x00\x01 binary")
    env = {**os.environ, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True, env=env)
    subprocess.run(["git", "add", "-A"], cwd=repo, check=True, env=env)
    out = subprocess.run(
        ["git", "ls-files", "-s"], cwd=repo, check=True, capture_output=True, text=True, env=env
    ).stdout
    listing = split_listing(
        (line.split("\t")[1], FileHash("git", line.split()[1])) for line in out.splitlines()
    )
    # Python's byte-code cache must not count
    (variant / "__pycache__").mkdir()
    (variant / "__pycache__" / "x.cpython-311.pyc").write_bytes(b"junk")
    assert set(listing["torch-cpu"]) == {"__init__.py", "sub/m.py"}
    assert variant_hash(disk_hashes(variant)) == variant_hash(listing["torch-cpu"])


def disk_hashes(variant: Path, listing=None, link_roots=()) -> dict[str, FileHash]:
    snap = read_variant(variant, algorithms=("git",), link_roots=link_roots)
    return snapshot_file_hashes(snap, listing)


def test_lfs_files_are_hashed_with_sha256(tmp_path: Path) -> None:
    content = b"\x7fELF pretend shared object" * 100
    lfs_hex = hashlib.sha256(content).hexdigest()
    variant = tmp_path / "v"
    variant.mkdir()
    (variant / "_ops.so").write_bytes(content)
    listing = {"_ops.so": FileHash("lfs", lfs_hex, len(content))}
    assert disk_hashes(variant, listing) == {"_ops.so": FileHash("lfs", lfs_hex, len(content))}
    # without a listing the file is taken for a git blob, and the hash differs
    assert variant_hash(disk_hashes(variant)) != variant_hash(listing)


def test_blob_names_tell_lfs_files_without_a_listing(tmp_path: Path) -> None:
    content = b"weights" * 1000
    blobs = tmp_path / "blobs"
    blobs.mkdir()
    lfs_hex = hashlib.sha256(content).hexdigest()
    (blobs / lfs_hex).write_bytes(content)
    (blobs / git_blob_id(b"X = 1\n")).write_bytes(b"X = 1\n")
    variant = tmp_path / "snap" / "build" / "torch-cpu"
    variant.mkdir(parents=True)
    os.symlink(os.path.relpath(blobs / lfs_hex, variant), variant / "_ops.so")
    os.symlink(os.path.relpath(blobs / git_blob_id(b"X = 1\n"), variant), variant / "a.py")
    assert disk_hashes(variant, link_roots=(blobs,)) == {
        "_ops.so": FileHash("lfs", lfs_hex, len(content)),
        "a.py": FileHash("git", git_blob_id(b"X = 1\n"), 6),
    }


def test_compare_reports_missing_changed_and_unexpected() -> None:
    expected = {"a": FileHash("git", "1" * 40), "b": FileHash("git", "2" * 40)}
    actual = {"a": FileHash("git", "3" * 40), "c": FileHash("git", "4" * 40)}
    found = {(m.path, m.kind) for m in compare_files(expected, actual)}
    assert found == {("a", "changed"), ("b", "missing"), ("c", "unexpected")}
    changed = compare_files(expected, actual)[0].describe()
    assert "1" * 40 in changed and "3" * 40 in changed
    assert compare_files(expected, actual, complete=False)[0].kind == "changed"
    assert len(compare_files(expected, actual, complete=False)) == 1


@pytest.mark.parametrize("bad", ["build/x", "src/a.py", "build//a.py"])
def test_split_listing_keeps_only_variant_files(bad: str) -> None:
    fh = FileHash("git", "0" * 40)
    assert split_listing([(bad, fh), ("build/v/a.py", fh)]) == {"v": {"a.py": fh}}
