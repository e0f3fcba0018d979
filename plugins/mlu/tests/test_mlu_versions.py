"""Pure version parsing of the Cambricon stack: extension, CNToolkit, backend tokens."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kernel_plugins_mlu.hooks import MLU
from kernel_plugins_mlu.versions import (
    DEFAULT_NEUWARE_HOME,
    TOOLKIT_ENV,
    parse_extension_version,
    parse_toolkit_version,
    read_toolkit_version,
)

TOKENS = MLU.tokens
assert TOKENS is not None


@pytest.mark.parametrize(
    ("text", "extension", "torch"),
    [
        ("1.22.0+torch2.4.0", "1.22.0", "2.4.0"),
        ("1.24.1-torch2.5.0", "1.24.1", "2.5.0"),
        ("1.22.0+torch2.13.0", "1.22.0", "2.13.0"),
        (" 1.30.2rc1+torch2.13 ", "1.30.2rc1", "2.13"),
    ],
)
def test_extension_version_formats(text: str, extension: str, torch: str) -> None:
    v = parse_extension_version(text)
    assert v is not None
    assert (v.extension, v.torch) == (extension, torch)


def test_extension_version_torch_major_minor() -> None:
    v = parse_extension_version("1.22.0+torch2.13.0")
    assert v is not None and v.torch_major_minor == (2, 13)


@pytest.mark.parametrize(
    "text", ["1.22.0", "", "torch2.4.0", "1.22+torch2.4.0", "1.22.0+torch2", None, 1.22]
)
def test_extension_version_malformed(text: object) -> None:
    assert parse_extension_version(text) is None


@pytest.mark.parametrize(
    ("text", "expected"),
    [("3.13.5", (3, 13)), ("3.13", (3, 13)), ("5.0.0", (5, 0)), (" 3.9.0\n", (3, 9))],
)
def test_toolkit_version(text: str, expected: tuple[int, int]) -> None:
    assert parse_toolkit_version(text) == expected


@pytest.mark.parametrize("text", ["3", "v3.13.5", "3.13.5.1", "three", "", None])
def test_toolkit_version_malformed(text: object) -> None:
    assert parse_toolkit_version(text) is None


@pytest.mark.parametrize(
    ("version", "token"),
    [((3, 13), "mlu313"), ((5, 0), "mlu50"), ((3, 9), "mlu39"), ((0, 13), "mlu013")],
)
def test_toolkit_token(version: tuple[int, int], token: str) -> None:
    assert TOKENS.token(version) == token
    assert TOKENS.decode(token) == version


@pytest.mark.parametrize("token", ["mlu3", "mlu", "mlu0", "cann83", "musa43", "xmlu313"])
def test_decode_rejects_other_tokens(token: str) -> None:
    assert TOKENS.decode(token) is None


@given(st.integers(0, 9), st.integers(0, 99))
def test_token_round_trip(major: int, minor: int) -> None:
    assert TOKENS.decode(TOKENS.token((major, minor))) == (major, minor)


def test_toolkit_from_neuware_version_file(tmp_path: Path) -> None:
    (tmp_path / "version.txt").write_text("Neuware Version 3.9.0\n", encoding="utf-8")
    v = read_toolkit_version({"NEUWARE_HOME": str(tmp_path)})
    assert v.text == "3.9.0"
    assert v.source == str(tmp_path / "version.txt")
    assert v.note is None


def test_explicit_environment_variable_wins(tmp_path: Path) -> None:
    (tmp_path / "version.txt").write_text("Neuware Version 3.9.0\n", encoding="utf-8")
    v = read_toolkit_version({"NEUWARE_HOME": str(tmp_path), TOOLKIT_ENV: "3.13.5"})
    assert (v.text, v.source, v.note) == ("3.13.5", f"${TOOLKIT_ENV}", None)


def test_explicit_malformed_value_is_kept_and_reported() -> None:
    v = read_toolkit_version({TOOLKIT_ENV: "latest"})
    assert v.text == "latest"
    assert v.note is not None and "'latest'" in v.note and "3.13.5" in v.note


def test_missing_version_file_is_reported(tmp_path: Path) -> None:
    v = read_toolkit_version({"NEUWARE_HOME": str(tmp_path)})
    assert v.text is None
    assert v.note is not None
    assert str(tmp_path / "version.txt") in v.note and TOOLKIT_ENV in v.note


def test_version_file_without_version_is_reported(tmp_path: Path) -> None:
    (tmp_path / "version.txt").write_text("Neuware Version unknown\n", encoding="utf-8")
    v = read_toolkit_version({"NEUWARE_HOME": str(tmp_path)})
    assert v.text is None
    assert v.note is not None
    assert "no X.Y.Z version" in v.note and "Neuware Version unknown" in v.note


@pytest.mark.skipif(Path(DEFAULT_NEUWARE_HOME).exists(), reason="a real Neuware install is present")
def test_default_neuware_home() -> None:
    v = read_toolkit_version({})
    assert v.text is None
    assert v.note is not None and DEFAULT_NEUWARE_HOME in v.note



@pytest.mark.parametrize(("text", "built"), [("1.22.0+torch2.4.0", "2.4"),
                                             ("1.24.1-torch2.13.0", "2.13"), ("1.22.0", None)])
def test_the_torch_an_extension_was_built_for(
    text: str, built: str | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    import sys

    from kernel_plugins_testing.stand_ins import stand_in_package

    monkeypatch.setitem(sys.modules, "torch_mlu", stand_in_package("torch_mlu", text))
    expected = None if built is None else f"torch_mlu {text} was built for torch {built}"
    assert MLU.paired_torch() == expected  # what a torch outside the supported range is told
