"""Kernel dependencies (``kernel-depends``) from local folders and ``LOCAL_KERNELS``.

Each dependency goes through the whole pipeline before any code of the kernel that needs
it runs; a failure before the import leaves nothing imported, a failed import nothing of
the failing kernel (dependencies that imported completely stay); a build is imported
once and shared; ``get_kernel_dep`` answers while the kernel imports, also for code
written for HF ``kernels`` (``from kernels import get_kernel_dep``), with HF kernels absent
(emulated), installed (the pinned release), or in the layout of 0.17. The Hub paths (pins,
lock files, offline, ``download``) are in tests/hub/test_hub_kernel_depends.py.
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

import kernel_plugins
from kernel_plugins import registry
from kernel_plugins.cli.main import main
from kernel_plugins.errors import (
    IntegrityError,
    KernelDependencyError,
    KernelImportError,
    KernelsVersionError,
    MetadataError,
    OfflineError,
    RepoIdError,
    TrustError,
)
from tests.support.forks import python_c
from tests.support.kernels import make_variant
from tests.support.pins import kernels_pin

ORG = "kernels-community"


def dep(repo: str, version: int = 1) -> dict[str, object]:
    return {"repo-id": f"{ORG}/{repo}" if "/" not in repo else repo, "version": version}


def kernel(root: Path, name: str, code: str, depends: list[dict[str, object]] | None = None,
           **meta: object) -> Path:
    """Repository folder ``root/<name>`` with one ``torch-cpu`` variant; returns the folder."""
    make_variant(root / name, "torch-cpu", name=name, code=code,
                 metadata={"kernel-depends": depends or [], **meta})
    return root / name


def local_kernels(monkeypatch: pytest.MonkeyPatch, **folders: Path) -> None:
    """``LOCAL_KERNELS``: ``kernels-community/<name>`` -> folder."""
    monkeypatch.setenv("LOCAL_KERNELS", os.pathsep.join(f"{ORG}/{n}={p}" for n, p in folders.items()))


def imported(folder: Path) -> bool:
    """Whether the kernel of the repository ``folder`` is imported or registered."""
    kid = json.loads((folder / "build" / "torch-cpu" / "metadata.json").read_text())["id"]
    return registry.module_name(kid) in {*sys.modules, *registry._kernels}


def marks(path: Path) -> list[str]:
    return path.read_text().split() if path.exists() else []


def marking(path: Path, what: str) -> str:
    """Kernel code that appends ``what`` to ``path`` each time it runs."""
    return f"with open({str(path)!r}, 'a') as _f:\n    _f.write({what!r} + '\\n')\n"


class _Hidden:
    """A finder that makes ``import kernels`` fail as where HF kernels is not installed."""

    def find_spec(self, name: str, path: object = None, target: object = None) -> None:
        if name.partition(".")[0] == "kernels":
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)


@pytest.fixture(autouse=True)
def _without_hf_kernels(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Each test runs without HF kernels, emulated (it is installed with the test extra: hidden
    from imports and ``find_spec`` for the test, whether or not it was imported before), unless
    it asks for ``hf_kernels``. Either way the process's modules of ``kernels`` are as before
    afterwards (those a test imported are forgotten)."""
    before = {n: m for n, m in sys.modules.items() if n.partition(".")[0] == "kernels"}
    for name in before:
        del sys.modules[name]
    yield from _hidden(request, monkeypatch)
    for name in [n for n in sys.modules if n.partition(".")[0] == "kernels"]:
        del sys.modules[name]
    sys.modules.update(before)


def _hidden(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    if "hf_kernels" in request.fixturenames:
        yield
        return
    monkeypatch.setattr(sys, "meta_path", [_Hidden(), *sys.meta_path])
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, package=None: None if name == "kernels" else real(name, package))
    yield


@pytest.fixture(params=["installed", "0.17 layout"])
def hf_kernels(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> str:
    """HF kernels importable: the installed release (the pin), or a stand-in with the layout of
    kernels 0.17 (``kernels.deps._KERNEL_DEPS`` and ``get_kernel_dep``); returns its folder."""
    if request.param == "installed":
        spec = importlib.util.find_spec("kernels")
        assert spec is not None and spec.origin, "HF kernels is installed with the test extra"
        return str(Path(spec.origin).parent)
    fake = tmp_path / "site" / "kernels"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text("from kernels.deps import get_kernel_dep\n")
    (fake / "deps.py").write_text(
        "from contextvars import ContextVar\n"
        "_KERNEL_DEPS = ContextVar('_KERNEL_DEPS', default=None)\n"
        "def get_kernel_dep(repo_id):\n"
        "    deps = _KERNEL_DEPS.get()\n"
        "    if deps is None:\n"
        "        raise RuntimeError('`get_kernel_dep` only works during kernel loading.')\n"
        "    return deps[repo_id]\n"
    )
    monkeypatch.syspath_prepend(str(fake.parent))
    return str(fake)


def test_a_dependency_is_verified_and_imported_first_and_served_while_the_kernel_imports(
    tmp_path: Path, manager: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = tmp_path / "order.log"
    local_kernels(monkeypatch, base=kernel(tmp_path, "base", marking(log, "base") + "VALUE = 41\n"))
    top = kernel(tmp_path, "top", marking(log, "top") + (
        "from kernels import get_kernel_dep\n"            # the kernels 0.17.2 spelling
        "import kernel_plugins\n"
        "from kernel_plugins.compat import kernels as compat\n"
        f"DEP = get_kernel_dep('{ORG}/base')\n"
        f"assert kernel_plugins.get_kernel_dep('{ORG}/base') is DEP\n"
        f"assert compat.get_kernel_dep('{ORG}/base') is DEP\n"
        "import kernels\n"
        "assert kernels.get_kernel is compat.get_kernel  # the rest of the API, on first use\n"
        "VALUE = DEP.VALUE + 1\n"
        "def later():\n"
        f"    return get_kernel_dep('{ORG}/base')\n"
    ), [dep("base")])

    module = kernel_plugins.load(top, device="cpu")

    assert module.VALUE == 42 and marks(log) == ["base", "top"]
    assert "kernels" not in sys.modules  # served to the kernel's code only
    with pytest.raises(ModuleNotFoundError):
        import kernels  # noqa: F401
    with pytest.raises(KernelDependencyError, match="only works during kernel loading") as e:
        module.later()
    assert isinstance(e.value, RuntimeError)  # as kernels raises it
    prov = module.__kernel_provenance__
    (base,) = prov.dependencies
    assert (base.repo_id, base.source, base.module_name) == (
        f"{ORG}/base", "local-kernels", module.DEP.__name__)
    assert json.loads(json.dumps(prov.to_dict()))["dependencies"][0]["repo_id"] == f"{ORG}/base"
    assert [p.repo_id for p in kernel_plugins.loaded_kernels()][-2:] == [f"{ORG}/base", str(top)]


def test_a_dependency_is_imported_once_and_shared(
    tmp_path: Path, manager: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = tmp_path / "runs.log"
    local_kernels(monkeypatch, shared=kernel(tmp_path, "shared", marking(log, "shared")))
    code = f"from kernel_plugins import get_kernel_dep\nDEP = get_kernel_dep('{ORG}/shared')\n"
    one = kernel_plugins.load(kernel(tmp_path, "one", code, [dep("shared")]), device="cpu")
    two = kernel_plugins.load(kernel(tmp_path, "two", code, [dep("shared")]), device="cpu")
    assert one.DEP is two.DEP and marks(log) == ["shared"]
    assert kernel_plugins.load(f"{ORG}/shared", device="cpu") is one.DEP
    assert len([m for m in sys.modules if m == one.DEP.__name__]) == 1


def test_a_cycle_is_refused_naming_it_before_any_code_runs(
    tmp_path: Path, manager: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = tmp_path / "runs.log"
    ring = kernel(tmp_path, "ring", marking(log, "ring"), [dep("link")])
    link = kernel(tmp_path, "link", marking(log, "link"), [dep("ring")])
    local_kernels(monkeypatch, ring=ring, link=link)
    with pytest.raises(KernelDependencyError) as e:
        kernel_plugins.load(f"{ORG}/ring", device="cpu")
    assert str(e.value).endswith(f"kernel dependencies form a cycle: {ORG}/ring -> {ORG}/link (version 1) -> "
                                 f"{ORG}/ring (version 1) -> {ORG}/link (version 1). Remove one of them.")
    assert marks(log) == [] and not imported(ring) and not imported(link)


def test_a_failed_kernel_keeps_the_dependencies_that_imported_completely(
    tmp_path: Path, manager: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 36: a dependency that registered a ``torch.library`` op was dropped with its failed
    dependent and could then never be imported again; one an earlier kernel uses stays too."""
    op = f"kp_dep_{uuid.uuid4().hex[:12]}"
    leaf = kernel(tmp_path, "leaf", "VALUE = 1\n")
    mid = kernel(tmp_path, "mid", f"import torch\nLIB = torch.library.Library({op!r}, 'DEF')\n"
                 "LIB.define('twice(Tensor x) -> Tensor')\nVALUE = 2\n", [dep("leaf")])
    local_kernels(monkeypatch, leaf=leaf, mid=mid)
    uses = "from kernel_plugins import get_kernel_dep\nDEP = get_kernel_dep('{}')\n".format
    user = kernel_plugins.load(kernel(tmp_path, "user", uses(f"{ORG}/leaf"), [dep("leaf")]), device="cpu")
    top = kernel(tmp_path, "top", "raise RuntimeError('broken top')\n", [dep("mid")])
    with pytest.raises(KernelImportError, match="broken top"):
        kernel_plugins.load(top, device="cpu")
    assert imported(leaf) and imported(mid) and not imported(top)
    assert sys.modules[user.DEP.__name__] is user.DEP  # the earlier kernel's dependency is untouched
    kept = kernel_plugins.load(f"{ORG}/mid", device="cpu")
    fixed = kernel_plugins.load(kernel(tmp_path / "f", "top", uses(f"{ORG}/mid"), [dep("mid")]), device="cpu")
    assert fixed.DEP is kept and kept.LIB.ns == op  # the same module: its op registered once
    assert [p.repo_id for p in kernel_plugins.loaded_kernels()].count(f"{ORG}/mid") == 1
    # a dependency that fails to import refuses the kernel, and nothing of either is kept
    bad = kernel(tmp_path / "b", "mid", "raise ValueError('bad mid')\n")
    local_kernels(monkeypatch, mid=bad)
    again = kernel(tmp_path / "c", "top", "", [dep("mid")])
    with pytest.raises(KernelImportError, match="importing kernel 'mid' .* ValueError: bad mid"):
        kernel_plugins.load(again, device="cpu")
    assert not any(imported(k) for k in (bad, again))


def test_a_tampered_dependency_refuses_the_load_before_the_kernel_runs(
    tmp_path: Path, manager: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = tmp_path / "runs.log"
    dep_folder = kernel(tmp_path, "sealed", "VALUE = 1\n",
                        digest={"algorithm": "sha256", "files": {"__init__.py": "A" * 43 + "="}})
    local_kernels(monkeypatch, sealed=dep_folder)
    top = kernel(tmp_path, "top", marking(log, "top"), [dep("sealed")])
    with pytest.raises(KernelDependencyError) as e:
        kernel_plugins.load(top, device="cpu")
    assert f"{top} depends on {ORG}/sealed (version 1) (kernel-depends), which cannot be loaded: " \
        "IntegrityError" in str(e.value)
    assert isinstance(e.value.__cause__, IntegrityError)
    assert marks(log) == [] and not imported(top) and not imported(dep_folder)


def test_a_dependency_that_needs_a_newer_kernels_refuses_the_load_before_any_code_runs(
    tmp_path: Path, manager: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = tmp_path / "runs.log"
    newer = kernel(tmp_path, "newer", marking(log, "newer"), **{"kernels-minver": "0.20.0"})
    local_kernels(monkeypatch, newer=newer)
    top = kernel(tmp_path, "top", marking(log, "top"), [dep("newer")])
    with pytest.raises(KernelDependencyError, match="KernelsVersionError: .*kernels>=0.20.0") as e:
        kernel_plugins.load(top, device="cpu")
    assert isinstance(e.value.__cause__, KernelsVersionError)
    assert marks(log) == [] and not imported(top) and not imported(newer)
    # a kernel that needs a newer kernels is refused before its dependencies are looked at
    needy = kernel(tmp_path / "n", "needy", "", [dep("newer")], **{"kernels-minver": "0.20.0"})
    with pytest.raises(KernelsVersionError, match="kernels>=0.20.0"):
        kernel_plugins.load(needy, device="cpu")


def test_untrusted_absent_and_malformed_dependencies_name_the_kernel_and_the_entry(
    tmp_path: Path, manager: object, monkeypatch: pytest.MonkeyPatch, hf_cache: Path,
    hub_offline: object,
) -> None:
    monkeypatch.delenv("LOCAL_KERNELS", raising=False)
    hub_offline(True)  # type: ignore[operator]
    untrusted = kernel(tmp_path, "ka", "", [dep("evil-org/payload")])
    with pytest.raises(KernelDependencyError, match=f"{untrusted} depends on evil-org/payload "
                       r"\(version 1\)") as e:
        kernel_plugins.load(untrusted, device="cpu")
    assert isinstance(e.value.__cause__, TrustError)
    absent = kernel(tmp_path, "kb", "", [{"repo-id": f"{ORG}/nowhere", "revision": "main"}])
    with pytest.raises(KernelDependencyError, match=rf"{ORG}/nowhere \(revision main\)") as e:
        kernel_plugins.load(absent, device="cpu")
    assert isinstance(e.value.__cause__, OfflineError)
    bad_id = kernel(tmp_path, "kc", "", [dep("org/na me")])
    with pytest.raises(KernelDependencyError, match="org/na me") as e:
        kernel_plugins.load(bad_id, device="cpu")
    assert isinstance(e.value.__cause__, RepoIdError)
    for i, (entry, key, words) in enumerate((
        ({"repo-id": "activation", "version": 1}, "kernel-depends.0.repo-id",
         "'activation' is not a Hub repository id"),
        ({"repo-id": "org/x", "version": "1"}, "kernel-depends.0.version", "valid integer"),
        ({"repo-id": "org/x", "version": True}, "kernel-depends.0.version", "valid integer"),
        ({"repo-id": "org/x", "revision": 3}, "kernel-depends.0.revision", "valid string"),
        ({"repo-id": "org/x", "version": 1, "revision": "main"}, "kernel-depends.0",
         "give exactly one of 'version'"),
        ({"repo-id": "org/x"}, "kernel-depends.0", "give exactly one of 'version'"),
    )):
        folder = kernel(tmp_path / f"bad{i}", "kd", "", [entry])
        with pytest.raises(MetadataError) as m:
            kernel_plugins.load(folder, device="cpu")
        assert f"{folder}/build/torch-cpu/metadata.json" in str(m.value)
        assert f"key '{key}'" in str(m.value) and words in str(m.value)


def test_get_kernel_dep_names_what_the_kernel_depends_on(
    tmp_path: Path, manager: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    local_kernels(monkeypatch, base=kernel(tmp_path, "base", ""))
    top = kernel(tmp_path, "top", "from kernels import get_kernel_dep\nget_kernel_dep('org/other')\n",
                 [dep("base")])
    with pytest.raises(KernelImportError, match=rf"Dependency 'org/other' not found in kernel "
                       rf"dependencies \(kernel-depends names: {ORG}/base\)"):
        kernel_plugins.load(top, device="cpu")
    with pytest.raises(KernelDependencyError, match="only works during kernel loading"):
        kernel_plugins.get_kernel_dep(f"{ORG}/base")
    plain = kernel(tmp_path, "plain", "from kernels import get_kernel_dep\n")  # no kernel-depends
    with pytest.raises(KernelImportError, match="No module named 'kernels'"):
        kernel_plugins.load(plain, device="cpu")


def test_with_hf_kernels_installed_its_own_get_kernel_dep_answers_too(
    tmp_path: Path, manager: object, monkeypatch: pytest.MonkeyPatch, hf_kernels: str
) -> None:
    """The installed release, and a stand-in with the layout of kernels 0.17; imported by the
    kernel itself, or before the load."""
    local_kernels(monkeypatch, base=kernel(tmp_path, "base", "VALUE = 7\n"))
    code = f"from kernels import get_kernel_dep\nDEP = get_kernel_dep('{ORG}/base')\n"
    first = kernel_plugins.load(kernel(tmp_path, "first", code, [dep("base")]), device="cpu")
    assert first.DEP.VALUE == 7
    real = sys.modules["kernels"]
    assert str(Path(real.__file__).parent) == hf_kernels  # the installed package, not ours
    second = kernel_plugins.load(kernel(tmp_path, "second", code, [dep("base")]), device="cpu")
    assert second.DEP is first.DEP
    with pytest.raises(RuntimeError, match="only works during kernel loading"):
        real.get_kernel_dep(f"{ORG}/base")  # reset after each load


def test_the_compat_api_loads_dependencies_as_kernels_does(
    tmp_path: Path, manager: object, monkeypatch: pytest.MonkeyPatch, hf_cache: Path,
    hub_offline: object,
) -> None:
    from kernel_plugins.compat import kernels as compat

    monkeypatch.setenv("LOCAL_KERNELS", f"someone/base={kernel(tmp_path, 'base', 'VALUE = 3')}")
    code = "from kernels import get_kernel_dep\nDEP = get_kernel_dep('someone/base')\n"
    top = kernel(tmp_path, "top", code, [dep("someone/base")])
    module = compat.get_local_kernel(top)  # LOCAL_KERNELS is the user's own choice: no trust asked
    assert module.DEP.VALUE == 3
    loaded = compat.get_loaded_kernels()
    assert [k.metadata.name for k in loaded[-2:]] == ["base", "top"]
    assert [d.repo_id for d in loaded[-1].metadata.kernel_depends] == ["someone/base"]
    hub_offline(True)  # type: ignore[operator]
    remote = kernel(tmp_path, "remote", "", [dep("someone/elsewhere")])
    with pytest.raises(KernelDependencyError) as e:
        compat.get_local_kernel(remote)
    assert isinstance(e.value.__cause__, TrustError)
    with pytest.raises(KernelDependencyError) as e:
        compat.get_local_kernel(remote, trust_remote_code=True)
    assert isinstance(e.value.__cause__, OfflineError)  # trusted, so looked up: not cached


def test_info_variants_and_load_show_what_the_chosen_variant_depends_on(
    tmp_path: Path, manager: object, capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    top = kernel(tmp_path, "top", "", [dep("base"), {"repo-id": "org/ops", "revision": "v2"}])
    assert main(["info", str(top), "--device", "cpu"]) == 0
    assert f"kernel-depends: {ORG}/base (version 1), org/ops (revision v2)" in capsys.readouterr().out
    assert main(["variants", str(top), "--device", "cpu", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["depends_on"] == [
        f"{ORG}/base (version 1)", "org/ops (revision v2)"]
    assert main(["variants", str(kernel(tmp_path, "lone", "")), "--device", "cpu"]) == 0
    assert "depends on: no other kernel" in capsys.readouterr().out
    monkeypatch.setenv("LOCAL_KERNELS", f"{ORG}/base={kernel(tmp_path, 'base', '')}")
    needs = kernel(tmp_path, "needs", "", [dep("base")])
    assert main(["load", str(needs), "--device", "cpu"]) == 0
    assert f"dependencies {ORG}/base (torch-cpu)" in capsys.readouterr().out


SCRIPT = r"""
import json, sys
from pathlib import Path
import kernels
module = kernels.get_local_kernel(Path(sys.argv[1]))
print("RESULT" + json.dumps({"version": kernels.__version__, "value": module.VALUE,
                             "dep": module.DEP.__name__}))
"""


def test_the_kernels_spelling_is_a_valid_kernel_for_hf_kernels_too(
    tmp_path: Path, manager: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same folders load with the real HF kernels (the pinned release, installed with the
    test extra) in a process of its own."""
    base = kernel(tmp_path, "base", "VALUE = 41\n")
    code = f"from kernels import get_kernel_dep\nDEP = get_kernel_dep('{ORG}/base')\nVALUE = DEP.VALUE + 1\n"
    top = kernel(tmp_path, "top", code, [dep("base")])
    local_kernels(monkeypatch, base=base)
    ours = kernel_plugins.load(top, device="cpu")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = python_c(SCRIPT, top, env={**env, "LOCAL_KERNELS": f"{ORG}/base={base}"})
    assert done.returncode == 0, done.stderr[-3000:]
    theirs = json.loads(next(li for li in done.stdout.splitlines() if li.startswith("RESULT"))[6:])
    assert theirs == {"version": kernels_pin(), "value": 42, "dep": ours.DEP.__kernel_provenance__.metadata.id}
    assert ours.VALUE == 42
