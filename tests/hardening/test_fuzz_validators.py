"""Property tests of the validators: whatever the input, only our own error types come out."""

from __future__ import annotations

import json
import random
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from kernel_plugins_check.buildconfig import (
    BuildConfigIssue,
    loads_toml,
    parse_build_toml,
    validate_build_data,
)

from kernel_plugins.errors import BuildConfigError, LockfileError, MetadataError
from kernel_plugins.integrity import check_digest
from kernel_plugins.metadata import KernelMetadata, parse_metadata, read_metadata

from ._support import BUILD_TOML, CORPUS, metadata

KNOWN = {name: "test" for name in ("cpu", "cuda", "rocm", "xpu", "metal", "mlu", "npu", "cann")}

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda children: st.lists(children, max_size=4)
    | st.dictionaries(st.text(max_size=12), children, max_size=4),
    max_leaves=12,
)


def mutate(data: Any, rnd: random.Random, value: Any) -> Any:
    """Replace, delete or add one key somewhere in nested dicts/lists (a copy)."""
    data = json.loads(json.dumps(data))
    node = data
    while True:
        if isinstance(node, dict) and node:
            key = rnd.choice(sorted(node))
            child = node[key]
            if isinstance(child, (dict, list)) and child and rnd.random() < 0.6:
                node = child
                continue
            action = rnd.choice(["replace", "delete", "add"])
            if action == "replace":
                node[key] = value
            elif action == "delete":
                del node[key]
            else:
                node[f"{key}-x"] = value
            return data
        if isinstance(node, list) and node:
            i = rnd.randrange(len(node))
            if isinstance(node[i], (dict, list)) and node[i] and rnd.random() < 0.6:
                node = node[i]
                continue
            node[i] = value
            return data
        return value


metadata_keys = st.sampled_from(
    ["name", "id", "version", "license", "python-depends", "backend", "digest",
     "kernel-depends", "provenance", "upstream", "source"]
)


@given(st.dictionaries(metadata_keys, json_values) | json_values)
def test_metadata_validator_raises_only_metadata_errors(data: Any) -> None:
    try:
        meta = parse_metadata(data, where="fuzz")
    except MetadataError as e:
        assert str(e).startswith("fuzz: ")
    else:
        assert isinstance(meta, KernelMetadata) and meta.id.isidentifier()


@given(st.randoms(use_true_random=False), json_values)
def test_mutated_metadata_raises_only_metadata_errors(rnd: random.Random, value: Any) -> None:
    base = metadata(digest={"algorithm": "sha256", "files": {"a.py": "x"}},
                    kernel_depends=[{"repo-id": "a/b", "version": 1}])
    try:
        parse_metadata(mutate(base, rnd, value), where="fuzz")
    except MetadataError:
        pass


@given(st.binary(max_size=300) | st.text(max_size=300).map(str.encode))
def test_metadata_files_raise_only_metadata_errors(raw: bytes) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "metadata.json").write_bytes(raw)
        try:
            read_metadata(Path(tmp))
        except MetadataError:
            pass


@given(st.text(max_size=400))
def test_build_toml_text_raises_only_build_config_errors(text: str) -> None:
    try:
        parse_build_toml(text, known=KNOWN)
    except BuildConfigError:
        pass


build_keys = st.sampled_from(
    ["general", "torch", "torch-noarch", "tvm-ffi", "kernel", "name", "version", "edition",
     "license", "backends", "hub", "repo-id", "backend", "src", "depends", "cuda", "mlu",
     "stable-abi", "python-depends", "kernel-depends", "minver", "x_y"]
)
toml_like = st.recursive(
    st.booleans() | st.integers() | st.text(max_size=10) | st.sampled_from(["cuda", "5", "2.10"]),
    lambda children: st.lists(children, max_size=3)
    | st.dictionaries(build_keys | st.text(max_size=6), children, max_size=4),
    max_leaves=15,
)


@given(st.dictionaries(build_keys, toml_like, max_size=6) | toml_like)
def test_build_data_validator_returns_issues_and_never_raises(data: Any) -> None:
    config, issues = validate_build_data(data, known=KNOWN)
    assert (config is None) == bool(issues)
    assert all(isinstance(i, BuildConfigIssue) and i.message and i.fix for i in issues)


CORPUS_DATA = [loads_toml(p.read_bytes()) for p in sorted(CORPUS.glob("*.build.toml"))[::5]]


@given(st.sampled_from([loads_toml(BUILD_TOML), *CORPUS_DATA]), st.randoms(use_true_random=False),
       toml_like)
def test_mutated_build_tomls_never_raise(base: dict, rnd: random.Random, value: Any) -> None:
    config, issues = validate_build_data(mutate(base, rnd, value), known=KNOWN)
    assert (config is None) == bool(issues)
    keys = [i.key for i in issues]
    assert keys == sorted(keys)


lock_keys = st.sampled_from(["repo_id", "sha", "variants", "hash", "hash_type", "x"])
lock_entries = st.dictionaries(
    lock_keys, json_values | st.dictionaries(st.text(max_size=8), st.dictionaries(lock_keys,
                                                                                 json_values))
)


@given(json_values | st.lists(lock_entries, max_size=3))
def test_lock_validator_raises_only_lockfile_errors(data: Any) -> None:
    from kernel_plugins.lock import parse_lock

    try:
        parse_lock(data, where="fuzz.lock")
    except LockfileError as e:
        assert str(e).startswith("fuzz.lock: ")


@given(st.dictionaries(st.text(max_size=20), json_values, max_size=5),
       st.sampled_from(["sha256", "sha512", "md5", 3, None]))
def test_digest_check_never_raises_and_never_leaves_the_folder(files: dict, algorithm: Any) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "torch-cpu"
        folder.mkdir()
        (folder / "__init__.py").write_text("")
        (Path(tmp) / "secret").write_text("s")
        mismatches = check_digest(folder, {"algorithm": algorithm, "files": files})
        assert all(m.kind in ("missing", "changed", "unexpected", "malformed") for m in mismatches)
        assert not any(m.path == "../secret" and m.kind != "malformed" for m in mismatches)


def test_deeply_nested_lock_file_is_a_lockfile_error(tmp_path: Path) -> None:
    from kernel_plugins.lock import read_lockfile

    (tmp_path / "kernels.lock").write_text("[" * 100_000)
    with pytest.raises(LockfileError):
        read_lockfile(tmp_path)


def test_non_utf8_pyproject_is_a_lockfile_error(tmp_path: Path) -> None:
    from kernel_plugins.lock import read_dependencies

    (tmp_path / "pyproject.toml").write_bytes(b"\xff\xfe")
    with pytest.raises(LockfileError):
        read_dependencies(tmp_path)


def test_deeply_nested_pyproject_is_a_lockfile_error(tmp_path: Path) -> None:
    from kernel_plugins.lock import read_dependencies

    (tmp_path / "pyproject.toml").write_text("a = " + "[" * 100_000)
    with pytest.raises(LockfileError):
        read_dependencies(tmp_path)
