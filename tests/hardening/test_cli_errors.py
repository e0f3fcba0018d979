"""The command line: ``check`` output and exit status; bad input never shows a traceback."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kernel_plugins.cli.main import main

from ._support import make_repo, metadata

pytestmark = pytest.mark.usefixtures("builtin_manager")


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_check_clean_repository(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    repo = make_repo(tmp_path / "relu", {"torch-cpu": metadata()})
    code, out, err = run(capsys, "check", str(repo))
    assert code == 0 and err == ""
    assert out.strip() == f"ok: no problems in {repo} (1 variant(s))"


def test_check_prints_one_line_per_problem(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = make_repo(tmp_path / "relu", {
        "torch-cpu": metadata(version="1", python_depends=["nki"]),
        "torch-cuda": metadata(backend={"type": "rocm"}),
    })
    code, out, _ = run(capsys, "check", str(repo))
    lines = out.strip().splitlines()
    assert code == 1
    assert lines[0] == (
        "build/torch-cpu/metadata.json: version: Input should be a valid integer (got '1') "
        "(fix: rebuild the variant with the kernel builder, or set 'version' in metadata.json)"
    )
    assert lines[1].startswith("build/torch-cuda/metadata.json: backend.type: variant torch-cuda")
    assert "(fix: set backend.type to 'cuda'" in lines[1]
    assert lines[-1] == f"2 problem(s) in {repo} (2 variant(s))"


def test_check_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    repo = make_repo(tmp_path / "relu", {"torch-cpu": metadata(id="a/b")})
    code, out, _ = run(capsys, "check", str(repo), "--json")
    data = json.loads(out)
    assert code == 1 and data["ok"] is False
    assert data["problems"][0]["file"] == "build/torch-cpu/metadata.json"
    assert data["problems"][0]["key"] == "id"
    assert {"file", "key", "message", "fix"} == set(data["problems"][0])


def test_check_notes_are_printed_but_do_not_fail(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = make_repo(tmp_path / "relu", {"torch-universal": metadata(backend={"type": "cpu"})},
                     build_toml=None)
    code, out, _ = run(capsys, "check", str(repo))
    assert code == 0
    assert "note: no build.toml: only build/ was checked" in out
    assert "note: build/torch-universal: torch-universal is deprecated" in out


BAD_COMMANDS = [
    (["check", "/does/not/exist"], "does not exist"),
    (["check", "org/na me"], "Invalid repository id 'org/na me'"),
    (["check", "org/name", "--revision", "../main"], "must not contain '..'"),
    (["check", "org/name", "--version", "0"], "Invalid version 0"),
    (["check", "org/name", "--version", "-3"], "Invalid version -3"),
    (["variants", "org/name", "--device", "mlu:x"], "invalid device string 'mlu:x'"),
    (["variants", "org/name", "--device", "cuda:-1"], "invalid device string 'cuda:-1'"),
    (["variants", "org/name", "--device", "qpu"], "unknown device type 'qpu'"),
    (["variants", "org/name", "--device", "mlu"], "pip install kernel-plugins-mlu"),
    (["variants", "org/name", "--device", "cpu:7"], "cpu:7 requested, but cpu has 1 device(s)"),
    (["variants", "org/name", "--device", "cpu", "--version", "0"], "Invalid version 0"),
]


@pytest.mark.parametrize(("argv", "fragment"), BAD_COMMANDS, ids=lambda v: " ".join(v)
                         if isinstance(v, list) else None)
def test_bad_input_exits_1_without_traceback(
    capsys: pytest.CaptureFixture[str], argv: list[str], fragment: str
) -> None:
    code, out, err = run(capsys, *argv)
    assert code == 1
    assert err.startswith("error: ") and fragment in err
    assert "Traceback" not in err + out


def test_debug_shows_the_traceback(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "--debug", "check", "org/name", "--version", "0")
    assert code == 1 and "Traceback (most recent call last)" in err
    assert "RevisionError: Invalid version 0" in err


def test_malformed_local_kernels_is_a_clean_error(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LOCAL_KERNELS", "garbage-without-equals")
    code, _, err = run(capsys, "check", "acme/relu")
    assert code == 1 and "LOCAL_KERNELS entry 'garbage-without-equals' is malformed" in err
    assert "Traceback" not in err
