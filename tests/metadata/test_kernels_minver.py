"""``kernels-minver``: parsed as the pinned kernels release parses it, compared as a version,
and a kernel that needs a newer kernels format is refused before any of its code runs."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

import kernel_plugins
import kernel_plugins.compat.kernels as compat
from kernel_plugins.cli.main import main
from kernel_plugins.errors import KernelsVersionError, MetadataError
from kernel_plugins.metadata import (
    KERNELS_VERSION,
    check_minver,
    parse_metadata,
    parse_metadata_bytes,
)
from kernel_plugins.registry import module_name
from tests.support.inputs import metadata
from tests.support.kernels import make_repo, make_variant
from tests.support.pins import kernels_pin

VALUES: list[object] = ["0.18.0", "0.19.1", "10.0.0", " 0.18.0\t", "+1.0.0", "0.018.0",  # accepted
                        "0" * 30 + "1.0.0", "\u20000.9.0\xa0",
                        "0.18", "1", "0.17.2.1", "abc", "", "v0.18.0", "0.18.0-rc1", "0. 18.0", "0..0",
                        "18446744073709551616.0.0", "1" * 4301 + ".0.0", "\uff11.0.0", "1.0.0\x1c", "-1.0.0",
                        18, 1.5, [0, 18], None]


def accepted(value: object) -> bool:
    try:
        parse_metadata(metadata(kernels_minver=value), where="m")
    except MetadataError as e:
        assert "key 'kernels-minver'" in str(e)
        return False
    return True


def test_parsing_accepts_exactly_what_the_pinned_kernels_accepts() -> None:
    from kernels._rust import Metadata

    def theirs(value: object) -> bool:
        try:
            Metadata.from_bytes(json.dumps({**metadata(name="relu-two"), "kernels-minver": value}).encode())
        except ValueError:
            return False
        return True

    expected = [theirs(v) for v in VALUES]
    assert all(expected[:8]) and not any(expected[8:-1]) and expected[-1]  # None: no minimum
    assert [accepted(v) for v in VALUES] == expected


def test_a_number_of_thousands_of_digits_is_a_metadata_error() -> None:
    # int() refuses more than 4,300 digits with a ValueError; the value is refused before that
    for digits in ("1" * 4301, "9" * 100_000):
        with pytest.raises(MetadataError, match=r"key 'kernels-minver': .* is not a kernels version X\.Y\.Z"):
            parse_metadata_bytes(json.dumps(metadata(kernels_minver=f"0.{digits}.0")).encode(), where="m")
    assert parse_metadata(metadata(kernels_minver="0" * 5000 + "1.2.3"), where="m").kernels_minver == "1.2.3"


def test_the_value_is_kept_and_absent_means_none() -> None:
    assert parse_metadata(metadata(kernels_minver="0.18.0"), where="m").kernels_minver == "0.18.0"
    assert parse_metadata(metadata(kernels_minver=" +0.018.0"), where="m").kernels_minver == "0.18.0"
    assert parse_metadata(metadata(), where="m").kernels_minver is None
    with pytest.raises(MetadataError, match=r"key 'kernels-minver': Input should be a valid string"):
        parse_metadata(metadata(kernels_minver=18), where="m")
    with pytest.raises(MetadataError, match=r"'0\.18' is not a kernels version X\.Y\.Z"):
        parse_metadata(metadata(kernels_minver="0.18"), where="m")


def test_one_constant_names_the_kernels_format_we_read() -> None:
    import kernels

    assert KERNELS_VERSION == kernels.__version__ == kernels_pin() == compat.__version__ == "0.19.1"


def test_kernels_minver_is_compared_as_a_version_not_as_text() -> None:
    # as text (or as a tuple of texts) "0.9.0" > "0.19.1" and "0.100.0" < "0.19.1"
    for minver, loads in [("0.9.0", True), ("0.2.0", True), ("0.19.1", True), ("0.19.01", True),
                          ("0.100.0", False), ("0.19.10", False), ("0.20.0", False), ("1.0.0", False)]:
        meta = parse_metadata(metadata(kernels_minver=minver), where="m")
        try:
            check_minver(meta, where="m")
        except KernelsVersionError:
            assert not loads, minver
        else:
            assert loads, minver


@pytest.mark.parametrize("minver", ["0.19.1", "0.18.3", "0.9.0", "0.019.00"])
def test_a_kernel_that_needs_this_format_or_older_loads(manager, tmp_path: Path, minver: str) -> None:
    folder = make_variant(tmp_path / "k", "torch-cpu", metadata={"kernels-minver": minver})
    assert kernel_plugins.load(folder).add_one(1) == 2


@pytest.mark.parametrize("minver", ["0.19.2", "0.100.0"])
def test_a_kernel_that_needs_a_newer_format_is_refused_before_import(manager, tmp_path: Path, minver: str) -> None:
    kernel_id = f"_minver_too_new_{minver.replace('.', '_')}"
    folder = make_variant(tmp_path / "k", "torch-cpu", kernel_id=kernel_id,
                          python_depends=["some-name-from-the-future"],
                          code="raise SystemExit('must never run')\n",
                          metadata={"kernels-minver": minver})
    with pytest.raises(KernelsVersionError) as info:
        kernel_plugins.load(folder)
    message = str(info.value)
    assert isinstance(info.value, RuntimeError)  # what kernels raises here
    assert f"needs kernels>={minver} (kernels-minver)" in message  # not the unknown python-depends
    assert "reads the format of kernels 0.19.1" in message and "Upgrade kernel-plugins" in message
    assert module_name(kernel_id) not in sys.modules


def test_a_too_new_variant_refuses_the_load_and_makes_no_way_for_another(manager, tmp_path: Path) -> None:
    # as in kernels, the check applies to the variant chosen for the device; the
    # torch-universal build of the same repository is not tried instead
    make_variant(tmp_path / "r", "torch-cpu", metadata={"kernels-minver": "9.0.0"})
    make_repo(tmp_path / "r", ["torch-universal"])
    with pytest.raises(KernelsVersionError, match="needs kernels>=9.0.0"):
        kernel_plugins.load(tmp_path / "r")


def test_info_shows_it(manager, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = make_variant(tmp_path / "k", "torch-cpu", metadata={"kernels-minver": "0.20.0"})
    assert main(["info", str(folder), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["kernels_minver"] == "0.20.0"
    assert main(["info", str(folder)]) == 0
    assert "kernels-minver: 0.20.0 (kernel-plugins reads kernels 0.19.1)" in capsys.readouterr().out
    assert compat.Metadata.from_bytes((folder / "metadata.json").read_bytes()).kernels_minver == "0.20.0"
