"""Pure version parsing of the MUSA stack: SDK version, tokens, architecture."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kernel_plugins_musa.hooks import MUSA
from kernel_plugins_musa.versions import musa_arch, parse_musa_version

TOKENS = MUSA.tokens
assert TOKENS is not None


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("4030", (4, 3, 0)),
        ("5012", (5, 1, 2)),
        ("1040", (1, 4, 0)),
        ("10000", (10, 0, 0)),
        (" 4030 ", (4, 3, 0)),
        (4030, (4, 3, 0)),
        ("4.3.0", (4, 3, 0)),
        ("5.1", (5, 1, 0)),
    ],
)
def test_parse_musa_version(text: object, expected: tuple[int, int, int]) -> None:
    assert parse_musa_version(text) == expected


@pytest.mark.parametrize(
    "text", ["", "40x0", "403", "0999", "0.4.3", "4.3.0.1", "musa4.3", "not known", None, True, 4.3]
)
def test_malformed_musa_version(text: object) -> None:
    assert parse_musa_version(text) is None


@given(st.integers(1, 99), st.integers(0, 99), st.integers(0, 9))
def test_encoding_round_trip(major: int, minor: int, patch: int) -> None:
    encoded = str(major * 1000 + minor * 10 + patch)
    assert parse_musa_version(encoded) == (major, minor, patch)


@pytest.mark.parametrize(
    ("version", "token"),
    [((4, 3, 0), "musa43"), ((5, 1, 2), "musa51"), ((4, 10, 0), "musa410"),
     ((0, 43, 0), "musa043")],
)
def test_token(version: tuple[int, int, int], token: str) -> None:
    assert TOKENS.token(version[:2]) == token
    assert TOKENS.decode(token) == version[:2]


@pytest.mark.parametrize("token", ["musa4", "musa", "musa0", "mlu313", "cann83"])
def test_decode_rejects_other_tokens(token: str) -> None:
    assert TOKENS.decode(token) is None


@pytest.mark.parametrize(("cap", "arch"), [((2, 1), 21), ((2, 2), 22), ((3, 1), 31)])
def test_arch_number(cap: tuple[int, int], arch: int) -> None:
    assert musa_arch(cap) == arch

