"""Which kernels.lock a locked load uses when none is named (issue: the search walked up
to ``/`` from the caller's file and the working directory, temp folder included)."""

from __future__ import annotations

import json
import logging
import os
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from kernel_plugins import lock
from kernel_plugins.cli.main import main
from kernel_plugins.errors import LockfileError
from kernel_plugins.layers import LockedLayerRepository
from kernel_plugins.lock import _discovery
from tests.support.owners import give_to_another_user

SHA = "0123456789abcdef0123456789abcdef01234567"
LOCK = json.dumps([{"repo_id": "o/r", "sha": SHA, "variants": {}}])


@pytest.fixture
def outside_temp(monkeypatch: pytest.MonkeyPatch) -> None:
    """tmp_path lies in the temp folder, which is never searched; lift that one rule."""
    monkeypatch.setattr(_discovery, "_temp_roots", lambda: [])


def project(root: Path) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    return root


def test_the_nearest_lock_of_the_project_is_found_and_named(
    tmp_path: Path, outside_temp: None, caplog: pytest.LogCaptureFixture
) -> None:
    root = project(tmp_path / "proj")
    (root / "kernels.lock").write_text(LOCK)
    code = root / "src" / "app"
    code.mkdir(parents=True)
    with caplog.at_level(logging.INFO, logger="kernel_plugins"):
        found = lock.find_lockfile(str(code / "model.py"), what="X")
    assert found.path == root / "kernels.lock" and found.entries[0].sha == SHA
    assert f"using lock file {root / 'kernels.lock'}" in caplog.text


def test_a_lock_above_the_project_root_is_never_used(
    tmp_path: Path, outside_temp: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "kernels.lock").write_text(LOCK)  # planted in a shared parent folder
    root = project(tmp_path / "shared" / "proj")
    monkeypatch.chdir(root)
    with pytest.raises(LockfileError, match=f"no kernels.lock found in {root} \\(searched up to the project root"):
        lock.find_lockfile(str(root / "model.py"), what="X")
    # without a project root, only the folder itself is looked at
    bare = tmp_path / "bare" / "sub"
    bare.mkdir(parents=True)
    monkeypatch.chdir(bare)
    with pytest.raises(LockfileError, match=f"found in {bare} \\(searched"):
        lock.find_lockfile(str(bare / "nb.py"), what="X")


def test_the_temp_folder_is_never_searched(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = project(tmp_path / "proj")  # tmp_path is inside the temp folder
    (root / "kernels.lock").write_text(LOCK)
    monkeypatch.chdir(root)
    with pytest.raises(LockfileError, match="in the temporary folder, which is never searched"):
        lock.find_lockfile(str(root / "cell.py"), what="X")
    repo = LockedLayerRepository("o/r", layer_name="L", origin=str(root / "cell.py"))
    with pytest.raises(LockfileError, match="pass lockfile="):
        repo.resolve_lockfile()


def _foreign(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Make ``path`` look owned by someone else (chown as root, else another uid for us)."""
    if os.geteuid() == 0:
        os.chown(path, 4321, -1)
    else:
        monkeypatch.setattr(_discovery.os, "getuid", lambda: os.geteuid() + 1)


@pytest.mark.parametrize("how", ["foreign owner", "group-writable", "world-writable"])
def test_a_lock_someone_else_could_write_is_refused(
    tmp_path: Path, outside_temp: None, monkeypatch: pytest.MonkeyPatch, how: str
) -> None:
    root = project(tmp_path / "proj")
    path = root / "kernels.lock"
    path.write_text(LOCK)
    path.chmod(0o644)
    assert lock.find_lockfile(str(root / "m.py"), what="X").path == path  # fine as it is
    if how == "foreign owner":
        _foreign(path, monkeypatch)
        why = "it is owned by user id"
    else:
        path.chmod(0o664 if how == "group-writable" else 0o646)
        why = "group or others may write it"
    with pytest.raises(LockfileError, match=f"refusing this kernels.lock: {why}"):
        lock.find_lockfile(str(root / "m.py"), what="X")


def test_the_lock_of_the_callers_installed_distribution_comes_first(
    tmp_path: Path, outside_temp: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    site = tmp_path / "site"
    (site / "demo_app").mkdir(parents=True)
    (site / "demo_app" / "kernels.lock").write_text(LOCK)
    info = site / "demo_app-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: demo-app\nVersion: 1.0\n")
    (info / "RECORD").write_text("demo_app/__init__.py,,\ndemo_app/kernels.lock,,\n")
    monkeypatch.syspath_prepend(str(site))
    elsewhere = project(tmp_path / "cwd")
    (elsewhere / "kernels.lock").write_text(LOCK)
    monkeypatch.chdir(elsewhere)
    caller = site / "demo_app" / "model.py"
    assert lock.find_lockfile(str(caller), what="X").path == site / "demo_app" / "kernels.lock"


def _finishes(call: Callable[[], object], seconds: float = 20.0) -> object:
    """Run ``call`` in a thread; fail (instead of hanging) when it blocks."""
    out: list[object] = []
    errors: list[BaseException] = []

    def run() -> None:
        try:
            out.append(call())
        except BaseException as e:  # re-raised in the test's thread
            errors.append(e)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), "blocked reading a FIFO"
    if errors:
        raise errors[0]
    return out[0]


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="FIFOs are POSIX")
def test_a_fifo_named_kernels_lock_is_refused_not_waited_on(
    tmp_path: Path, outside_temp: None, capsys: pytest.CaptureFixture[str]
) -> None:
    root = project(tmp_path / "proj")
    os.mkfifo(root / "kernels.lock")
    assert _finishes(lambda: main(["verify", str(root)])) != 0
    assert "not a regular file" in capsys.readouterr().err
    assert _finishes(lambda: main(["download", str(root)])) != 0
    assert "not a regular file" in capsys.readouterr().err
    # found by the search, it is refused too
    with pytest.raises(LockfileError, match="not a regular file"):
        _finishes(lambda: lock.find_lockfile(str(root / "m.py"), what="X"))


def _chown_other(path: Path) -> None:
    """Give ``path`` (itself, not a link's target) to another user; needs root (never skipped under CI)."""
    give_to_another_user(path)


def test_a_link_planted_by_another_user_is_refused(tmp_path: Path, outside_temp: None) -> None:
    """Issue #26: the owner check followed the link, so a link to any root-owned lock passed."""
    elsewhere = project(tmp_path / "other-project")
    (elsewhere / "kernels.lock").write_text(LOCK)  # a lock of yours or root's
    root = project(tmp_path / "proj")
    (root / "kernels.lock").symlink_to(elsewhere / "kernels.lock")
    _chown_other(root / "kernels.lock")
    with pytest.raises(LockfileError, match="refusing this kernels.lock: it is a symbolic link"):
        lock.find_lockfile(str(root / "m.py"), what="X")


@pytest.mark.parametrize("owned_by_other", ["folder", "marker"])
def test_a_marker_of_another_user_does_not_move_the_search_root(
    tmp_path: Path, outside_temp: None, monkeypatch: pytest.MonkeyPatch, owned_by_other: str
) -> None:
    """Issue #26: a pyproject.toml planted in a shared parent folder moved the search root up
    to that folder, so a lock there was used."""
    shared = tmp_path / "shared"
    code = shared / "proj" / "src"  # a project without a marker of its own
    code.mkdir(parents=True)
    (shared / "pyproject.toml").write_text("[project]\nname = 'planted'\n")
    (shared / "kernels.lock").write_text(LOCK)  # root's: the owner check alone lets it pass
    _chown_other(shared if owned_by_other == "folder" else shared / "pyproject.toml")
    monkeypatch.chdir(code)
    with pytest.raises(LockfileError, match=f"no kernels.lock found in {code} \\(searched"):
        lock.find_lockfile(str(code / "model.py"), what="X")
