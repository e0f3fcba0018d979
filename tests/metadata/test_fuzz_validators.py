"""Property tests of the validators: whatever the input, only our own error types come out,
and whatever they accept comes out with the input's own values."""

from __future__ import annotations

import json
import keyword
import random
import re
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
from tests.support.inputs import BUILD_TOML, CORPUS, metadata

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


def assert_metadata_of(meta: object, data: dict[str, Any]) -> None:
    """An accepted ``metadata.json`` comes out with the document's own values, each of them
    valid by the rules of the format."""
    assert isinstance(meta, KernelMetadata)
    assert (meta.name, meta.id, meta.license) == (data["name"], data["id"], data["license"])
    assert re.fullmatch(r"[a-z][-a-z0-9]*[a-z0-9]", meta.name)
    assert meta.id.isidentifier() and meta.id.isascii() and not keyword.iskeyword(meta.id)
    assert type(meta.version) is int and meta.version == data["version"] and meta.version >= 0
    assert meta.python_depends == tuple(data["python-depends"])
    assert all(isinstance(d, str) for d in meta.python_depends)
    backend = data["backend"]
    assert meta.backend.type == backend["type"] and 1 <= len(meta.backend.type) <= 64
    assert meta.backend.archs == tuple(backend.get("archs", ()))
    for key in ("upstream", "source", "provenance"):
        assert getattr(meta, key) == data.get(key)
    digest = data.get("digest")
    if digest is None:
        assert meta.digest is None
    else:
        assert meta.digest is not None and meta.digest.algorithm in ("sha256", "sha512")
        assert (meta.digest.algorithm, meta.digest.files) == (digest["algorithm"], digest["files"])
    depends = data.get("kernel-depends", [])
    assert [d.repo_id for d in meta.kernel_depends] == [d["repo-id"] for d in depends]
    assert [d.revision for d in meta.kernel_depends] == [d.get("revision") for d in depends]
    assert all(d.version is None or type(d.version) is int for d in meta.kernel_depends)


_words = st.from_regex(r"[a-z][a-z0-9_]{0,10}", fullmatch=True)
valid_metadata = st.fixed_dictionaries(
    {
        "name": st.from_regex(r"[a-z][-a-z0-9]{0,12}[a-z0-9]", fullmatch=True),
        "id": st.from_regex(r"_[A-Za-z0-9][A-Za-z0-9_]{0,19}", fullmatch=True),
        "version": st.integers(0, 10**6),
        "license": st.sampled_from(["Apache-2.0", "MIT", "BSD-3-Clause"]),
        "python-depends": st.lists(st.sampled_from(["einops", "numpy", "triton"]), max_size=3),
        "backend": st.fixed_dictionaries(
            {"type": st.sampled_from(sorted(KNOWN))},
            optional={"archs": st.lists(st.from_regex(r"[0-9]\.[0-9]", fullmatch=True), max_size=3)},
        ),
    },
    optional={
        "upstream": st.none() | st.just("https://github.com/org/kernel"),
        "source": st.none() | st.just("https://github.com/org/kernel"),
        "provenance": st.none() | st.fixed_dictionaries(
            {"kernel-builder": st.fixed_dictionaries({"version": st.text(max_size=8)})},
            optional={"kernel": st.fixed_dictionaries({"commit": st.from_regex(r"[0-9a-f]{40}", fullmatch=True),
                                                       "dirty": st.booleans()}), "extra": json_values}),
        "digest": st.none() | st.fixed_dictionaries({
            "algorithm": st.sampled_from(["sha256", "sha512"]),
            "files": st.dictionaries(_words.map(lambda w: w + ".py"),
                                     st.from_regex(r"[A-Za-z0-9+/]{43}=", fullmatch=True), max_size=3),
        }),
        "kernel-depends": st.lists(st.builds(
            lambda repo, pin: {"repo-id": repo, **pin},
            st.from_regex(r"[a-z][a-z0-9-]{0,8}/[a-z][a-z0-9-]{0,8}", fullmatch=True),
            st.fixed_dictionaries({"version": st.integers(1, 9)})
            | st.fixed_dictionaries({"revision": _words}),
        ), max_size=2),
    },
)  # fmt: skip


def _accepted_as_given_or_refused(data: Any) -> None:
    """Accepted with the input's own values, or refused with a MetadataError naming it."""
    try:
        meta = parse_metadata(data, where="fuzz")
    except MetadataError as e:
        assert str(e).startswith("fuzz: ")
    else:
        assert_metadata_of(meta, data)


@given(valid_metadata)
def test_valid_metadata_is_accepted_with_its_own_values(data: dict[str, Any]) -> None:
    assert_metadata_of(parse_metadata(json.loads(json.dumps(data)), where="fuzz"), data)


@given(st.dictionaries(metadata_keys, json_values) | json_values | valid_metadata)
def test_metadata_validator_raises_only_metadata_errors(data: Any) -> None:
    _accepted_as_given_or_refused(data)


@given(st.randoms(use_true_random=False), json_values)
def test_mutated_metadata_raises_only_metadata_errors(rnd: random.Random, value: Any) -> None:
    base = metadata(digest={"algorithm": "sha256", "files": {"a.py": "x"}},
                    kernel_depends=[{"repo-id": "a/b", "version": 1}])
    data = mutate(base, rnd, value)
    _accepted_as_given_or_refused(data)


@given(st.binary(max_size=300) | st.text(max_size=300).map(str.encode)
       | valid_metadata.map(lambda d: json.dumps(d).encode()))
def test_metadata_files_raise_only_metadata_errors(raw: bytes) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "metadata.json").write_bytes(raw)
        try:
            meta = read_metadata(Path(tmp))
        except MetadataError:
            pass
        else:
            assert_metadata_of(meta, json.loads(raw))


def assert_build_toml_of(config: object, data: dict[str, Any]) -> None:
    """An accepted build.toml comes out with the document's own name, edition and backends."""
    from kernel_plugins_check.buildconfig import BuildToml

    assert isinstance(config, BuildToml)
    general = data["general"]
    assert config.name == general["name"] and config.config.general.name == general["name"]
    assert list(config.config.general.backends) == general["backends"]
    assert config.edition == general.get("edition") and config.legacy == (config.edition is None)


@given(st.text(max_size=400) | st.sampled_from([BUILD_TOML, BUILD_TOML.replace("edition = 5\n", "")]))
def test_build_toml_text_raises_only_build_config_errors(text: str) -> None:
    try:
        config = parse_build_toml(text, known=KNOWN)
    except BuildConfigError:
        pass
    else:
        assert_build_toml_of(config, loads_toml(text))


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
    if config is not None:
        assert_build_toml_of(config, data)


CORPUS_DATA = [loads_toml(p.read_bytes()) for p in sorted(CORPUS.glob("*.build.toml"))[::5]]


@given(st.sampled_from([loads_toml(BUILD_TOML), *CORPUS_DATA]), st.randoms(use_true_random=False),
       toml_like)
def test_mutated_build_tomls_never_raise(base: dict, rnd: random.Random, value: Any) -> None:
    data = mutate(base, rnd, value)
    config, issues = validate_build_data(data, known=KNOWN)
    assert (config is None) == bool(issues)
    keys = [i.key for i in issues]
    assert keys == sorted(keys)
    if config is not None:
        assert_build_toml_of(config, data)


lock_keys = st.sampled_from(["repo_id", "sha", "variants", "hash", "hash_type", "x", "dependency", "lock",
                             "repo-id", "version", "revision", "commit"])
lock_entries = st.dictionaries(
    lock_keys, json_values | st.dictionaries(lock_keys | st.text(max_size=8),
                                             json_values | st.dictionaries(lock_keys, json_values))
)


valid_lock_entries = st.fixed_dictionaries({
    "repo_id": st.from_regex(r"[a-z][a-z0-9-]{0,8}/[a-z][a-z0-9-]{0,8}", fullmatch=True),
    "sha": st.from_regex(r"[0-9a-f]{40}", fullmatch=True),
    "variants": st.dictionaries(
        st.sampled_from(["torch-cpu", "torch-cuda", "torch213-cxx11-cpu-x86_64-linux"]),
        st.fixed_dictionaries({"hash": st.from_regex(r"sha256-[0-9a-f]{64}", fullmatch=True),
                               "hash_type": st.just("git_lfs_concat")}),
        max_size=2),
})  # fmt: skip


_repo = st.from_regex(r"[a-z][a-z0-9-]{0,8}/[a-z][a-z0-9-]{0,8}", fullmatch=True)
valid_kernels_entries = st.fixed_dictionaries({
    "dependency": st.fixed_dictionaries({"repo-id": _repo, "version": st.integers(0, 99)})
    | st.fixed_dictionaries({"repo-id": _repo, "revision": st.text(max_size=5)}),
    "lock": st.fixed_dictionaries({"commit": st.from_regex(r"[0-9a-fA-F]{40}", fullmatch=True)}),
})  # fmt: skip


@given(json_values | st.lists(lock_entries, max_size=3)
       | st.lists(valid_lock_entries, max_size=3, unique_by=lambda e: e["repo_id"])
       | st.lists(valid_kernels_entries, min_size=1, max_size=3,
                  unique_by=lambda e: tuple(sorted(e["dependency"].items()))))
def test_lock_validator_raises_only_lockfile_errors(data: Any) -> None:
    from kernel_plugins.lock import parse_lock

    try:
        entries = parse_lock(data, where="fuzz.lock")
    except LockfileError as e:
        assert str(e).startswith("fuzz.lock: ")
    else:  # accepted: the entries are the document's own, and write back the same
        if entries and entries[0].spec:  # kernels' format
            assert [e.kernels_json() for e in entries] == [
                {"dependency": d["dependency"], "lock": {"commit": d["lock"]["commit"].lower()}} for d in data]
            assert parse_lock(json.loads(json.dumps([e.kernels_json() for e in entries]))) == entries
            return
        assert [e.to_json() for e in entries] == [
            {"repo_id": d["repo_id"], "sha": d["sha"],
             "variants": {n: {"hash": v["hash"], "hash_type": v["hash_type"]}
                          for n, v in sorted(d["variants"].items())}}
            for d in data
        ]  # fmt: skip
        assert parse_lock(json.loads(json.dumps([e.to_json() for e in entries]))) == entries


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
