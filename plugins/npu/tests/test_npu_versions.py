"""Pure version parsing of the Ascend stack: CANN versions, cann tokens, SoC families."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kernel_plugins_npu.hooks import NPU
from kernel_plugins_npu.versions import parse_cann_version, soc_family

TOKENS = NPU.tokens
assert TOKENS is not None


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("8.3.RC1", (8, 3)),
        ("8.5.0", (8, 5)),
        ("9.0.0", (9, 0)),
        ("10.0.RC1", (10, 0)),
        ("8.0.RC2.alpha003", (8, 0)),
        (" 8.2.RC1\n", (8, 2)),
        ("8.3", (8, 3)),
    ],
)
def test_parse_cann_version(text: str, expected: tuple[int, int]) -> None:
    assert parse_cann_version(text) == expected


@pytest.mark.parametrize("text", ["not known", "", "8", "8.x.RC1", "0.3.0", "CANN 8.3", None, 8.3])
def test_malformed_cann_version(text: object) -> None:
    assert parse_cann_version(text) is None


@pytest.mark.parametrize(
    ("version", "token"),
    [((8, 3), "cann83"), ((8, 0), "cann80"), ((10, 0), "cann100"), ((12, 5), "cann125"),
     ((0, 3), "cann03")],
)
def test_token_keeps_a_two_digit_major(version: tuple[int, int], token: str) -> None:
    assert TOKENS.token(version) == token
    assert TOKENS.decode(token) == version


@pytest.mark.parametrize("token", ["cann8", "cann", "cann0", "mlu313", "xcann83"])
def test_decode_rejects_other_tokens(token: str) -> None:
    assert TOKENS.decode(token) is None


@given(st.integers(0, 99), st.integers(0, 9))
def test_token_round_trip(major: int, minor: int) -> None:
    assert TOKENS.decode(TOKENS.token((major, minor))) == (major, minor)


@pytest.mark.parametrize(
    ("soc", "family"),
    [(220, "Ascend 910B"), (225, "Ascend 910B"), (250, "Ascend 910_93"), (202, "Ascend 310P3")],
)
def test_soc_family(soc: int, family: str) -> None:
    assert soc_family(soc) == family


@pytest.mark.parametrize("soc", [219, 226, 100, None, "222", True])
def test_unknown_soc_family(soc: object) -> None:
    assert soc_family(soc) is None



@pytest.mark.parametrize(("text", "built"), [("2.1.0.post3", "2.1"), ("2.13.0", "2.13"),
                                             ("unknown", None)])
def test_the_torch_an_extension_was_built_for(
    text: str, built: str | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    import sys

    from kernel_plugins_testing.stand_ins import stand_in_package

    monkeypatch.setitem(sys.modules, "torch_npu", stand_in_package("torch_npu", text))
    expected = None if built is None else f"torch_npu {text} was built for torch {built}"
    assert NPU.paired_torch() == expected  # what a torch outside the supported range is told
