"""Property tests of the small parsers: LOCAL_KERNELS, device strings, repo ids, hub arguments."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kernel_plugins import hub
from kernel_plugins.device import DeviceRequest, parse_device
from kernel_plugins.errors import DeviceError, RepoIdError, RevisionError, SourceError
from kernel_plugins.sources import parse_local_kernels

name_part = st.from_regex(r"\A[A-Za-z0-9]([A-Za-z0-9_]|[.-](?=[A-Za-z0-9_])){0,20}\Z")
repo_ids = st.builds(lambda org, name: f"{org}/{name}", name_part, name_part)
paths = st.from_regex(r"\A/[A-Za-z0-9_./-]{0,30}\Z").filter(
    lambda p: os.pathsep not in p and "=" not in p and p.strip() == p
)


@given(st.text(max_size=200))
def test_local_kernels_raises_only_source_errors(value: str) -> None:
    try:
        parsed = parse_local_kernels(value)
    except SourceError as e:
        assert "LOCAL_KERNELS entry" in str(e)
    else:
        assert all(isinstance(p, Path) for p in parsed.values())
        assert all(hub.validate_repo_id(r) == r for r in parsed)


@given(st.dictionaries(repo_ids, paths, max_size=4))
def test_local_kernels_round_trip(entries: dict[str, str]) -> None:
    value = os.pathsep.join(f"{r}={p}" for r, p in entries.items())
    assert parse_local_kernels(value) == {r: Path(p) for r, p in entries.items()}


@given(repo_ids)
def test_generated_repo_ids_are_valid(repo_id: str) -> None:
    assert hub.validate_repo_id(repo_id) == repo_id


@given(st.one_of(st.text(max_size=120), st.integers(), st.none(), st.binary(max_size=10)))
def test_repo_id_validation_raises_only_repo_id_errors(value: object) -> None:
    try:
        assert hub.validate_repo_id(value) == value  # type: ignore[arg-type]
    except RepoIdError as e:
        assert "org/name" in str(e)


@given(st.one_of(st.text(max_size=50), st.integers(), st.floats(), st.none(), st.booleans()))
def test_device_parser_raises_only_device_errors(value: object) -> None:
    try:
        req = parse_device(value)
    except DeviceError:
        pass
    else:
        assert isinstance(req, DeviceRequest) and req.device_type
        assert req.index is None or req.index >= 0


@given(st.from_regex(r"\A[a-z][a-z0-9_]{0,31}\Z"), st.none() | st.integers(0, 999_999))
def test_device_strings_round_trip(device_type: str, index: int | None) -> None:
    text = device_type if index is None else f"{device_type}:{index}"
    assert parse_device(text) == DeviceRequest(device_type, index)
    assert parse_device(f"  {text} ") == DeviceRequest(device_type, index)


bad_versions = st.one_of(
    st.integers(max_value=0), st.floats(), st.text(max_size=5), st.booleans(),
    st.lists(st.integers(), max_size=2),
)


@given(bad_versions)
def test_bad_versions_are_refused_before_any_request(version: object) -> None:
    with pytest.raises(RevisionError, match="Invalid version"):
        hub.resolve("org/name", version=version)  # type: ignore[arg-type]


@given(st.text(max_size=30).filter(
    lambda r: not r.strip() or r != r.strip() or ".." in r.split("/") or "\\" in r
    or "\x00" in r or "" in r.split("/") or "." in r.split("/")
))
def test_bad_revisions_are_refused_before_any_request(revision: str) -> None:
    with pytest.raises(RevisionError, match="Invalid revision"):
        hub.resolve("org/name", revision=revision)


@given(st.text(max_size=30))
def test_hub_variant_names_never_escape(variant: str) -> None:
    ref = hub.HubRef("org/name", "kernel", None, "0" * 40)
    try:
        path = hub.cached_variant_path(ref, variant)
    except SourceError:
        assert "/" in variant or "\\" in variant or ".." in variant or not variant \
            or not variant[0].isalnum() or not variant.isascii() or not variant.isprintable() \
            or any(not (c.isalnum() or c in "._+-") for c in variant)
    else:
        assert path is None  # nothing cached in a random cache
