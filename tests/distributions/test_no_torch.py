"""Installing kernel-plugins never installs, upgrades or replaces torch (issue 27, section 1).

The wheels of this checkout are installed with their dependencies into a fresh virtual
environment without torch (``no_torch_venv``), as a user would. There ``import
kernel_plugins``, the help, ``list-backends`` and every command that only talks to the Hub
work (against the loopback Hub), and a load says how to install torch. A second
environment holds the metadata of a vendor's torch 2.4: pip, asked what installing the
core and a plugin would do, leaves it alone.
"""

from __future__ import annotations

import json
import sys
import sysconfig
from pathlib import Path

import pytest

from tests.lock.conftest import cpu_variant
from tests.support.hub import HubServer, make_kernel_repo

from .conftest import BACKENDS, core_and_mlu, run

pytestmark = pytest.mark.plugin_install


def installed(venv: Path) -> dict[str, str]:
    """Distribution name -> version of everything installed in ``venv``."""
    proc = run([sys.executable, "-m", "pip", "--python", venv / "bin" / "python", "list",
                "--format", "json"])
    assert proc.returncode == 0, proc.stderr
    return {d["name"].lower().replace("_", "-"): d["version"] for d in json.loads(proc.stdout)}


def test_the_wheels_require_torch_only_through_the_extra(wheels: dict[str, Path]) -> None:
    import zipfile

    for wheel in wheels.values():
        with zipfile.ZipFile(wheel) as z:
            name = next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))
            requires = [line for line in z.read(name).decode().splitlines()
                        if line.startswith("Requires-Dist:") and "torch" in line]
        expected = ["Requires-Dist: torch<3,>=2.5; extra == 'torch'"] if "plugins-0" in wheel.name else []
        assert requires == expected, wheel.name


def test_no_distribution_of_the_project_requires_torch_tools_included() -> None:
    """Every distribution of this checkout (the core, the backend plugins and the tools
    ``testing``, ``check``, ``benchmark``) names torch only in the core's ``torch`` extra; the
    wheels' requirements are these static lists."""
    import tomllib
    from packaging.requirements import Requirement

    root = Path(__file__).resolve().parents[2]
    projects = [root / "pyproject.toml", *sorted(root.glob("plugins/*/pyproject.toml"))]
    found = {}
    for path in projects:
        project = tomllib.loads(path.read_text())["project"]
        assert "dependencies" not in project.get("dynamic", []), path
        lists = {"": project.get("dependencies", []), **project.get("optional-dependencies", {})}
        found[path.parent.name] = {extra: [r for r in reqs if Requirement(r).name.lower() == "torch"]
                                   for extra, reqs in lists.items() if extra not in ("test", "docs")}
    assert {"testing", "check", "benchmark", "mlu"} <= set(found)
    assert {name: sorted(e for e, r in extras.items() if r) for name, extras in found.items()} == {
        name: ["torch"] if name == root.name else [] for name in found}


def test_installing_the_core_and_a_plugin_brings_no_torch(no_torch_venv: Path) -> None:
    names = installed(no_torch_venv)
    assert {"kernel-plugins", "pluggy", "huggingface-hub"} <= set(names)
    assert {f"kernel-plugins-{b}" for b in BACKENDS} <= set(names)
    assert not [n for n in names if n == "torch" or n.startswith(("nvidia-", "triton"))], names


def test_an_installed_torch_of_another_version_is_kept(
    wheels: dict[str, Path], tmp_path: Path
) -> None:
    venv = tmp_path / "vendor"
    assert run([sys.executable, "-m", "venv", "--without-pip", venv]).returncode == 0
    purelib = run([venv / "bin" / "python", "-c",
                   "import sysconfig; print(sysconfig.get_paths()['purelib'])"]).stdout.strip()
    info = Path(purelib) / "torch-2.4.0.dist-info"  # what a vendor stack's torch 2.4 leaves
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: torch\nVersion: 2.4.0\n")
    (info / "RECORD").write_text("")
    assert installed(venv)["torch"] == "2.4.0"

    def would_install(*targets: object) -> dict[str, str]:
        proc = run([sys.executable, "-m", "pip", "--python", venv / "bin" / "python", "install",
                    "--dry-run", "--quiet", "--report", "-", *targets])
        assert proc.returncode == 0, proc.stderr
        return {i["metadata"]["name"].lower(): i["metadata"]["version"]
                for i in json.loads(proc.stdout)["install"]}

    # a requirement of torch >= 2.5 anywhere would have pip replace this torch 2.4
    plan = would_install(*core_and_mlu(wheels))
    assert {"kernel-plugins", "kernel-plugins-mlu"} <= set(plan) and "torch" not in plan


def kp(venv: Path, *argv: str, **kwargs: object) -> tuple[int, str, str]:
    proc = run([venv / "bin" / "kernel-plugins", *argv], **kwargs)
    assert "Traceback" not in proc.stdout + proc.stderr, proc.stderr
    return proc.returncode, proc.stdout, proc.stderr


def test_without_torch_the_package_imports_and_the_local_commands_work(
    no_torch_venv: Path, tmp_path: Path
) -> None:
    proc = run([no_torch_venv / "bin" / "python", "-c",
                "import sys, kernel_plugins; import kernel_plugins.cli.main;"
                "print(kernel_plugins.__version__, 'torch' in sys.modules)"])
    assert proc.stdout.split() == ["0.1.0", "False"], proc.stderr
    assert kp(no_torch_venv, "--version")[:2] == (0, "kernel-plugins 0.1.0\n")
    code, out, _ = kp(no_torch_venv, "--help")
    assert code == 0 and "list-backends" in out and "download" in out
    code, out, _ = kp(no_torch_venv, "list-backends", "--wide", cwd=tmp_path)
    assert code == 0
    for backend in BACKENDS:  # each plugin's hooks answer without torch
        assert f"{backend}: no device: torch is not installed" in out
    assert "note: loading a kernel needs torch (torch >= 2.5, < 3), which is not installed" in out
    code, out, _ = kp(no_torch_venv, "list-backends", "--json", cwd=tmp_path)
    assert json.loads(out)["torch_problem"].startswith("loading a kernel needs torch")


def test_a_torch_that_cannot_be_imported_is_named_with_its_error(no_torch_venv: Path, tmp_path: Path) -> None:
    """A torch whose import fails (a missing ``libcudnn.so.9``) is reported as the missing torch
    is: the table, each backend's reason, and the load's advice, all with torch's own error."""
    broken = tmp_path / "site" / "torch"
    broken.mkdir(parents=True)
    cause = "libcudnn.so.9: cannot open shared object file: No such file or directory"
    (broken / "__init__.py").write_text(f"raise ImportError({cause!r})\n")
    env = {"PYTHONPATH": str(broken.parent)}
    code, out, _ = kp(no_torch_venv, "list-backends", "--wide", cwd=tmp_path, env=env)
    assert code == 0 and "backend" in out.splitlines()[0]  # the table, not an error
    for backend in ("cuda", *BACKENDS):
        assert f"{backend}: no device: the installed torch cannot be imported (ImportError: {cause})" in out
    example = Path(__file__).resolve().parents[2] / "examples" / "relu"
    code, out, err = kp(no_torch_venv, "load", str(example), cwd=tmp_path, env=env)
    assert code == 1 and f"the installed torch cannot be imported (ImportError: {cause}): reinstall it" in err
    assert "no device found" not in err


def test_without_torch_the_hub_commands_work_and_a_load_says_how_to_install_torch(
    no_torch_venv: Path, hub_env: HubServer, hf_cache: Path, tmp_path: Path
) -> None:
    repo_id = "kernels-community/no-torch"
    make_kernel_repo(hub_env, repo_id, variants={"torch-cpu": cpu_variant("_no_torch_v1", 1)})
    project = tmp_path / "project"
    project.mkdir()
    (project / "pyproject.toml").write_text(
        f'[project]\nname = "demo"\n\n[tool.kernels.dependencies]\n"{repo_id}" = 1\n')

    def ok(*argv: str) -> str:
        code, out, err = kp(no_torch_venv, *argv, cwd=tmp_path)
        assert code == 0, (argv, out, err)
        return out

    assert "v1" in ok("versions", repo_id)
    assert "torch-cpu" in ok("info", repo_id, "--version", "1")
    ok("lock", str(project))
    assert "0 failed" in ok("download", str(project))
    assert f"{repo_id} torch-cpu: OK" in ok("verify", str(project))
    assert "torch-cpu: OK" in ok("download", repo_id, "--version", "1")
    code, out, err = kp(no_torch_venv, "verify-signature", repo_id, "--version", "1", cwd=tmp_path)
    assert code == 1 and "torch-cpu" in out + err and "unsigned" in out + err  # a verdict, no crash

    code, out, err = kp(no_torch_venv, "load", repo_id, "--version", "1", cwd=tmp_path)
    assert code == 1 and out == ""
    assert err.startswith("error: loading a kernel needs torch (torch >= 2.5, < 3), which is not "
                          "installed: install the torch build for your device first")
    assert "pip install torch --index-url https://download.pytorch.org/whl/cpu" in err


def test_the_no_torch_environment_really_has_no_torch(no_torch_venv: Path) -> None:
    proc = run([no_torch_venv / "bin" / "python", "-c", "import torch"])
    assert proc.returncode == 1 and "No module named 'torch'" in proc.stderr
    assert not Path(sysconfig.get_paths()["purelib"]).is_relative_to(no_torch_venv)
