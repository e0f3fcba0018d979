"""``python-depends``: the names the pinned kernels release knows, the community kernels' names, and the
one mechanism by which a backend declares its own (``BackendSpec.python_depends``)."""

from __future__ import annotations

import importlib.util
import json
import subprocess
from pathlib import Path

import pytest
from kernel_plugins_check.buildconfig import read_build_toml

from kernel_plugins import plugins
from kernel_plugins.device import GENERAL_PYTHON_DEPENDS, BackendSpec, PyDepend
from kernel_plugins.errors import MetadataError, MissingDependencyError
from kernel_plugins.importer import check_python_depends
from kernel_plugins.metadata import parse_metadata
from tests.reference.test_hf_kernels_compat import kernels_python  # noqa: F401 - a fixture
from tests.support.inputs import CORPUS, metadata


def installed_specs() -> dict[str, BackendSpec]:
    """The spec of every installed backend (built-ins and the installed plugins)."""
    return {name: rec.spec for name, rec in plugins.PluginManager().backends().items()}


def check(names: list[str], spec: BackendSpec) -> None:
    meta = parse_metadata(metadata(python_depends=names), where="metadata.json")
    check_python_depends(meta, spec, where="build/v/metadata.json")


def test_our_table_holds_the_pinned_kernels_releases(kernels_python: Path) -> None:  # noqa: F811
    found = subprocess.run(
        [str(kernels_python), "-I", "-c", "import importlib.util as u; "
         "print(u.find_spec('kernels').submodule_search_locations[0])"],
        capture_output=True, text=True, timeout=120, check=True,
    )
    tables = sorted(Path(found.stdout.strip()).rglob("python_depends.json"))  # _internals/ since 0.18
    assert len(tables) == 1, tables
    table = json.loads(tables[0].read_text())
    specs = installed_specs()
    theirs = [(None, name, info) for name, info in table["general"].items()]
    theirs += [(b, name, info) for b, deps in table["backends"].items() for name, info in deps.items()]
    assert {"helion", "tvm-ffi", "nvidia-cutlass-dsl", "nki", "onednn"} <= {n for _, n, _ in theirs}
    for backend, name, info in theirs:
        known = GENERAL_PYTHON_DEPENDS if backend is None else specs[backend].known_python_depends()
        assert [PyDepend(p["pkg"], p.get("import")) for p in info["python"]] == [known[name]], name
    assert set(table["backends"]) <= set(specs)  # every backend kernels lists is here
    assert {"numpy", "triton"} <= set(GENERAL_PYTHON_DEPENDS)  # ours beyond kernels', kept


def test_every_python_depends_of_the_community_kernels_is_known() -> None:
    specs = installed_specs()
    seen = set()
    for path in sorted(CORPUS.glob("*.build.toml")):
        build = read_build_toml(path)
        for backend in build.backends:
            names = build.python_depends(backend)
            seen.update(names)
            known = specs[backend].known_python_depends()
            assert [n for n in names if n not in known] == [], (path.name, backend)
    assert seen == {"einops", "tvm-ffi", "nvidia-cutlass-dsl"}


def test_missing_package_names_the_pip_package_not_the_dependency_name() -> None:
    assert importlib.util.find_spec("tvm_ffi") is None, "apache-tvm-ffi is installed here"
    with pytest.raises(MissingDependencyError) as info:
        check(["tvm-ffi"], installed_specs()["cpu"])
    assert "needs the Python package 'apache-tvm-ffi' (import 'tvm_ffi')" in str(info.value)
    assert str(info.value).endswith("pip install apache-tvm-ffi")


def test_a_dependency_without_a_module_is_not_import_checked() -> None:
    specs = installed_specs()
    check(["onednn"], specs["xpu"])  # onednn-devel ships a native library, nothing to import
    with pytest.raises(MetadataError, match="'onednn', which is not a known dependency for backend 'cpu'"):
        check(["onednn"], specs["cpu"])


def test_a_backend_declares_its_own_names_in_its_spec() -> None:
    own = BackendSpec("acme", "acme", "Acme", python_depends={
        "acme-dsl": PyDepend("acme-dsl", "acme_dsl_not_installed"),
        "einops": PyDepend("acme-einops", "acme_einops_not_installed"),  # a backend's own wins
    })
    with pytest.raises(MissingDependencyError, match="pip install acme-dsl$"):
        check(["acme-dsl"], own)
    with pytest.raises(MissingDependencyError, match="pip install acme-einops$"):
        check(["einops"], own)
    with pytest.raises(MetadataError, match=r"known: einops, helion, numpy, triton, tvm-ffi\)"):
        check(["acme-dsl"], installed_specs()["cpu"])
