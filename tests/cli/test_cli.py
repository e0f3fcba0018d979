"""The command line: list-backends, variants, load, with --json, exit codes, no tracebacks."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from kernel_plugins_testing import run_module_forked

from kernel_plugins.cli import main
from tests.support.kernels import make_repo

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "relu"


def run_cli(*args, env=None):
    """``python -m kernel_plugins.cli.main *args`` (forked from a process that imported torch)."""
    return run_module_forked("kernel_plugins.cli.main", *args, env=env)


def test_list_backends_table_shows_five_builtins(manager, capsys):
    assert main(["list-backends"]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert lines[0].split()[:3] == ["backend", "distribution", "status"]
    for name in ("cpu", "cuda", "rocm", "xpu", "metal"):
        assert any(line.startswith(name + " ") for line in lines), name
    cpu = next(line for line in lines if line.startswith("cpu "))
    assert "available" in cpu and "torch-stable-abi" in cpu


def test_list_backends_json(manager, capsys):
    assert main(["list-backends", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    rows = {r["name"]: r for r in data["backends"]}
    assert set(rows) >= {"cpu", "cuda", "rocm", "xpu", "metal"}
    assert rows["cpu"]["status"] == "available" and rows["cpu"]["count"] == 1
    assert rows["cpu"]["variants"][-2:] == ["torch-cpu", "torch-universal"]
    assert rows["cuda"]["status"] == "no device" and rows["cuda"]["variants"] == []
    assert rows["metal"]["device_type"] == "mps"
    assert data["system"]["torch_version"] is not None


def test_variants_json_trace(manager, capsys, tmp_path):
    make_repo(tmp_path / "r", ["torch-cpu", "torch-cuda", "torch-universal"])
    assert main(["variants", str(tmp_path / "r"), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["best"] == "torch-cpu"
    assert data["accepted"] == ["torch-cpu", "torch-universal"]
    rejected = [d for d in data["decisions"] if not d["accepted"]]
    assert rejected == [{"variant": "torch-cuda", "accepted": False,
                         "reason": "noarch variant for backend 'cuda'; the device is 'cpu' (backend 'cpu', noarch name torch-cpu)"}]


def test_variants_exit_1_when_nothing_fits(manager, capsys, tmp_path):
    make_repo(tmp_path / "r", ["torch-cuda"])
    assert main(["variants", str(tmp_path / "r")]) == 1
    out = capsys.readouterr().out
    assert "chosen: none" in out and "torch-cuda" in out


def test_load_example_json(manager, capsys):
    assert main(["load", str(EXAMPLE), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["provenance"]["variant"] == "torch-cpu"
    assert data["provenance"]["emulated"] is False
    assert {"name": "relu", "signature": "(out: torch.Tensor, x: torch.Tensor) -> torch.Tensor"} in data["functions"]


def test_errors_have_no_traceback_unless_debug(tmp_path):
    r = run_cli("load", str(tmp_path / "missing"))
    assert r.returncode == 1
    assert r.stderr.strip().splitlines()[-1].startswith("error: local kernel path")
    assert "Traceback" not in r.stderr
    r = run_cli("--debug", "load", str(tmp_path / "missing"))
    assert r.returncode == 1 and "Traceback" in r.stderr


def test_unknown_device_lists_backends(tmp_path):
    r = run_cli("load", str(EXAMPLE), "--device", "foo", env={"KERNEL_PLUGINS_LOAD": ""})
    assert r.returncode == 2  # a value of the command line that names nothing installed
    assert "unknown device type 'foo'" in r.stderr and "Installed backends: cpu" in r.stderr
    assert "Traceback" not in r.stderr


@pytest.mark.parametrize("argv", [["variants"], ["load", "x", "--version", "abc"], ["nope"]])
def test_usage_errors_exit_2(argv):
    r = run_cli(*argv)
    assert r.returncode == 2 and "usage:" in r.stderr


def test_load_lists_the_kernels_own_functions_as_info_does(manager, capsys, tmp_path):
    code = ("from os.path import join\nfrom math import floor\n\n"
            "def scale(x, k: int = 2):\n    return x * k\n")
    plain = make_repo(tmp_path / "plain", ["torch-cpu"], code=code)  # no __all__
    listed = make_repo(tmp_path / "listed", ["torch-cpu"], code=code + "__all__ = ['scale', 'floor']\n")
    for repo, want in ((plain, ["scale"]), (listed, ["floor", "scale"])):
        assert main(["load", str(repo), "--json"]) == 0
        names = [f["name"] for f in json.loads(capsys.readouterr().out)["functions"]]
        assert names == want  # imported names (join, floor) only when __all__ exports them
        assert main(["info", str(repo), "--json"]) == 0
        assert json.loads(capsys.readouterr().out)["functions"] == want


def test_info_counts_functions_not_submodules_or_the_ops_namespace(capsys):
    from kernel_plugins.reference import reference_repo

    assert main(["info", str(EXAMPLE), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["functions"] == ["relu"] and doc["layers"] == ["ReLU"]  # __all__: relu, layers
    assert main(["info", str(reference_repo("rmsnorm")), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["functions"] == ["apply_rms_norm", "apply_rms_norm_backward"]


def test_bash_completion_is_valid_bash_and_completes_the_real_commands(capsys, tmp_path):
    import argparse

    from kernel_plugins.cli.main import build_parser

    assert main(["completion", "bash"]) == 0
    script = capsys.readouterr().out
    probe = script + (
        'complete -p kernel-plugins\n'
        'line() { COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); _kernel_plugins; echo "${COMPREPLY[*]}"; }\n'
        'line kernel-plugins ""\n'
        'line kernel-plugins --emulate mlu verify-signature --filter\n'  # --emulate takes a value
        'line kernel-plugins -v benchmark --scr\n'
        'line kernel-plugins check --revision ma\n'  # a value: file names only
        'line kernel-plugins completion z\n'
        'line kernel-plugins load exa\n'
    )
    (tmp_path / "example").mkdir()
    done = subprocess.run(["bash", "-c", probe], capture_output=True, text=True, cwd=tmp_path,
                          timeout=60, check=False)
    assert done.returncode == 0 and done.stderr == "", done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "complete -o filenames -F _kernel_plugins kernel-plugins"
    commands = set(next(a for a in build_parser()._actions
                        if isinstance(a, argparse._SubParsersAction)).choices)
    assert {"load", "verify-signature", "benchmark", "completion", "info"} <= commands
    assert commands | {"--help", "--version", "--debug", "--verbose", "-v", "--emulate", "--json"} == set(
        lines[1].split())
    assert lines[2:] == ["--filter-unsigned --filter-no-digest", "--scripts", "", "zsh", "example"]
    assert main(["completion", "zsh"]) == 0
    zsh = capsys.readouterr().out
    assert zsh.startswith("autoload -U +X bashcompinit && bashcompinit\n") and zsh.endswith(script)
