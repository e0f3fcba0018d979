"""The command line: ``check`` output and exit status; bad input never shows a traceback."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from kernel_plugins_testing import run_module_forked

from kernel_plugins.cli.main import main
from tests.support.inputs import make_repo, metadata
from tests.support.threads import loopback_server

pytestmark = pytest.mark.usefixtures("manager")


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_check_clean_repository(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    repo = make_repo(tmp_path / "relu", {"torch-cpu": metadata()})
    code, out, err = run(capsys, "check", str(repo))
    assert code == 0 and err == ""
    assert out.strip().splitlines() == [  # make_repo writes an edition-5 build.toml
        "note: build.toml is in edition 5, which kernels 0.19.1 still reads by upgrading it to "
        "edition 6 in memory (kernel-builder's Nix builder needs edition 6); `kernel-builder "
        "update-build` migrates it", f"ok: no problems in {repo} (1 variant(s))"]


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
    (["variants", "org/name", "--device", "cpu:7"], "cpu:7 requested, but cpu has 1 device(s)"),
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


@pytest.mark.parametrize("argv", [["check", "org/name", "--version", "0"],
                                  ["check", "org/name", "--version", "-3"],
                                  ["variants", "org/name", "--device", "cpu", "--version", "0"],
                                  ["download", "org/name", "--version", "0"]])
def test_a_version_out_of_range_is_a_usage_error(
    capsys: pytest.CaptureFixture[str], argv: list[str]
) -> None:
    code, out, err = run(capsys, *argv)
    assert code == 2  # docs/errors.md: a value out of range is a usage error
    assert f"error: argument --version: '{argv[-1]}' is out of range: give a whole number from 1" in err
    assert "Traceback" not in err + out


BAD_DEVICES = [
    (["variants", "org/name", "--device", "mlu:x"], "invalid device string 'mlu:x'"),
    (["variants", "org/name", "--device", "cuda:-1"], "invalid device string 'cuda:-1'"),
    (["variants", "org/name", "--device", "qpu"], "unknown device type 'qpu'"),
    (["variants", "org/name", "--device", "cpux"], "did you mean 'cpu'?"),
    (["variants", "org/name", "--device", "mlu"], "pip install kernel-plugins-mlu (from a "
                                                   "checkout: pip install ./plugins/mlu)"),
]


@pytest.mark.parametrize(("argv", "fragment"), BAD_DEVICES, ids=lambda v: " ".join(v)
                         if isinstance(v, list) else None)
def test_a_device_that_names_nothing_installed_is_a_usage_error(
    capsys: pytest.CaptureFixture[str], argv: list[str], fragment: str
) -> None:
    code, out, err = run(capsys, *argv)
    assert code == 2, err  # docs/errors.md: a misspelt --device is a usage error
    assert err.startswith("usage: ") and "error: --device: " in err and fragment in err
    assert "Traceback" not in err + out


def test_debug_shows_the_traceback(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "--debug", "check", "org/name", "--revision", "../main")
    assert code == 1 and "Traceback (most recent call last)" in err
    assert "RevisionError: Invalid revision '../main'" in err


def test_malformed_local_kernels_is_a_clean_error(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LOCAL_KERNELS", "garbage-without-equals")
    code, _, err = run(capsys, "check", "acme/relu")
    assert code == 1 and "LOCAL_KERNELS entry 'garbage-without-equals' is malformed" in err
    assert "Traceback" not in err


# -- issue 21 and issue 20: what the command line says is true where it is shown --------

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "relu"


def _cli(*argv: str, env: dict[str, str] | None = None, timeout: float = 300,
         **streams: Any) -> subprocess.CompletedProcess[str]:
    if not streams:  # forked from a process that imported torch
        return run_module_forked("kernel_plugins.cli", *argv, env=env, timeout=timeout)
    return subprocess.run([sys.executable, "-m", "kernel_plugins.cli", *argv], text=True,
                          env={**os.environ, **(env or {})}, timeout=timeout, check=False,
                          **streams)


def _silent_hub() -> contextlib.AbstractContextManager[str]:
    """A loopback server that accepts connections and never answers (some proxies and
    firewalls); it stops itself when the block ends."""
    return loopback_server(lambda conn, stop: None)


def test_a_hub_that_never_answers_ends_in_the_error_or_the_fallback(tmp_path: Path) -> None:
    with _silent_hub() as endpoint:
        env = {"HF_ENDPOINT": endpoint, "HF_HOME": str(tmp_path / "hf"), "HF_HUB_OFFLINE": "0",
               "HF_HUB_ETAG_TIMEOUT": "1", "HF_HUB_DOWNLOAD_TIMEOUT": "1",
               "KERNEL_PLUGINS_REFERENCE_CACHE": str(tmp_path / "reference"),
               # no user-agent telemetry: its look-up of the agent registry on this Hub
               # would wait 3 s more per process, and is not the request under test
               "HF_HUB_DISABLE_TELEMETRY": "1"}
        # without timeouts each of these waits forever: the subprocess timeout fails it
        failed = _cli("load", "acme/never-answers", "--trust-remote-code", env=env, timeout=120)
        served = _cli("load", "activation", "--json", env=env, timeout=120)
    assert failed.returncode == 1 and "Traceback" not in failed.stderr
    assert failed.stderr.startswith("error: ") and "timed out" in failed.stderr, failed.stderr
    assert served.returncode == 0, served.stderr
    assert json.loads(served.stdout)["provenance"]["source"] == "reference"
    assert "the Hub could not be reached" in served.stderr


def test_a_typo_of_a_trusted_organisation_is_not_advised_to_be_trusted(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("KERNEL_PLUGINS_TRUSTED_ORGS", raising=False)
    code, out, err = run(capsys, "load", "kernels-comunity/activation")
    assert code == 1 and "Traceback" not in err
    assert err.startswith("error: ") and "did you mean 'kernels-community'" in err
    assert "--trust-remote-code" not in err and "KERNEL_PLUGINS_TRUSTED_ORGS" not in err
    code, out, err = run(capsys, "load", "acme/activation")  # not a look-alike: the advice
    assert code == 1 and "did you mean" not in err
    assert "--trust-remote-code" in err and "KERNEL_PLUGINS_TRUSTED_ORGS=acme" in err


@pytest.mark.parametrize("url", [
    "https://huggingface.co/kernels-community/activation/tree/main",
    "https://huggingface.co/kernels-community/activation/blob/main/build/torch-cpu/x.py",
])
def test_a_hub_page_address_names_the_repository_and_its_revision(
    capsys: pytest.CaptureFixture[str], url: str
) -> None:
    code, out, err = run(capsys, "load", url)
    assert code == 1 and "Traceback" not in err
    assert "pass 'kernels-community/activation' with --revision main instead" in err
    assert "local" not in err  # not taken for a folder


def test_a_hub_repository_address_is_the_repository() -> None:
    from kernel_plugins.errors import RepoIdError
    from kernel_plugins.sources import parse_name

    for url in ("https://huggingface.co/kernels-community/activation",
                "https://hf.co/kernels-community/activation/"):
        assert parse_name(url).repo_id == "kernels-community/activation"
    with pytest.raises(RepoIdError, match="not the address of a Hub repository"):
        parse_name("https://github.com/kernels-community/activation")


def test_no_device_names_emulation_as_the_next_step(
    capsys: pytest.CaptureFixture[str], manager: Any
) -> None:
    from tests.support.fakes import fake_backend

    manager.register(fake_backend("acme", detect=lambda: None), name="acme")
    code, _, err = run(capsys, "load", str(EXAMPLE), "--device", "acme")
    assert code == 1 and err.startswith("error: no 'acme' device is available")
    assert "kernel-plugins --emulate acme" in err and "pip install kernel-plugins-testing" in err


PRINTS_AT_IMPORT = "import sys\nprint('hello from the kernel')\nsys.stdout.write('more\\n')\n" \
    "def relu(out, x):\n    return out.copy_(x.clamp_min(0))\n"


@pytest.mark.parametrize("command", [["load"], ["benchmark", "--iterations", "1", "--warmup",
                                                 "0", "--shapes", "4x4", "--no-progress"]])
def test_json_stdout_is_one_document_when_a_kernel_prints(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, command: list[str]
) -> None:
    repo = make_repo(tmp_path / "noisy", {"torch-cpu": metadata(id=f"_noisy_{command[0]}_0a1b2c")})
    (repo / "build" / "torch-cpu" / "__init__.py").write_text(
        PRINTS_AT_IMPORT + "__benchmark__ = {'functions': {'relu': {'inputs': 'unary', "
        "'reference': lambda out, x: out.copy_(x.relu())}}}\n", encoding="utf-8")
    code, out, err = run(capsys, command[0], str(repo), "--json", *command[1:])
    assert code == 0, err
    json.loads(out)  # exactly one document
    assert "hello from the kernel" in err and "more" in err


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
@pytest.mark.parametrize("argv", [["list-backends", "--json"], ["load", str(EXAMPLE), "--json"],
                                  ["list-backends"]])
def test_a_full_disk_on_stdout_is_one_error_line(argv: list[str]) -> None:
    with open("/dev/full", "w") as full:
        proc = _cli(*argv, stdout=full, stderr=subprocess.PIPE)
    assert proc.returncode == 1
    lines = proc.stderr.splitlines()
    assert "Traceback" not in proc.stderr and "Exception ignored" not in proc.stderr
    assert len(lines) == 1 and lines[0].startswith("error: ") and "No space left" in lines[0]


def test_other_libraries_info_logs_are_quiet_and_their_warnings_are_not() -> None:
    script = (
        "import logging, sys\n"
        "from kernel_plugins.cli import list_backends\n"
        "def run(args):\n"
        "    logging.getLogger('httpx2').info('HTTP Request: GET https://example')\n"
        "    logging.getLogger('any.library.at.all').info('chatter')\n"
        "    logging.getLogger('any.library.at.all').warning('a real problem')\n"
        "    logging.getLogger('kernel_plugins.hub').info('ours')\n"
        "    return 0\n"
        "list_backends.run = run\n"
        "from kernel_plugins.cli.main import main\n"
        "sys.exit(main(sys.argv[1:]))\n"
    )
    plain = subprocess.run([sys.executable, "-c", script, "list-backends"], text=True,
                           capture_output=True, timeout=300, check=False)
    assert plain.returncode == 0, plain.stderr
    assert "HTTP Request" not in plain.stderr and "chatter" not in plain.stderr
    assert "warning: a real problem" in plain.stderr and "ours" not in plain.stderr
    verbose = subprocess.run([sys.executable, "-c", script, "list-backends", "-v"], text=True,
                             capture_output=True, timeout=300, check=False)
    assert "info: ours" in verbose.stderr and "chatter" not in verbose.stderr  # ours only
    debug = subprocess.run([sys.executable, "-c", script, "--debug", "list-backends"], text=True,
                           capture_output=True, timeout=300, check=False)
    assert "HTTP Request" in debug.stderr  # --debug shows everything


def test_an_interrupted_json_command_prints_the_error_document(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from kernel_plugins.cli import list_backends

    def interrupted(args: object) -> int:
        raise KeyboardInterrupt

    monkeypatch.setattr(list_backends, "run", interrupted)
    code, out, err = run(capsys, "list-backends", "--json")
    assert code == 130 and err == ""
    assert json.loads(out) == {"error": {"type": "KeyboardInterrupt", "message": "interrupted (Ctrl-C)",
                                         "exit_status": 130}}
    code, out, err = run(capsys, "list-backends")
    assert (code, out, err) == (130, "", "error: interrupted (Ctrl-C)\n")
