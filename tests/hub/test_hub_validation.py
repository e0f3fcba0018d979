"""Argument checks of kernel_plugins.hub that fail before any request (no server needed)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from kernel_plugins import hub
from kernel_plugins.errors import RepoIdError, RevisionError, SourceError


@pytest.mark.parametrize(
    "repo_id",
    ["kernels-community/activation", "a/b", "Org_1/name.v2", "x" * 96 + "/" + "y" * 96],
)
def test_valid_repo_ids_are_returned_unchanged(repo_id: str) -> None:
    assert hub.validate_repo_id(repo_id) == repo_id


@pytest.mark.parametrize(
    ("repo_id", "fragment"),
    [
        ("activation", "exactly one '/'"),
        ("a/b/c", "exactly one '/'"),
        ("/name", "organisation is empty"),
        ("org/", "name is empty"),
        ("org/-name", "must start with a letter or digit"),
        ("org/na me", "must start with a letter or digit"),
        ("org/na--me", "'--' or '..'"),
        ("org/na..me", "'--' or '..'"),
        ("org/name.", "must not end with"),
        ("org/name.git", ".git"),
        ("org/" + "n" * 97, "at most 96"),
        ("../etc", "must start with a letter or digit"),
    ],
)
def test_invalid_repo_ids_say_what_is_wrong(repo_id: str, fragment: str) -> None:
    with pytest.raises(RepoIdError) as info:
        hub.validate_repo_id(repo_id)
    assert fragment in str(info.value)
    assert "org/name" in str(info.value)  # says how to fix it


def test_non_string_repo_id_is_rejected() -> None:
    with pytest.raises(RepoIdError, match="must be a string"):
        hub.validate_repo_id(42)  # type: ignore[arg-type]


def test_resolve_rejects_bad_repo_id_before_any_request() -> None:
    with pytest.raises(RepoIdError):
        hub.resolve("not-a-repo-id", endpoint="http://127.0.0.1:9")


def test_revision_and_version_together_are_rejected() -> None:
    with pytest.raises(RevisionError, match="only one of them") as info:
        hub.resolve("org/name", revision="main", version=1, endpoint="http://127.0.0.1:9")
    assert "org/name" in str(info.value)


@pytest.mark.parametrize("version", [0, -1, "1", True, 1.0])
def test_invalid_versions_are_rejected(version: object) -> None:
    with pytest.raises(RevisionError, match="positive integer") as info:
        hub.resolve("org/name", version=version, endpoint="http://127.0.0.1:9")  # type: ignore[arg-type]
    assert repr(version) in str(info.value)


@pytest.mark.parametrize("revision", ["", " ", "../main", "a/../b", "refs\\heads", " main", "a//b"])
def test_invalid_revisions_are_rejected(revision: str) -> None:
    with pytest.raises(RevisionError, match="revision"):
        hub.resolve("org/name", revision=revision, endpoint="http://127.0.0.1:9")


def test_unknown_repo_type_is_rejected() -> None:
    with pytest.raises(SourceError, match="use 'kernel' or 'model'"):
        hub.resolve("org/name", repo_type="dataset", endpoint="http://127.0.0.1:9")  # type: ignore[arg-type]


@pytest.mark.parametrize("variant", ["", "..", "a/b", "a\\b", "../x", "torch-*", "t[0]", ".hidden"])
def test_invalid_variant_names_are_rejected(variant: str) -> None:
    ref = hub.HubRef("org/name", "kernel", None, "a" * 40)
    with pytest.raises(SourceError, match="Invalid build variant"):
        hub.cached_variant_path(ref, variant)
    with pytest.raises(SourceError, match="Invalid build variant"):
        hub.download_variant(ref, variant)


def test_hubref_is_frozen_and_prints_short_sha() -> None:
    ref = hub.HubRef("org/name", "kernel", "v1", "0123456789" * 4, 1)
    assert str(ref) == "org/name@012345678901 (v1)"
    with pytest.raises(AttributeError):
        ref.sha = "x"  # type: ignore[misc]


def test_importing_the_hub_module_imports_no_heavy_dependency() -> None:
    code = (
        "import sys, kernel_plugins.hub\n"
        "bad = [m for m in ('huggingface_hub', 'torch') if m in sys.modules]\n"
        "print(','.join(bad))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""
