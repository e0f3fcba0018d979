"""kernels' ``kernels.lock``, the variant hashes beside it, transitive locking (no server); both
directions against the pinned kernels release, in this process."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from kernel_plugins import lock
from kernel_plugins.errors import LockfileError
from kernel_plugins.lock import KernelLock, VariantLock

SHA, SHA2 = "0123456789abcdef0123456789abcdef01234567", "89abcdef0123456789abcdef0123456789abcdef"
HASH = "sha256-" + "ab" * 32


def dep(repo: str = "kernels-community/activation", commit: str = SHA, **spec: object) -> dict[str, object]:
    return {"dependency": {"repo-id": repo, **(spec or {"version": 1})}, "lock": {"commit": commit}}


def hashes(repo: str = "kernels-community/activation", sha: str = SHA, **variant: str) -> dict[str, object]:
    return {"repo_id": repo, "sha": sha, "variants": {"torch-cpu": {"hash": HASH, "hash_type": "git_lfs_concat", **variant}}}


def write(folder: Path, entries: list[object], side: list[object] | None = None) -> Path:
    (folder / "kernels.lock").write_text(json.dumps(entries))
    if side is not None:
        (folder / "kernels.lock.variants").write_text(json.dumps(side))
    return folder / "kernels.lock"


def test_kernels_entries_are_read_with_their_version_or_revision() -> None:
    locks = lock.parse_lock([dep(), dep("acme/x", SHA.upper(), revision="main"), dep(version=2)])
    assert locks == [KernelLock("kernels-community/activation", SHA, {}, 1),
                     KernelLock("acme/x", SHA, {}, None, "main"),  # as kernels, any case
                     KernelLock("kernels-community/activation", SHA, {}, 2)]
    assert [x.spec for x in locks] == ["version 1", "revision 'main'", "version 2"]


@pytest.mark.parametrize(("entry", "expected"), [
    ({**dep(), "x": 1}, r"entry 0 \(kernels-community/activation\): unknown key 'x'"),
    ({"dependency": {"repo-id": "a/b", "version": 1, "pin": 2}, "lock": {"commit": SHA}}, "unknown key 'dependency.pin'"),
    ({"dependency": {"repo-id": "a/b", "version": 1}, "lock": {"commit": SHA, "hash": 1}}, "unknown key 'lock.hash'"),
    ({"dependency": {"repo-id": "a/b", "version": 1}}, r"entry 0 \(a/b\): key 'lock' is missing"),
    ({"dependency": [], "lock": {}}, "key 'dependency' must be an object"),
    ({"dependency": {"version": 1}, "lock": {"commit": SHA}}, "key 'dependency.repo-id' is missing"),
    ({"dependency": {"repo-id": "a/b", "version": 1}, "lock": {}}, "key 'lock.commit' is missing"),
    (dep(version=1, revision="main"), "needs exactly one of 'version' and 'revision'"),
    ({"dependency": {"repo-id": "a/b"}, "lock": {"commit": SHA}}, "needs exactly one of"),
    (dep(version=True), "key 'dependency.version' must be a kernel version"),
    (dep(version="1"), "key 'dependency.version' must be a kernel version"),
    (dep(version=-1), "key 'dependency.version' must be a kernel version"),
    (dep(revision=5), "key 'dependency.revision' must be a string"),
    (dep(commit="abc"), "key 'lock.commit' must be a commit sha"),
    (dep("not a repo"), "key 'dependency.repo-id'"),
])
def test_invalid_kernels_entries_name_the_entry_and_key(entry: object, expected: str) -> None:
    with pytest.raises(LockfileError, match=expected):
        lock.parse_lock([entry], where="kernels.lock")


def test_twice_and_mixed_formats_are_refused() -> None:
    with pytest.raises(LockfileError, match="entry 1 .*version 1 is listed twice"):
        lock.parse_lock([dep(), dep(commit=SHA2)])
    with pytest.raises(LockfileError, match="entry 1 .*unknown key 'repo_id'"):
        lock.parse_lock([dep(), hashes()])
    with pytest.raises(LockfileError, match="entry 1 .*key 'repo_id' is missing"):
        lock.parse_lock([hashes(), dep()])


def test_the_hashes_beside_kernels_lock_are_merged_into_its_entries(tmp_path: Path) -> None:
    path = write(tmp_path, [dep(), dep(revision="main"), dep("acme/x", SHA2)],
                 [hashes(signer="me (issuer)"), hashes("acme/x", SHA2)])
    read = lock.read_lockfile(tmp_path)
    assert read.hashes == tmp_path / "kernels.lock.variants" and read.path == path
    assert [e.variants["torch-cpu"] for e in read] == [VariantLock(HASH, signer="me (issuer)")] * 2 + [VariantLock(HASH)]
    assert read.entry("acme/x").sha == SHA2
    assert read.entry("kernels-community/activation", revision="main").revision == "main"
    assert read.entry("kernels-community/activation").version == 1  # the first, as kernels takes it
    with pytest.raises(LockfileError, match=r"does not pin acme/x \(version 2\) \(it pins: kernels-community/activation \(version 1\)"):
        read.entry("acme/x", version=2)
    (tmp_path / "kernels.lock.variants").unlink()  # kernels' lock alone: commits only
    alone = lock.read_lockfile(path)
    assert alone.hashes is None and all(not e.variants for e in alone)


@pytest.mark.parametrize(("side", "expected"), [
    ([hashes()], r"has no hashes for acme/x at 89ab.*locked again by another tool"),
    ([hashes(), hashes("acme/x", SHA2), hashes("acme/y")], "has hashes for acme/y at 0123.*, which kernels.lock does not pin"),
    ([hashes(), hashes("acme/x", SHA)], "has no hashes for acme/x at 89ab"),  # another commit
    ([dep()], "kernels.lock.variants: entry 0 .*key 'repo_id' is missing"),
    ({"x": 1}, "kernels.lock.variants: expected a JSON list"),
])
def test_hashes_that_do_not_match_kernels_lock_are_refused(tmp_path: Path, side: object, expected: str) -> None:
    write(tmp_path, [dep(), dep("acme/x", SHA2)], side)  # type: ignore[arg-type]
    with pytest.raises(LockfileError, match=expected):
        lock.read_lockfile(tmp_path)


@pytest.mark.parametrize("how", ["link", "fifo", "folder"])
def test_hashes_that_are_not_a_regular_file_are_refused(tmp_path: Path, how: str) -> None:
    write(tmp_path, [dep()])
    (tmp_path / "real").write_text(json.dumps([hashes()]))
    side = tmp_path / "kernels.lock.variants"
    {"link": lambda: side.symlink_to(tmp_path / "real"), "fifo": lambda: os.mkfifo(side),
     "folder": side.mkdir}[how]()
    expected = "it is a symbolic link" if how == "link" else "not a regular file|Is a directory"
    with pytest.raises(LockfileError, match=expected):
        lock.read_lockfile(tmp_path)  # never waits on a FIFO


def test_a_named_lock_that_is_a_link_is_followed_its_hashes_beside_the_target(tmp_path: Path) -> None:
    (tmp_path / "real").mkdir()
    write(tmp_path / "real", [dep()], [hashes()])
    (tmp_path / "kernels.lock").symlink_to(tmp_path / "real" / "kernels.lock")
    assert lock.read_lockfile(tmp_path).hashes == tmp_path / "real" / "kernels.lock.variants"


def test_a_found_lock_needs_private_hashes_and_a_private_folder(tmp_path: Path) -> None:
    folder = tmp_path / "proj"
    folder.mkdir(mode=0o755)
    write(folder, [dep()], [hashes()])
    assert lock.read_lockfile(folder, private=True).hashes is not None
    (folder / "kernels.lock.variants").chmod(0o664)
    with pytest.raises(LockfileError, match="refusing this kernels.lock.variants: group or others may write it"):
        lock.read_lockfile(folder, private=True)
    (folder / "kernels.lock.variants").unlink()
    assert lock.read_lockfile(folder, private=True).hashes is None
    folder.chmod(0o777)  # anyone could have deleted the hashes
    with pytest.raises(LockfileError, match="no kernels.lock.variants beside it, and others may write its folder"):
        lock.read_lockfile(folder, private=True)
    assert lock.read_lockfile(folder).hashes is None  # a lock named by the caller is the caller's
    folder.chmod(0o1777)  # sticky: no one deletes another's files
    assert lock.read_lockfile(folder, private=True).hashes is None
    folder.chmod(0o755)


def test_dependencies_are_locked_transitively_once_each_and_a_cycle_is_named() -> None:
    D = lock.Dependency
    tree = {"o/app": [D("o/a", 1), D("o/b", revision="main")], "o/a": [D("o/c", 2)],
            "o/b": [D("o/c", 2), D("o/a", 1)], "o/c": []}
    asked: list[str] = []

    def lock_one(d: lock.Dependency) -> tuple[KernelLock, list[lock.Dependency]]:
        asked.append(d.repo_id)
        return KernelLock(d.repo_id, SHA, {}, d.version, d.revision), tree[d.repo_id]

    locks = lock.lock_dependencies([D("o/app", 1), D("o/c", 3)], lock_one=lock_one)
    assert [(x.repo_id, x.spec) for x in locks] == [  # the project's own first
        ("o/app", "version 1"), ("o/c", "version 3"), ("o/a", "version 1"), ("o/c", "version 2"),
        ("o/b", "revision 'main'")]
    assert asked == ["o/app", "o/a", "o/c", "o/b", "o/c"]
    tree["o/c"] = [D("o/b", revision="main")]
    with pytest.raises(LockfileError, match=r"kernel dependencies form a cycle: o/app \(version 1\) -> "
                       r"o/a \(version 1\) -> o/c \(version 2\) -> o/b \(revision main\) -> o/c \(version 2\)"):
        lock.lock_dependencies([D("o/app", 1)], lock_one=lock_one)
    # refused as soon as it closes: after two lookups, with exactly that chain
    tree.update({"o/a": [D("o/b", 1)], "o/b": [D("o/a", 1)]})
    asked.clear()
    with pytest.raises(LockfileError) as e:
        lock.lock_dependencies([D("o/a", 1)], lock_one=lock_one)
    assert str(e.value) == "kernel dependencies form a cycle: o/a (version 1) -> o/b (version 1) -> o/a (version 1). " \
        "Remove one of them."
    assert asked == ["o/a", "o/b"]



def test_a_dependency_chain_too_deep_to_lock_is_refused_as_a_load_refuses_it() -> None:
    D = lock.Dependency

    def lock_one(d: lock.Dependency) -> tuple[KernelLock, list[lock.Dependency]]:
        n = int(d.repo_id.rsplit("-", 1)[1])
        return KernelLock(d.repo_id, SHA, {}, d.version, d.revision), [D(f"o/k-{n + 1}", 1)]

    with pytest.raises(LockfileError, match="kernel dependencies nest more than 16 deep: o/k-0 "
                       r"\(version 1\) -> o/k-1 .* -> o/k-17 \(version 1\)\. Remove one of them"):
        lock.lock_dependencies([D("o/k-0", 1)], lock_one=lock_one)

def test_the_pinned_kernels_reads_our_lock_and_we_read_its_lock(tmp_path: Path) -> None:
    """Both directions, in this process, against the pinned kernels release (its own parser and writer)."""
    rust = pytest.importorskip("kernels._rust", reason="the pinned kernels release is not installed")
    ours = lock.write_lockfile(tmp_path, [
        KernelLock("kernels-community/activation", SHA, {"torch-cpu": VariantLock(HASH, signer="me (x)")}, version=1),
        KernelLock("acme/dep", SHA2, {"torch-cpu": VariantLock(HASH)}, revision="v1.2"),
        KernelLock("acme/dep", SHA2, {"torch-cpu": VariantLock(HASH)}, version=3),
        KernelLock("acme/sha256", "c" * 64, {"torch-cpu": VariantLock(HASH)}, version=1)])
    read = rust.KernelLocks.from_json(ours.read_text())
    assert sorted((d.repo_id, repr(d.version), str(x.commit)) for d, x in read.items()) == [
        ("acme/dep", 'KernelVersion.Revision(revision="v1.2")', SHA2),
        ("acme/dep", "KernelVersion.Version(version=3)", SHA2),
        ("acme/sha256", "KernelVersion.Version(version=1)", "c" * 64),
        ("kernels-community/activation", "KernelVersion.Version(version=1)", SHA)]
    theirs = rust.KernelLocks({
        rust.KernelDependency("kernels-community/activation", rust.KernelVersion.Version(1)): rust.KernelLock("a" * 40),
        rust.KernelDependency("acme/dep", rust.KernelVersion.Revision("main")): rust.KernelLock("B" * 40),
        rust.KernelDependency("acme/sha256", rust.KernelVersion.Version(2)): rust.KernelLock("D" * 64)})
    (tmp_path / "theirs.lock").write_text(theirs.to_json())
    read_back = lock.read_lockfile(tmp_path / "theirs.lock")
    assert read_back.hashes is None  # kernels records commits only
    assert read_back.entry("kernels-community/activation") == KernelLock("kernels-community/activation", "a" * 40, {}, 1)
    assert read_back.entry("acme/dep", revision="main").sha == "b" * 40
    assert read_back.entry("acme/sha256").sha == "d" * 64  # a SHA-256 git commit, as kernels accepts since 0.17.2
