"""Kernel dependencies on the loopback Hub: pins, lock files, offline loads, ``download``,
tampering and trust, each through the whole pipeline."""

from __future__ import annotations

import dataclasses
import itertools
import json
import sys
from pathlib import Path

import pytest

import kernel_plugins
from kernel_plugins import registry
from kernel_plugins.cli.main import main
from kernel_plugins.errors import IntegrityError, KernelDependencyError, LockfileError, TrustError
from tests.lock.conftest import forget_kernel_modules, write_pyproject  # noqa: F401 - fixture
from tests.support.hub import GitRepo, HubServer, make_kernel_repo

ORG = "kernels-community"
_n = itertools.count()


def publish(server: HubServer, name: str, code: str, depends: list[dict[str, object]] | None = None,
            *, repo: str | None = None, org: str = ORG) -> tuple[str, GitRepo]:
    """Commit a torch-cpu variant (a fresh kernel id) to ``org/<repo or name-n>``, branch v1."""
    repo_id = f"{org}/{repo or f'{name}-{next(_n)}'}"
    meta = {"name": name, "id": f"_{name.replace('-', '_')}_{next(_n)}", "version": 1,
            "license": "Apache-2.0", "python-depends": [], "backend": {"type": "cpu"},
            "kernel-depends": depends or []}
    git = make_kernel_repo(server, repo_id, variants={
        "torch-cpu": {"metadata.json": json.dumps(meta), "__init__.py": code}})
    return repo_id, git


def forget(*modules: object) -> None:
    """Unload kernel modules, as a fresh process would not have them."""
    for module in modules:
        name = module.__name__  # type: ignore[attr-defined]
        registry._kernels.pop(name, None)
        for key in [k for k in sys.modules if k == name or k.startswith(name + ".")]:
            del sys.modules[key]


def lock_only(folder: Path, project: Path, repo_id: str) -> Path:
    """A copy of ``project``'s lock with the entry of ``repo_id`` alone (no dependencies)."""
    from kernel_plugins.lock import read_lockfile, write_lockfile

    folder.mkdir()
    entry = read_lockfile(project).entry(repo_id)
    return write_lockfile(folder / "kernels.lock", [entry])


USES_BASE = "from kernels import get_kernel_dep\nDEP = get_kernel_dep({base!r})\nVALUE = DEP.VALUE\n"


@pytest.fixture
def pair(hub_env: HubServer) -> tuple[str, GitRepo, str]:
    """A kernel ``top`` (v1) depending on ``base`` version 1 (VALUE 1)."""
    base, git = publish(hub_env, "base", "VALUE = 1\n")
    top, _ = publish(hub_env, "top", USES_BASE.format(base=base), [{"repo-id": base, "version": 1}])
    return top, git, base


def test_a_hub_dependency_loads_and_then_offline_from_the_cache(
    manager: object, pair: tuple[str, GitRepo, str], hub_env: HubServer, hub_offline: object,
) -> None:
    top, git, base = pair
    module = kernel_plugins.load(top, version=1, device="cpu")
    (dep,) = module.__kernel_provenance__.dependencies
    assert (module.VALUE, dep.repo_id, dep.source, dep.sha) == (1, base, "hub", git.head())
    assert any(base in p for p in hub_env.paths())
    forget(module, module.DEP)
    hub_env.clear_requests()
    hub_offline(True)  # type: ignore[operator]
    again = kernel_plugins.load(top, version=1, device="cpu")
    assert again.VALUE == 1 and again.__kernel_provenance__.dependencies[0].sha == git.head()
    assert hub_env.requests == []


def test_a_locked_load_takes_the_dependency_from_the_lock(
    manager: object, pair: tuple[str, GitRepo, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    from kernel_plugins.lock import read_lockfile, write_lockfile

    top, git, base = pair
    locked_sha = git.head()
    project = write_pyproject(tmp_path / "proj", {top: 1, base: 1})
    assert main(["lock", str(project)]) == 0
    meta = json.loads((git.path / "build/torch-cpu/metadata.json").read_text())
    git.write("build/torch-cpu/metadata.json", json.dumps({**meta, "id": meta["id"] + "_next"}))
    git.write("build/torch-cpu/__init__.py", "VALUE = 2\n")
    git.branch("v1", git.commit("base v1 moves on"))
    module = kernel_plugins.load(top, lockfile=project, device="cpu")
    (dep,) = module.__kernel_provenance__.dependencies
    assert (module.VALUE, dep.sha) == (1, locked_sha)
    assert f"locked by {project / 'kernels.lock'}" in dep.notes
    forget(module, module.DEP)
    # a lock without an entry for the dependency (as every lock before dependencies were
    # locked), or pinning it for another version: an error naming it, never its moving branch
    only_top = lock_only(tmp_path / "only-top", project, top)
    (tmp_path / "other").mkdir()
    other = write_lockfile(tmp_path / "other" / "kernels.lock", [
        read_lockfile(project).entry(top), dataclasses.replace(read_lockfile(project).entry(base), version=2)])
    for lock, env in ((only_top, {}), (other, {}), (only_top, {"KERNEL_PLUGINS_STRICT": "1"})):
        with monkeypatch.context() as m:
            for k, v in env.items():
                m.setenv(k, v)
            with pytest.raises(KernelDependencyError) as e:
                kernel_plugins.load(top, lockfile=lock, device="cpu", fallback="error")
        assert f"{lock} does not pin {base} (version 1), a dependency (kernel-depends)" in str(e.value)
        assert "Run `kernel-plugins lock`" in str(e.value) and isinstance(e.value.__cause__, LockfileError)
        assert not any(k.startswith(module.DEP.__name__) for k in sys.modules)


def test_download_fetches_the_dependencies_so_an_offline_load_needs_nothing_more(
    manager: object, pair: tuple[str, GitRepo, str], tmp_path: Path, hub_env: HubServer,
    hub_offline: object, capsys: pytest.CaptureFixture[str],
) -> None:
    top, git, base = pair
    project = write_pyproject(tmp_path / "proj", {top: 1})
    assert main(["lock", str(project)]) == 0  # locks the dependency too, as its own entry
    capsys.readouterr()
    assert main(["download", str(project), "--device", "cpu", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)["variants"]
    assert [(r["repo_id"], r["status"], r["detail"][:3]) for r in rows] == [
        (top, "ok", "OK "), (base, "ok", "OK ")]
    # a lock without the dependency (an older one): the load would refuse it, so download fails
    only_top = lock_only(tmp_path / "only-top", project, top)
    assert main(["download", str(only_top), "--device", "cpu", "--json"]) == 1
    rows = json.loads(capsys.readouterr().out)["variants"]
    assert [(r["repo_id"], r["status"]) for r in rows] == [(top, "failed")]
    assert f"does not pin {base} (version 1), a dependency" in rows[0]["detail"]
    assert main(["verify", str(only_top), "--json"]) == 1  # and verify fails on it
    (row,) = json.loads(capsys.readouterr().out)["variants"]
    assert (row["repo_id"], row["status"]) == (top, "failed") and "Run `kernel-plugins lock`" in row["detail"]
    assert main(["download", top, "--version", "1", "--device", "cpu", "--json"]) == 0  # no project
    rows = json.loads(capsys.readouterr().out)["variants"]
    assert [r["status"] for r in rows] == ["ok", "ok"] and rows[1]["detail"].startswith(f"OK dependency of {top}: ")
    hub_env.clear_requests()
    hub_offline(True)  # type: ignore[operator]
    module = kernel_plugins.load(top, lockfile=project, device="cpu")
    assert module.DEP.__kernel_provenance__.sha == git.head() and hub_env.requests == []


def test_a_dependency_changed_in_the_cache_is_refused(
    manager: object, pair: tuple[str, GitRepo, str], hf_cache: Path,
) -> None:
    top, git, base = pair
    module = kernel_plugins.load(top, version=1, device="cpu")
    init = Path(module.DEP.__kernel_provenance__.path) / "__init__.py"
    init.unlink()  # a link into the blobs: replace it by a file of other content
    init.write_text("VALUE = 666\n")
    forget(module, module.DEP)
    with pytest.raises(KernelDependencyError, match=f"depends on {base} .*IntegrityError") as e:
        kernel_plugins.load(top, version=1, device="cpu")
    assert isinstance(e.value.__cause__, IntegrityError)
    assert module.__name__ not in sys.modules and module.DEP.__name__ not in sys.modules


def test_an_untrusted_dependency_is_refused_before_any_request_for_its_files(
    manager: object, hub_env: HubServer,
) -> None:
    hub_env.organisations.set("stranger", False)
    top, _ = publish(hub_env, "needy", "", [{"repo-id": "stranger/base", "version": 1}])
    with pytest.raises(KernelDependencyError, match=f"{top} depends on stranger/base") as e:
        kernel_plugins.load(top, version=1, device="cpu")
    assert isinstance(e.value.__cause__, TrustError)
    assert "does not mark it as a trusted kernel publisher" in str(e.value)
    # only the organisation was asked whether it is a trusted publisher: nothing of the repository
    assert [p for p in hub_env.paths() if "stranger" in p] == ["/api/organizations/stranger/overview"]


def test_a_dependency_from_a_trusted_publisher_loads(manager: object, hub_env: HubServer) -> None:
    hub_env.organisations.set("pub-dep", True)
    base, _ = publish(hub_env, "base", "VALUE = 7\n", org="pub-dep")
    top, _ = publish(hub_env, "top", USES_BASE.format(base=base), [{"repo-id": base, "version": 1}])
    module = kernel_plugins.load(top, version=1, device="cpu")
    assert module.VALUE == 7 and module.__kernel_provenance__.dependencies[0].repo_id == base


def test_variants_shows_the_dependencies_fetching_only_metadata_json(
    manager: object, pair: tuple[str, GitRepo, str], capsys: pytest.CaptureFixture[str],
    hub_env: HubServer,
) -> None:
    top, _, base = pair
    assert main(["variants", top, "--version", "1", "--device", "cpu"]) == 0
    assert f"depends on: {base} (version 1)" in capsys.readouterr().out
    files = [p for p in hub_env.paths() if "/resolve/" in p]
    assert files and all(p.endswith("/metadata.json") for p in files)


def test_lock_follows_the_kernel_depends_of_every_variant_not_only_the_first(
    manager: object, hub_env: HubServer, tmp_path: Path,
) -> None:
    from kernel_plugins.lock import read_lockfile

    base, _ = publish(hub_env, "base", "VALUE = 1\n")
    top = f"{ORG}/multi-{next(_n)}"
    variants = {}
    for variant, backend, depends in (("torch-cpu", "cpu", []), ("torch-cuda", "cuda", [{"repo-id": base, "version": 1}])):
        meta = {"name": "multi", "id": f"_multi_{backend}_{next(_n)}", "version": 1, "license": "Apache-2.0",
                "python-depends": [], "backend": {"type": backend}, "kernel-depends": depends}
        variants[variant] = {"metadata.json": json.dumps(meta), "__init__.py": ""}
    make_kernel_repo(hub_env, top, variants=variants)
    project = write_pyproject(tmp_path / "proj", {top: 1})
    assert main(["lock", str(project)]) == 0
    assert [(e.repo_id, e.version) for e in read_lockfile(project)] == [(top, 1), (base, 1)]
