"""kernels.lock reading/writing and [tool.kernels.dependencies] parsing (no server)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from kernel_plugins import lock
from kernel_plugins.errors import LockfileError
from kernel_plugins.lock import KernelLock, VariantLock
from tests.lock.conftest import write_pyproject

SHA = "0123456789abcdef0123456789abcdef01234567"
HASH = "sha256-" + "ab" * 32


def entry(**changes: object) -> dict[str, object]:
    base: dict[str, object] = {
        "repo_id": "kernels-community/activation",
        "sha": SHA,
        "variants": {"torch-cpu": {"hash": HASH, "hash_type": "git_lfs_concat"}},
    }
    base.update(changes)
    return base


def test_the_earlier_format_is_read_and_rewritten_in_kernels_format(tmp_path: Path) -> None:
    text = json.dumps([entry(), entry(repo_id="acme/other", extra_key="ignored")], indent=2)
    (tmp_path / "kernels.lock").write_text(text)
    locks = lock.read_lockfile(tmp_path)
    assert locks.entries[0] == KernelLock(
        "kernels-community/activation", SHA, {"torch-cpu": VariantLock(HASH, "git_lfs_concat")}
    )
    assert [x.repo_id for x in locks] == ["kernels-community/activation", "acme/other"]
    assert locks.hashes == tmp_path / "kernels.lock"  # the file carries its own hashes
    pinned = [lock.KernelLock(x.repo_id, x.sha, x.variants, version=1) for x in locks]
    out = tmp_path / "again.lock"
    lock.write_lockfile(out, pinned)
    assert json.loads(out.read_text()) == [
        {"dependency": {"repo-id": r, "version": 1}, "lock": {"commit": SHA}}
        for r in ("kernels-community/activation", "acme/other")]
    assert json.loads((tmp_path / "again.lock.variants").read_text()) == [entry(), entry(repo_id="acme/other")]
    assert out.read_text().endswith("]\n")
    assert lock.read_lockfile(out).entries == tuple(pinned)
    with pytest.raises(LockfileError, match="kernels-community/activation: locked for no version or revision"):
        lock.write_lockfile(out, locks.entries)  # kernels.lock must say what was locked


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        ({"repo_id": "x/y"}, "expected a JSON list"),
        ([entry(sha="abc")], r"entry 0 \(kernels-community/activation\): key 'sha' must be"),
        ([{"repo_id": "a/b", "sha": SHA}], r"entry 0 \(a/b\): key 'variants' is missing"),
        ([entry(repo_id="not a repo")], "key 'repo_id'"),
        ([entry(), entry()], "listed twice"),
        ([entry(variants=[])], "key 'variants' must be an object"),
        ([entry(variants={"torch-cpu": {"hash": HASH}})], "variants.torch-cpu: key 'hash_type'"),
        ([entry(variants={"torch-cpu": {"hash": "md5-00", "hash_type": "git_lfs_concat"}})],
         "variants.torch-cpu: key 'hash' must be 'sha256-'"),
        ([entry(variants={"torch-cpu": {"hash": HASH, "hash_type": "other"}})],
         "only 'git_lfs_concat' can be checked"),
        ([entry(variants={"../x": {"hash": HASH, "hash_type": "git_lfs_concat"}})],
         "not a plain folder name"),
        ([entry(), "nope"], "entry 1: expected a JSON object"),
    ],
)
def test_invalid_lock_names_entry_and_key(data: object, expected: str) -> None:
    with pytest.raises(LockfileError, match=expected):
        lock.parse_lock(data, where="kernels.lock")


def test_missing_and_malformed_lock_files_say_how_to_fix(tmp_path: Path) -> None:
    with pytest.raises(LockfileError, match="kernel-plugins lock PROJECT_DIR"):
        lock.read_lockfile(tmp_path)
    (tmp_path / "kernels.lock").write_text("[{")
    with pytest.raises(LockfileError, match="malformed JSON at line 1"):
        lock.read_lockfile(tmp_path / "kernels.lock")


def test_write_is_atomic_and_leaves_nothing_half_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "kernels.lock"
    lock.write_lockfile(target, [KernelLock("a/b", SHA, {"v": VariantLock(HASH)}, version=1)])
    before = {p.name: p.read_text() for p in tmp_path.iterdir()}
    assert sorted(before) == ["kernels.lock", "kernels.lock.variants"]

    def broken_replace(src: str, dst: str) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", broken_replace)
    with pytest.raises(LockfileError, match="cannot write .*disk full"):
        lock.write_lockfile(target, [KernelLock("c/d", SHA, {}, version=2)])
    assert {p.name: p.read_text() for p in tmp_path.iterdir()} == before


def test_lock_entry_lists_what_the_lock_pins() -> None:
    locks = lock.Lockfile(Path("x.lock"), (KernelLock("a/b", SHA, {}),))
    assert locks.entry("a/b") is locks.entries[0]
    assert locks.entry("a/b", version=3) is locks.entries[0]  # the earlier format records no version
    with pytest.raises(LockfileError, match=r"x.lock does not pin c/d \(it pins: a/b\)"):
        locks.entry("c/d")


def test_dependencies_are_read_in_order(tmp_path: Path) -> None:
    write_pyproject(tmp_path, {"kernels-community/activation": 1, "acme/rms": 12})
    assert lock.read_dependencies(tmp_path) == [
        lock.Dependency("kernels-community/activation", 1),
        lock.Dependency("acme/rms", 12),
    ]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('[project]\nname = "x"\n', r"no \[tool.kernels.dependencies\] table"),
        ("[tool.kernels]\nother = 1\n", "has no 'dependencies' table"),
        ("[tool]\nkernels = 3\n", "'tool.kernels' must be a table"),
        ("[tool.kernels]\ndependencies = [1]\n", "must be a table of"),
        ('[tool.kernels.dependencies]\n"acme/x" = ">=0.1"\n', "Version specifiers"),
        ('[tool.kernels.dependencies]\n"acme/x" = 0\n', "versions start at 1"),
        ('[tool.kernels.dependencies]\n"acme/x" = true\n', "expected a positive integer"),
        ('[tool.kernels.dependencies]\n"no-slash" = 1\n', "key 'no-slash'"),
        ("[tool.kernels.dependencies\n", "not valid TOML"),
    ],
)
def test_bad_pyproject_is_a_clear_error(tmp_path: Path, text: str, expected: str) -> None:
    write_pyproject(tmp_path, text)
    with pytest.raises(LockfileError, match=expected):
        lock.read_dependencies(tmp_path)


def test_missing_pyproject_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(LockfileError, match="pyproject.toml does not exist"):
        lock.read_dependencies(tmp_path)


def test_installed_lockfile_is_found_from_distribution_metadata(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    site = tmp_path / "site"
    (site / "demo_app").mkdir(parents=True)
    (site / "demo_app" / "kernels.lock").write_text(json.dumps([entry()]))
    info = site / "demo_app-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: demo-app\nVersion: 1.0\n")
    (info / "RECORD").write_text(
        "demo_app/__init__.py,,\ndemo_app/kernels.lock,,\ndemo_app-1.0.dist-info/RECORD,,\n"
    )
    monkeypatch.syspath_prepend(str(site))
    found = lock.find_installed_lockfile("demo-app")
    assert found == site / "demo_app" / "kernels.lock"
    assert lock.read_lockfile(found).entries[0].sha == SHA
    (info / "RECORD").write_text("demo_app/__init__.py,,\n")
    assert lock.find_installed_lockfile("demo-app") is None
    with pytest.raises(LockfileError, match="no installed distribution named 'no-such-dist-x'"):
        lock.find_installed_lockfile("no-such-dist-x")


@pytest.mark.parametrize(
    ("name", "content", "expected"),
    [
        ("kernels.lock", b"[" * 100_000, "nested too deeply"),
        ("kernels.lock", b"\xff\xfe[]", "cannot read"),
        ("pyproject.toml", b"\xff\xfe", "not UTF-8"),
        ("pyproject.toml", b"a = " + b"[" * 100_000, "nested too deeply"),
    ],
)
def test_hostile_files_are_lockfile_errors(
    tmp_path: Path, name: str, content: bytes, expected: str
) -> None:
    (tmp_path / name).write_bytes(content)
    read = lock.read_lockfile if name == "kernels.lock" else lock.read_dependencies
    with pytest.raises(LockfileError, match=expected):
        read(tmp_path)
