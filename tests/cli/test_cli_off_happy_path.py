"""The command line off the happy path: every bad argument is a clean, helpful error."""

from __future__ import annotations

import json
import math
import os
import re
import subprocess
import sys
import types
import warnings
from pathlib import Path
from typing import Any

import pytest

from kernel_plugins import plugins
from kernel_plugins.cli import load_cmd
from kernel_plugins.cli.main import EXIT_STATUS, main
from kernel_plugins.device import DeviceInfo
from kernel_plugins.hookspecs import hookimpl
from kernel_plugins.importer import Provenance
from tests.support.fakes import fake_backend

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "relu"
LONG_PATH = "/tmp/" + "x" * 5000
LONG_NAME = "/tmp/" + "y" * 300 + "/repo"


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def clean_failure(code: int, out: str, err: str, status: int, *fragments: str) -> None:
    assert code == status, (code, out, err)
    assert "Traceback" not in out + err
    assert err.splitlines()[-1].startswith("error: "), err
    for fragment in fragments:
        assert fragment in err, err


PATH_COMMANDS = [["check"], ["lock"], ["download"], ["verify"], ["variants"], ["load"],
                 ["benchmark"]]


@pytest.mark.parametrize("command", PATH_COMMANDS, ids=lambda c: c[0])
@pytest.mark.parametrize(
    ("path", "fragment"),
    [
        (LONG_PATH, "the path is 5005 characters long; at most 4096"),
        (LONG_NAME, "a path component is 300 characters long"),
        ("~nouser_kp/x", "cannot expand '~nouser_kp': no user 'nouser_kp'"),
    ],
    ids=["5000-characters", "long-component", "unknown-user"],
)
def test_unusable_paths_are_usage_errors(
    manager: Any, capsys: pytest.CaptureFixture[str], command: list[str], path: str, fragment: str
) -> None:
    code, out, err = run(capsys, *command, path)
    clean_failure(code, out, err, 2, fragment)
    assert len(err.splitlines()[-1]) < 400, "the message repeats the whole path"


@pytest.mark.parametrize(
    ("option", "value", "fragment"),
    [
        ("--min-sample-ms", "inf", "'inf' is out of range: give a number from 0 to 60000"),
        ("--min-sample-ms", "nan", "'nan' is out of range"),
        ("--min-sample-ms", "1e308", "'1e308' is out of range"),
        ("--rtol", "nan", "argument --rtol: 'nan' is out of range: give a number from 0 to 1"),
        ("--atol", "-1", "argument --atol: '-1' is out of range"),
        ("--atol", "abc", "'abc' is not a number"),
        ("--iterations", "0", "'0' is out of range: give a whole number from 1 to 1000000"),
        ("--warmup", "-5", "'-5' is out of range"),
    ],
)
def test_benchmark_numbers_have_bounds(
    manager: Any, capsys: pytest.CaptureFixture[str], option: str, value: str, fragment: str
) -> None:
    code, out, err = run(capsys, "benchmark", str(EXAMPLE), option, value)
    clean_failure(code, out, err, 2, fragment)
    assert "usage: kernel-plugins benchmark" in err


def test_unexpected_os_errors_are_one_line(
    manager: Any, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    def boom(args: Any) -> int:
        raise OSError(36, "File name too long", "/tmp/" + "z" * 3000)

    monkeypatch.setattr(load_cmd, "run", boom)
    code, out, err = run(capsys, "load", "org/name")
    clean_failure(code, out, err, 1, "File name too long", " characters)...")
    assert len(err) < 300
    code, _, err = run(capsys, "--debug", "load", "org/name")
    assert code == 1 and "Traceback (most recent call last)" in err


# -- typos ----------------------------------------------------------------------------


def test_emulate_typo_is_an_error_with_a_suggestion(
    manager: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    manager.register(fake_backend("mlu"), name="mlu")
    code, out, err = run(capsys, "list-backends", "--emulate", "mlux")
    clean_failure(code, out, err, 2, "--emulate 'mlux': unknown device type 'mlux'",
                  "did you mean 'mlu'?")
    assert "EMULATED" not in out + err


def test_device_typo_gets_a_suggestion(manager: Any, capsys: pytest.CaptureFixture[str]) -> None:
    manager.register(fake_backend("mlu"), name="mlu")
    code, out, err = run(capsys, "variants", str(EXAMPLE), "--device", "mlux")
    clean_failure(code, out, err, 2, "unknown device type 'mlux'", "did you mean 'mlu'?")
    assert err.startswith("usage: kernel-plugins variants")


def test_command_typo_gets_a_suggestion(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "list-backend")
    clean_failure(code, out, err, 2, "invalid choice: 'list-backend'; did you mean 'list-backends'?")
    code, out, err = run(capsys, "zzzz")
    clean_failure(code, out, err, 2, "invalid choice: 'zzzz' (choose from")


def test_load_allowlist_typo_is_an_error(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import importlib.metadata

    entry = types.SimpleNamespace(name="mlu", group="kernel_plugins", dist=None,
                                  load=lambda: fake_backend("mlu"))
    monkeypatch.setattr(importlib.metadata, "entry_points",
                        lambda group=None: [entry] if group == "kernel_plugins" else [])
    monkeypatch.setenv("KERNEL_PLUGINS_LOAD", "mlux")
    old = plugins.reset_manager(plugins.PluginManager())
    try:
        code, out, err = run(capsys, "list-backends")
        clean_failure(code, out, err, 1, "KERNEL_PLUGINS_LOAD names 'mlux'", "did you mean 'mlu'?")
        monkeypatch.setenv("KERNEL_PLUGINS_LOAD", "mlu")
        plugins.reset_manager(plugins.PluginManager())
        assert run(capsys, "list-backends")[0] == 0
    finally:
        plugins.reset_manager(old)


# -- why there is no device -------------------------------------------------------------


def test_no_device_names_the_cause(manager: Any, capsys: pytest.CaptureFixture[str]) -> None:
    @hookimpl
    def explain_no_device() -> str:
        return "torch_fake is not installed"

    manager.register(
        fake_backend("fake", detect=lambda: None, extra_hooks={"explain_no_device": explain_no_device}),
        name="fake",
    )
    code, out, _ = run(capsys, "list-backends")
    assert code == 0 and "fake: no device: torch_fake is not installed" in out
    code, out, err = run(capsys, "variants", str(EXAMPLE), "--device", "fake")
    clean_failure(code, out, err, 1, "no 'fake' device is available", "torch_fake is not installed")


def test_builtin_backends_say_why(monkeypatch: pytest.MonkeyPatch) -> None:
    import torch

    from kernel_plugins.backends import cuda

    monkeypatch.setattr(torch.version, "cuda", None)
    assert "(torch.version.cuda is None); install a torch build for CUDA" in cuda.CUDA.explain_no_device()
    monkeypatch.setattr(torch.version, "cuda", "12.8")
    assert cuda.CUDA.explain_no_device() == (
        "the CUDA driver sees 0 devices (check nvidia-smi and CUDA_VISIBLE_DEVICES)"
    )


# -- warnings, notes, signatures ----------------------------------------------------------


def test_warnings_use_the_cli_style_and_spelling(
    manager: Any, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    def warn(args: Any) -> int:
        warnings.warn("no variant fits; pass fallback='error' or version=1 to change", UserWarning,
                      stacklevel=1)
        return 0

    monkeypatch.setattr(load_cmd, "run", warn)
    with warnings.catch_warnings():
        warnings.simplefilter("always")
        code, _, err = run(capsys, "load", "org/name")
    assert code == 0
    assert err.strip() == "warning: no variant fits; pass --no-fallback or --version 1 to change"


def test_notes_are_lines_not_list_reprs(
    manager: Any, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    module = types.ModuleType("k")
    module.__kernel_provenance__ = Provenance(  # type: ignore[attr-defined]
        source="reference", repo_id="org/k", variant="reference", backend="cpu",
        device_type="cpu", emulated=False, path="/p", module_name="k",
        notes=("reference fallback: no variant for mlu", "second note"),
    )
    import kernel_plugins.loader

    monkeypatch.setattr(kernel_plugins.loader, "load", lambda *a, **k: module)
    code, out, _ = run(capsys, "load", "org/k")
    assert code == 0
    assert "note: reference fallback: no variant for mlu\nnote: second note\n" in out
    assert "['" not in out


def _typed(out: "torch.Tensor", x: "torch.Tensor", scale: float = 1.0) -> "torch.Tensor":  # noqa: F821, UP037
    raise NotImplementedError


def test_signatures_print_the_same_for_string_and_type_annotations() -> None:
    import torch

    def real(out: torch.Tensor, x: torch.Tensor, scale: float = 1.0) -> torch.Tensor:
        raise NotImplementedError

    expected = "(out: torch.Tensor, x: torch.Tensor, scale: float = 1.0) -> torch.Tensor"
    assert load_cmd.signature_text(real) == expected
    assert load_cmd.signature_text(_typed) == expected


# -- safe and fitting output ------------------------------------------------------------


def _hostile_backend() -> types.ModuleType:
    def detect() -> DeviceInfo:
        return DeviceInfo(backend="evil", device_type="evil", count=1, name="\x1b[2JGPU",
                          runtime_version="1.0\x1b]0;pwned\x07",
                          notes=("\x1b[31mred\x1b[0m " + "long note " * 30,
                                 "safe \u202egnp.exe\u202c and \u2066isolated\u2069\u200b"))

    return fake_backend("evil", detect=detect)


def test_plugin_text_is_sanitised_and_fits_100_columns(
    manager: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    manager.register(_hostile_backend(), name="evil", distribution="kernel-plugins-evil" + "e" * 60)
    code, out, _ = run(capsys, "list-backends")
    assert code == 0 and "\x1b" not in out and "\x07" not in out
    assert "evil: note: red long note" in out
    assert not re.search("[\u202a-\u202e\u2066-\u2069\u200b]", out)  # no bidi reordering
    assert "safe \\u202egnp.exe\\u202c and \\u2066isolated\\u2069\\u200b" in out
    assert max(len(line) for line in out.splitlines()) <= 100
    code, wide, _ = run(capsys, "list-backends", "--wide")
    assert code == 0 and "\x1b" not in wide
    assert max(len(line) for line in wide.splitlines()) > 100
    assert "kernel-plugins-evil" + "e" * 60 in wide


def test_variant_reasons_wrap_instead_of_being_cut(
    manager: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run(capsys, "variants", str(EXAMPLE), "--device", "cpu")
    assert code == 0 and max(len(line) for line in out.splitlines()) <= 100
    joined = " ".join(line.strip() for line in out.splitlines())
    assert "noarch variant for backend 'cuda'; the device is 'cpu' (backend 'cpu', noarch name torch-cpu)" in joined
    assert "..." not in out


# -- conventions --------------------------------------------------------------------------


def test_version_and_help(capsys: pytest.CaptureFixture[str]) -> None:
    from kernel_plugins import __version__

    with pytest.raises(SystemExit) as exc:
        main(["--version"])
    assert exc.value.code == 0 and capsys.readouterr().out.strip() == f"kernel-plugins {__version__}"
    code, out, _ = run(capsys)
    assert code == 0 and out.startswith("usage: kernel-plugins") and "list-backends" in out


def test_debug_before_or_after_the_command(
    manager: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    for argv in (["--debug", "check", "org/name", "--revision", "../main"],
                 ["check", "org/name", "--revision", "../main", "--debug"]):
        code, _, err = run(capsys, *argv)
        assert code == 1 and "Traceback (most recent call last)" in err, argv


@pytest.mark.parametrize("before", [True, False], ids=["before", "after"])
def test_emulate_before_or_after_the_command(before: bool) -> None:
    args = ["--emulate", "cpu"]
    argv = [*args, "list-backends", "--json"] if before else ["list-backends", "--json", *args]
    proc = subprocess.run([sys.executable, "-m", "kernel_plugins.cli", *argv], capture_output=True,
                          text=True, timeout=120, env={**os.environ, "KERNEL_PLUGINS_LOAD": ""})
    # cpu cannot be emulated (it is no PrivateUse1 device): the same clean error either way
    assert "Traceback" not in proc.stderr + proc.stdout
    data = json.loads(proc.stdout)
    assert data["error"]["exit_status"] == proc.returncode == 1
    assert "cpu" in data["error"]["message"]


def test_usage_errors_are_json_with_json(manager: Any, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "benchmark", str(EXAMPLE), "--json", "--rtol", "nan")
    data = json.loads(out)
    assert code == 2 and data["error"]["exit_status"] == 2 and err == ""
    assert "--rtol" in data["error"]["message"]
    code, out, _ = run(capsys, "variants", str(EXAMPLE), "--device", "qpu", "--json")
    data = json.loads(out)
    assert code == 2 and data["error"]["exit_status"] == 2
    assert "unknown device type 'qpu'" in data["error"]["message"]


def test_exit_statuses_are_documented() -> None:
    text = (ROOT / "docs" / "errors.md").read_text(encoding="utf-8")
    table = re.search(r"<!-- BEGIN EXIT STATUS -->\n(.*?)<!-- END EXIT STATUS -->", text, re.S)
    assert table is not None, "docs/errors.md has no exit-status table"
    assert table.group(1) == exit_status_table()


def exit_status_table() -> str:
    """The exit-status table docs/errors.md must hold (from ``EXIT_STATUS``)."""
    rows = "".join(f"| {code} | {meaning} |\n" for code, meaning in EXIT_STATUS.items())
    return "| status | meaning |\n|---|---|\n" + rows


def test_list_backends_keeps_distribution_versions_whole_next_to_an_emulated_device(
    manager: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    def emulated() -> DeviceInfo:
        return DeviceInfo(backend="neuron", device_type="neuron", count=2, emulated=True,
                          runtime_version="2.26.0")

    long_variants = lambda device, system: [f"torch-stable-abi213-neuron{i}-x86_64-linux" for i in range(3)]  # noqa: E731
    manager.register(fake_backend("neuron", detect=emulated, variants=long_variants),
                     name="neuron", distribution="kernel-plugins-neuron", version="0.1.0")
    code, out, _ = run(capsys, "list-backends")
    row = next(line for line in out.splitlines() if line.startswith("neuron "))
    assert code == 0 and "kernel-plugins-neuron 0.1.0" in row and "(EMULATED)" in row
    assert max(len(line) for line in out.splitlines()) <= 100  # the variants column gave way


def test_benchmark_shows_progress_on_stderr_when_piped(
    manager: Any, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import functools

    from kernel_plugins_benchmark import runner

    # a line every 0 s: every case of this short run counts as a long wait
    monkeypatch.setattr(runner, "_Lines", functools.partial(runner._Lines, every_s=0.0))
    code, out, err = run(capsys, "benchmark", str(EXAMPLE), "--iterations", "1", "--warmup", "0",
                         "--shapes", "4x4", "8x8", "16x16")
    assert code == 0, err
    assert "benchmark: 1/3 cases done (last: relu (4, 4) float32)" in err  # stderr is no tty
    assert "benchmark:" not in out
    code, _, err = run(capsys, "benchmark", str(EXAMPLE), "--iterations", "1", "--shapes", "4x4",
                       "8x8", "--no-progress")
    assert code == 0 and "benchmark:" not in err


def test_the_default_benchmark_run_stays_short() -> None:
    from kernel_plugins_benchmark.command import counts
    from kernel_plugins_benchmark.inputs import DEFAULT_SHAPES

    from kernel_plugins.cli.main import build_parser

    warmup, iterations = counts(build_parser().parse_args(["benchmark", "x"]))
    assert iterations * (warmup + 1) <= 100  # samples x calls per case
    # --scripts: kernels' defaults, unless given
    assert counts(build_parser().parse_args(["benchmark", "x", "--scripts"])) == (10, 100)
    assert counts(build_parser().parse_args(["benchmark", "x", "--scripts", "--warmup", "0"])) == (0, 100)
    # a small and a medium input per function (larger ones: --shapes)
    assert max(math.prod(s) for shapes in DEFAULT_SHAPES.values() for s in shapes) <= 2**19
