"""kernel-plugins-testing itself: opt-in pytest plugin, and stand-ins built from declared facts.

The pytest cases run pytest in a child process on a throw-away project of their own
(its own ``pyproject.toml``, so this repository's ``addopts`` do not apply), with this
environment's interpreter: the core, the five backend plugins and kernel-plugins-testing
are all installed there.
"""

from __future__ import annotations

import subprocess
import sys
import types
from pathlib import Path

import pytest
import torch
from kernel_plugins_testing import EmulationError, make_device_module
from kernel_plugins_testing.stand_ins import build_declared, install_declared

from kernel_plugins.plugin_kit import Emulation, PrivateUse1Backend, SdkFile

#: A test of the unrelated project: it records which of our modules the run imported.
_PROBE = """
import sys
from pathlib import Path

def test_probe():
    ours = sorted(m for m in sys.modules if m.startswith("kernel_plugins"))
    Path("imported.txt").write_text("\\n".join(ours), encoding="utf-8")
"""


def _project(root: Path, addopts: str = "") -> Path:
    root.mkdir()
    (root / "pyproject.toml").write_text(
        f'[tool.pytest.ini_options]\naddopts = "{addopts}"\n', encoding="utf-8"
    )
    (root / "test_probe.py").write_text(_PROBE, encoding="utf-8")
    return root


def _pytest(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args],
        cwd=project, capture_output=True, text=True, timeout=300, check=False,
        env={"PATH": "/usr/bin:/bin", "KERNEL_PLUGINS_LOAD": "", "HOME": str(project)},
    )


def _only_markers(text: str) -> list[str]:
    return [line for line in text.splitlines() if "_only:" in line]


def test_an_unrelated_project_gets_nothing_of_ours(tmp_path: Path) -> None:
    project = _project(tmp_path / "other")
    run = _pytest(project, "-q")
    assert run.returncode == 0, run.stdout + run.stderr
    assert (project / "imported.txt").read_text(encoding="utf-8") == ""
    markers = _pytest(project, "--markers")
    assert markers.returncode == 0, markers.stderr
    assert _only_markers(markers.stdout) == []
    assert "--emulate-device" not in _pytest(project, "--help").stdout


def test_a_project_that_opts_in_gets_the_plugin(tmp_path: Path) -> None:
    project = _project(tmp_path / "mine", "-p kernel_plugins_testing.pytest_plugin")
    markers = _pytest(project, "--markers")
    assert markers.returncode == 0, markers.stderr
    names = {line.split(":")[0].removeprefix("@pytest.mark.") for line in _only_markers(markers.stdout)}
    assert {"cpu_only", "cuda_only"} <= names
    assert "--emulate-device" in _pytest(project, "--help").stdout
    run = _pytest(project, "-q")
    assert run.returncode == 0, run.stdout + run.stderr
    assert "kernel_plugins_testing.pytest_plugin" in (project / "imported.txt").read_text("utf-8")


def test_there_is_no_pytest11_entry_point() -> None:
    from importlib.metadata import entry_points

    assert [ep for ep in entry_points(group="pytest11") if "kernel_plugins" in ep.value] == []


# -- stand-ins built from declared facts ------------------------------------------------


def _backend(emulation: Emulation | None) -> PrivateUse1Backend:
    return PrivateUse1Backend(
        name="kpdecl", display_name="Declared", vendor_module="torch_kpdecl",
        import_hint="-", emulation=emulation,
    )


FACTS = Emulation(
    facts={"device_name": "D1", "capability": (3, 1), "cores": 7, "sdk": "4.2", "version": None,
           "soc": 9},
    not_properties=("soc",),
    functions={"is_bf16_supported": lambda f: f["capability"][0] >= 3, "soc_id": lambda f: f["soc"]},
    version_attrs={"kpdecl": "sdk", "kpdecl_none": None},
    version="9.9+torch{torch}",
    vendor_ops=("kp_fused_op",),
    sdk_file=SdkFile("KPDECL_HOME", "version.txt", "SDK {sdk}\n", "sdk"),
    absent={"memory_bandwidth": "declared devices do not report it"},
)


def test_declared_facts_become_the_vendor_stack(tmp_path: Path) -> None:
    stand = build_declared(_backend(FACTS), 2, {"cores": 11}, workdir=tmp_path)
    props = stand.device_module.get_device_properties(1)
    assert (props.name, props.major, props.minor, props.cores) == ("D1", 3, 1, 11)
    assert not hasattr(props, "soc") and not hasattr(props, "sdk")
    assert stand.device_module.is_bf16_supported() is True
    assert stand.device_module.soc_id() == 9
    assert stand.version_attrs == {"kpdecl": "4.2", "kpdecl_none": None}
    assert stand.package.__name__ == "torch_kpdecl"
    assert stand.package.__version__ == "9.9+torch" + torch.__version__.split("+")[0]
    assert stand.package.__kernel_plugins_emulated__ is True
    with pytest.raises(EmulationError, match="vendor kernel"):
        stand.package.kp_fused_op()
    home = Path(stand.environ["KPDECL_HOME"])
    assert home.parent == tmp_path
    assert (home / "version.txt").read_text(encoding="utf-8") == "SDK 4.2\n"


def test_a_fact_set_to_none_leaves_its_sdk_file_out(tmp_path: Path) -> None:
    build_declared(_backend(FACTS), 1, workdir=tmp_path)
    stand = build_declared(_backend(FACTS), 1, {"sdk": None}, workdir=tmp_path)
    assert not (Path(stand.environ["KPDECL_HOME"]) / "version.txt").exists()
    assert stand.version_attrs["kpdecl"] is None


@pytest.mark.parametrize(
    ("facts", "message"),
    [
        ({"memory_bandwidth": 1}, "declared devices do not report it"),
        ({"cors": 1}, "unknown kpdecl emulation fact"),
        ({"sdk": 4.2}, "fact sdk=4.2 must be a string \\(e.g. '4.2'\\) or None"),
        ({"version": 1}, "fact version=1 must be a string or None"),
        ({"capability": "3.1"}, "must be a \\(major, minor\\) pair"),
    ],
)
def test_wrong_facts_are_refused_by_name(facts: dict[str, object], message: str) -> None:
    with pytest.raises(EmulationError, match=message):
        build_declared(_backend(FACTS), 1, facts)


def test_a_vendor_package_that_is_the_device_module() -> None:
    decl = Emulation(facts={"device_name": "M", "version": "1.0"}, package_is_device_module=True)
    stand = build_declared(_backend(decl), 1)
    assert stand.package is stand.device_module
    assert stand.package.__spec__.name == "torch_kpdecl"
    assert stand.package.__version__ == "1.0"


STACK = Emulation(
    facts={"device_name": "S", "version": None, "rt": "0.0.7", "rt_tools": None},
    torch_backends=("kpdecl", "kpdecl_dnn"),
    distributions={"kpdecl-rt": "rt", "kpdecl-tools": "rt_tools"},
)


def test_declared_torch_backends_and_distributions(tmp_path: Path) -> None:
    """torch.backends modules marked emulated; metadata of each distribution with a version."""
    from importlib import metadata

    stand = build_declared(_backend(STACK), 1, workdir=tmp_path)
    assert sorted(stand.backends) == ["kpdecl", "kpdecl_dnn"]
    assert stand.backends["kpdecl"].__name__ == "torch.backends.kpdecl"
    assert all(m.__kernel_plugins_emulated__ is True for m in stand.backends.values())
    assert not hasattr(stand.device_module.get_device_properties(0), "rt")
    assert stand.site is not None and stand.site.parent == tmp_path
    assert [p.name for p in stand.site.iterdir()] == ["kpdecl_rt-0.0.7.dist-info"]  # None: absent
    dist = metadata.PathDistribution(stand.site / "kpdecl_rt-0.0.7.dist-info")
    assert (dist.metadata["Name"], dist.version) == ("kpdecl-rt", "0.0.7")
    assert build_declared(_backend(FACTS), 1).site is None


@pytest.mark.parametrize("version", ["../0.0.7", "0.0.7/x", "", " 0.1"])
def test_a_distribution_version_cannot_name_another_folder(tmp_path: Path, version: str) -> None:
    with pytest.raises(EmulationError, match="is not a version"):
        build_declared(_backend(STACK), 1, {"rt": version}, workdir=tmp_path)
    assert not any(tmp_path.rglob("METADATA"))


def test_installed_stand_ins_set_torch_backends_and_sys_path(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from importlib import metadata

    from kernel_plugins_testing.stand_ins import install_stand_ins

    monkeypatch.setattr(torch, "kpdecl", make_device_module("kpdecl", 1), raising=False)
    monkeypatch.setattr(sys, "path", list(sys.path))
    monkeypatch.setitem(sys.modules, "torch_kpdecl", None)  # removed again after the test
    monkeypatch.delattr(torch.backends, "kpdecl", raising=False)
    monkeypatch.delattr(torch.backends, "kpdecl_dnn", raising=False)
    try:
        assert install_stand_ins("kpdecl", "torch_kpdecl",
                                 lambda m: build_declared(_backend(STACK), 1, device_module=m))
        assert torch.backends.kpdecl.__kernel_plugins_emulated__ is True
        assert metadata.version("kpdecl-rt") == "0.0.7"
    finally:
        for name in ("kpdecl", "kpdecl_dnn"):
            if hasattr(torch.backends, name):
                delattr(torch.backends, name)


def test_without_declared_facts_there_is_nothing_to_build() -> None:
    with pytest.raises(EmulationError, match="declares no emulation facts"):
        build_declared(_backend(None), 1)


def test_installing_needs_the_emulated_device(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delattr(torch, "kpdecl", raising=False)
    with pytest.raises(EmulationError, match=r"emulate\('kpdecl'\)"):
        install_declared(_backend(FACTS), 1, {})
    plain = types.ModuleType("kpdecl")  # a torch.<type> that is not an emulated module
    monkeypatch.setattr(torch, "kpdecl", plain, raising=False)
    with pytest.raises(EmulationError, match="not an emulated module"):
        install_declared(_backend(FACTS), 1, {})


# -- the core imports it only when emulation is asked for -------------------------------

_CLI = """
import contextlib, io, sys
{block}
from kernel_plugins.cli.main import main
err = io.StringIO()
with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
    code = main({argv!r})
print(code, sorted(m for m in sys.modules if m.startswith("kernel_plugins_testing")))
print(err.getvalue())
"""


def _cli(argv: list[str], *, hide_testing: bool = False) -> list[str]:
    block = 'sys.modules["kernel_plugins_testing"] = None' if hide_testing else ""
    proc = subprocess.run(
        [sys.executable, "-c", _CLI.format(block=block, argv=argv)],
        capture_output=True, text=True, timeout=120, check=False,
        env={"PATH": "/usr/bin:/bin", "TORCH_DEVICE_BACKEND_AUTOLOAD": "0"},
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.splitlines()


def test_the_core_runs_without_importing_the_testing_distribution() -> None:
    first, *_ = _cli(["list-backends"])
    assert first == "0 []"


def test_emulate_without_the_testing_distribution_says_what_to_install() -> None:
    first, *err = _cli(["--emulate", "mlu", "list-backends"], hide_testing=True)
    assert not first.startswith("0 ")
    assert "pip install kernel-plugins-testing" in "\n".join(err)


def test_emulate_with_it_reports_the_device_as_emulated() -> None:
    first, *err = _cli(["--emulate", "npu", "list-backends"])
    assert first.startswith("0 ") and "'kernel_plugins_testing'" in first
    assert "EMULATED" in "\n".join(err)
