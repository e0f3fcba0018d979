"""A package ships its kernels.lock: real setuptools and hatchling builds of two tiny
projects with the build hooks of ``kernel_plugins.lock._packaging``, installed by pip into
a throw-away folder, where ``lockfile=None`` finds each project's lock through its own
distribution."""

from __future__ import annotations

import gc
import importlib.util
import json
import subprocess
import sys
import textwrap
from importlib import metadata
from pathlib import Path
from typing import Any

import pytest

from kernel_plugins import lock
from kernel_plugins.errors import LockfileError
from kernel_plugins.lock import KernelLock, VariantLock
from kernel_plugins.lock._packaging import write_egg_file

pytestmark = pytest.mark.plugin_install

SHA = "0123456789abcdef0123456789abcdef01234567"
FINDER = textwrap.dedent('''
    def found():
        from kernel_plugins.lock import caller_file, find_lockfile
        return find_lockfile(caller_file(), what=__name__)
''')
BACKENDS = {
    "setuptools": '[build-system]\nrequires = ["setuptools"]\nbuild-backend = "setuptools.build_meta"\n',
    "hatchling": '[build-system]\nrequires = ["hatchling"]\nbuild-backend = "hatchling.build"\n\n'
                 '[tool.hatch.build.hooks.kernels-lock]\n\n[tool.hatch.build.targets.wheel]\npackages = ["{pkg}"]\n',
}


def _project(root: Path, backend: str) -> Path:
    pkg = f"demo_{backend}"
    folder = root / pkg
    (folder / pkg).mkdir(parents=True)
    (folder / pkg / "__init__.py").write_text(FINDER)
    (folder / "pyproject.toml").write_text(BACKENDS[backend].format(pkg=pkg) + textwrap.dedent(f'''
        [project]
        name = "{pkg.replace("_", "-")}"
        version = "0.1"

        [tool.kernels.dependencies]
        "kernels-community/{backend}" = 1
    '''))
    lock.write_lockfile(folder, [KernelLock(f"kernels-community/{backend}", SHA,
                                            {"torch-cpu": VariantLock("sha256-" + "ab" * 32, signer="me (x)")}, 1)])
    return folder


def test_setuptools_and_hatchling_builds_ship_the_lock_found_through_the_distribution(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    hooks = {e.name for e in metadata.entry_points(group="egg_info.writers")} | \
        {e.name for e in metadata.entry_points(group="hatch")}
    assert {"kernels.lock", "kernels.lock.variants", "kernels-lock"} <= hooks, (
        "kernel-plugins' build hooks are not registered: reinstall it (pip install -e .)")
    if importlib.util.find_spec("hatchling") is None or importlib.util.find_spec("setuptools") is None:
        pytest.skip("needs setuptools and hatchling installed (the test extra)")
    projects = [_project(tmp_path / "src", b) for b in BACKENDS]
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "-q"]
    built = subprocess.run([*pip, "wheel", "--no-deps", "--no-build-isolation", "--no-index",
                            "-w", str(tmp_path / "wheels"), *map(str, projects)],
                           capture_output=True, text=True, timeout=300, check=False)
    assert built.returncode == 0, built.stdout + built.stderr
    site = tmp_path / "site"
    installed = subprocess.run([*pip, "install", "--no-deps", "--no-index", "--target", str(site),
                                *map(str, sorted((tmp_path / "wheels").glob("*.whl")))],
                               capture_output=True, text=True, timeout=300, check=False)
    assert installed.returncode == 0, installed.stdout + installed.stderr
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.chdir(tmp_path)  # no kernels.lock here: only the distributions' own count
    shipped = {"setuptools": "demo_setuptools-0.1.dist-info", "hatchling": "demo_hatchling-0.1.dist-info/extra_metadata"}
    for backend, folder in shipped.items():
        module = __import__(f"demo_{backend}")
        found = module.found()
        assert found.path == site / folder / "kernels.lock"
        assert found.hashes == site / folder / "kernels.lock.variants"
        (entry,) = found.entries
        assert (entry.repo_id, entry.sha, entry.version) == (f"kernels-community/{backend}", SHA, 1)
        assert entry.variants["torch-cpu"].signer == "me (x)"


class _EggInfo:
    """The part of setuptools' ``egg_info`` command the writer uses."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, str | None, bool]] = []

    def write_or_delete_file(self, what: str, filename: str, data: str | None, force: bool = False) -> None:
        self.calls.append((what, data, force))


def test_the_setuptools_writer_refuses_a_broken_lock_and_deletes_a_stale_copy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    cmd = _EggInfo()
    write_egg_file(cmd, "kernels.lock", str(tmp_path / "egg" / "kernels.lock"))
    assert cmd.calls == [("kernels.lock", None, True)]  # no lock: a stale copy goes
    lock.write_lockfile(tmp_path, [KernelLock("a/b", SHA, {}, revision="main")])
    (tmp_path / "kernels.lock.variants").write_text("[]")  # written for other commits
    with pytest.raises(LockfileError, match="has no hashes for a/b"):
        write_egg_file(cmd, "kernels.lock", "x")


def _hatch_hook(root: Path) -> Any:
    from hatchling.builders.hooks.plugin.interface import BuildHookInterface  # noqa: F401 - the test extra

    from kernel_plugins.lock._packaging import hatch_register_build_hook

    return hatch_register_build_hook()(str(root), {}, None, None, str(root / "dist"), "wheel")


def _shipped(root: Path) -> dict[str, bytes]:
    """What each backend ships from ``root``: setuptools' writer and hatchling's hook, in-process."""
    cmd = _EggInfo()
    with pytest.MonkeyPatch.context() as m:
        m.chdir(root)
        for name in ("kernels.lock", "kernels.lock.variants"):
            write_egg_file(cmd, name, name)
    hook, build_data = _hatch_hook(root), {"extra_metadata": {}}
    hook.initialize("standard", build_data)
    hatched = {dest: Path(src).read_bytes() for src, dest in build_data["extra_metadata"].items()}
    del hook
    gc.collect()
    assert not any(Path(src).exists() for src in build_data["extra_metadata"])  # the copies go with the hook
    out = {what: data.encode() for what, data, _ in cmd.calls if data is not None}
    assert hatched == out  # both backends ship the same
    return out


def test_the_build_hooks_ship_the_bytes_they_checked_never_a_link_or_an_unused_hashes_file(
    tmp_path: Path,
) -> None:
    """Issue 36: a ``kernels.lock.variants`` link put any file of the build machine in the wheel."""
    secret = tmp_path / "secret-token"
    secret.write_text("hf_secret\n")
    project = _project(tmp_path / "src", "setuptools")
    files = {p.name: p.read_bytes() for p in project.glob("kernels.lock*")}
    assert len(files) == 2 and _shipped(project) == files  # the 0.17 format: both, as read
    side = project / "kernels.lock.variants"
    side.unlink()
    side.symlink_to(secret)  # a link named like the hashes file: refused, the build fails
    with pytest.raises(LockfileError, match="it is a symbolic link"):
        _shipped(project)
    with pytest.raises(LockfileError, match="it is a symbolic link"):
        _hatch_hook(project).initialize("standard", {"extra_metadata": {}})
    # the earlier format reads no hashes file, so none is shipped, whatever lies beside it
    earlier = json.dumps([{"repo_id": "a/b", "sha": SHA, "variants": {}}]).encode()
    (project / "kernels.lock").write_bytes(earlier)
    assert _shipped(project) == {"kernels.lock": earlier}
    # a lock that is itself a link is refused too (the hashes beside its target were read)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "kernels.lock").write_bytes(files["kernels.lock"])
    (elsewhere / "kernels.lock.variants").write_bytes(files["kernels.lock.variants"])
    side.unlink()
    (project / "kernels.lock").unlink()
    (project / "kernels.lock").symlink_to(elsewhere / "kernels.lock")
    with pytest.raises(LockfileError, match="it is a symbolic link"):
        _shipped(project)
