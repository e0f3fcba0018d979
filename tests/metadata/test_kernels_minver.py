"""``kernels-minver``: parsed as kernels 0.17.2 parses it, and a kernel that needs a newer
kernels format is refused before any of its code runs."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import kernel_plugins
import kernel_plugins.compat.kernels as compat
from kernel_plugins.cli.main import main
from kernel_plugins.errors import KernelsVersionError, MetadataError
from kernel_plugins.metadata import KERNELS_VERSION, parse_metadata
from kernel_plugins.registry import module_name
from tests.reference.test_hf_kernels_compat import kernels_python  # noqa: F401 - a fixture
from tests.support.inputs import metadata
from tests.support.kernels import make_repo, make_variant

VALUES: list[object] = ["0.18.0", "0.17.2", "10.0.0", " 0.18.0\t", "+1.0.0", "0.018.0",  # accepted
                        "0.18", "1", "0.17.2.1", "abc", "", "v0.18.0", "0.18.0-rc1", "0. 18.0",
                        "0..0", "18446744073709551616.0.0", "\uff11.0.0", 18, 1.5, [0, 18], None]


def accepted(value: object) -> bool:
    try:
        parse_metadata(metadata(kernels_minver=value), where="m")
    except MetadataError as e:
        assert "key 'kernels-minver'" in str(e)
        return False
    return True


def test_parsing_accepts_exactly_what_kernels_0_17_2_accepts(kernels_python: Path) -> None:  # noqa: F811
    script = ("import json, sys; from kernels._rust import Metadata\n"
              "def ok(d):\n    try: Metadata.from_bytes(json.dumps(d).encode()); return True\n"
              "    except ValueError: return False\n"
              "print(json.dumps([ok(d) for d in json.loads(sys.argv[1])]))")
    docs = [{**metadata(name="relu-two"), "kernels-minver": v} for v in VALUES]
    done = subprocess.run([str(kernels_python), "-I", "-c", script, json.dumps(docs)],
                          capture_output=True, text=True, timeout=120, check=True)
    theirs = json.loads(done.stdout)
    assert all(theirs[:6]) and not any(theirs[6:-1]) and theirs[-1]  # None: no minimum
    assert [accepted(v) for v in VALUES] == theirs


def test_the_value_is_kept_and_absent_means_none() -> None:
    assert parse_metadata(metadata(kernels_minver="0.18.0"), where="m").kernels_minver == "0.18.0"
    assert parse_metadata(metadata(kernels_minver=" +0.018.0"), where="m").kernels_minver == "0.18.0"
    assert parse_metadata(metadata(), where="m").kernels_minver is None
    with pytest.raises(MetadataError, match=r"key 'kernels-minver': Input should be a valid string"):
        parse_metadata(metadata(kernels_minver=18), where="m")
    with pytest.raises(MetadataError, match=r"'0\.18' is not a kernels version X\.Y\.Z"):
        parse_metadata(metadata(kernels_minver="0.18"), where="m")


def test_one_constant_names_the_kernels_format_we_read(kernels_python: Path) -> None:  # noqa: F811
    done = subprocess.run([str(kernels_python), "-I", "-c", "import kernels; print(kernels.__version__)"],
                          capture_output=True, text=True, timeout=120, check=True)
    assert KERNELS_VERSION == done.stdout.strip() == compat.__version__ == "0.17.2"


@pytest.mark.parametrize("minver", ["0.17.2", "0.17.0", "0.1.0", "0.17.02"])
def test_a_kernel_that_needs_this_format_or_older_loads(manager, tmp_path: Path, minver: str) -> None:
    folder = make_variant(tmp_path / "k", "torch-cpu", metadata={"kernels-minver": minver})
    assert kernel_plugins.load(folder).add_one(1) == 2


def test_a_kernel_that_needs_a_newer_format_is_refused_before_import(manager, tmp_path: Path) -> None:
    folder = make_variant(tmp_path / "k", "torch-cpu", kernel_id="_minver_too_new",
                          python_depends=["some-name-from-the-future"],
                          code="raise SystemExit('must never run')\n",
                          metadata={"kernels-minver": "0.18.0"})
    with pytest.raises(KernelsVersionError) as info:
        kernel_plugins.load(folder)
    message = str(info.value)
    assert isinstance(info.value, RuntimeError)  # what kernels 0.17.2 raises here
    assert "needs kernels>=0.18.0 (kernels-minver)" in message  # not the unknown python-depends
    assert "reads the format of kernels 0.17.2" in message and "Upgrade kernel-plugins" in message
    assert module_name("_minver_too_new") not in sys.modules


def test_a_too_new_variant_refuses_the_load_and_makes_no_way_for_another(manager, tmp_path: Path) -> None:
    # as in kernels 0.17.2, the check applies to the variant chosen for the device; the
    # torch-universal build of the same repository is not tried instead
    make_variant(tmp_path / "r", "torch-cpu", metadata={"kernels-minver": "9.0.0"})
    make_repo(tmp_path / "r", ["torch-universal"])
    with pytest.raises(KernelsVersionError, match="needs kernels>=9.0.0"):
        kernel_plugins.load(tmp_path / "r")


def test_info_shows_it(manager, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = make_variant(tmp_path / "k", "torch-cpu", metadata={"kernels-minver": "0.18.0"})
    assert main(["info", str(folder), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["kernels_minver"] == "0.18.0"
    assert main(["info", str(folder)]) == 0
    assert "kernels-minver: 0.18.0 (kernel-plugins reads kernels 0.17.2)" in capsys.readouterr().out
    assert compat.Metadata.from_bytes((folder / "metadata.json").read_bytes()).kernels_minver == "0.18.0"
