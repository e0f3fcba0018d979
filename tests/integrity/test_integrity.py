"""Per-file digests of a variant: which files count, the encoding, and every kind of mismatch."""

from __future__ import annotations

import base64
import hashlib
import os
from pathlib import Path

import pytest

from kernel_plugins.errors import IntegrityError
from kernel_plugins.integrity import check_digest, verify_digest
from kernel_plugins.metadata import Digest
from tests.support.digests import kernels_digest
from tests.support.inputs import write_tree

FILES = {
    "__init__.py": "from ._ops import ops\n",
    "_ops.py": "ops = 1\n",
    "layers/__init__.py": "LAYER = 1\n",
    "layers/metadata.json": "{}",  # only the top-level metadata.json is skipped
    "metadata.json": "{}",
    "metadata.json.sigstore": "sig",
    "__pycache__/_ops.cpython-311.pyc": b"\x00",
    "layers/__pycache__/x.pyc": b"\x00",
    "stale.pyc": b"\x00",
}


def b64(data: bytes, algorithm: str = "sha256") -> str:
    return base64.b64encode(hashlib.new(algorithm, data).digest()).decode()


@pytest.fixture
def variant(tmp_path: Path) -> Path:
    folder = tmp_path / "torch-cpu"
    write_tree(folder, FILES)
    return folder


def test_covered_files_skip_metadata_pycache_and_pyc(variant: Path) -> None:
    # as kernels (kernel-builder) writes a digest, and what check_digest compares
    assert sorted(kernels_digest(variant)) == [
        "__init__.py",
        "_ops.py",
        "layers/__init__.py",
        "layers/metadata.json",
    ]


@pytest.mark.parametrize("algorithm", ["sha256", "sha512"])
def test_the_digest_kernels_writes_is_accepted(variant: Path, algorithm: str) -> None:
    digest = kernels_digest(variant, algorithm)
    assert digest["_ops.py"] == b64(b"ops = 1\n", algorithm)
    assert set(digest) == {"__init__.py", "_ops.py", "layers/__init__.py", "layers/metadata.json"}
    assert check_digest(variant, {"algorithm": algorithm, "files": digest}) == []


def test_a_matching_digest_model_passes(variant: Path) -> None:
    digest = Digest(algorithm="sha256", files=kernels_digest(variant))
    assert check_digest(variant, digest) == []
    verify_digest(variant, digest)  # does not raise


def test_missing_changed_and_unexpected_are_each_reported(variant: Path) -> None:
    files = kernels_digest(variant)
    files["gone.py"] = b64(b"x")
    (variant / "_ops.py").write_text("ops = 2\n")
    (variant / "extra.so").write_bytes(b"\x7fELF")
    mismatches = check_digest(variant, {"algorithm": "sha256", "files": files})
    found = {(m.path, m.kind) for m in mismatches}
    assert found == {("gone.py", "missing"), ("_ops.py", "changed"), ("extra.so", "unexpected")}


def test_changed_reports_both_hashes(variant: Path) -> None:
    files = kernels_digest(variant)
    old = files["_ops.py"]
    (variant / "_ops.py").write_text("ops = 2\n")
    [m] = check_digest(variant, {"algorithm": "sha256", "files": files})
    assert (m.expected, m.actual) == (old, b64(b"ops = 2\n"))
    assert "does not match the digest" in m.describe()


def test_url_safe_and_unpadded_hashes_are_accepted(variant: Path) -> None:
    files = {
        k: base64.urlsafe_b64encode(base64.b64decode(v)).decode().rstrip("=")
        for k, v in kernels_digest(variant).items()
    }
    assert check_digest(variant, {"algorithm": "sha256", "files": files}) == []


@pytest.mark.parametrize(
    "path", ["../outside.py", "/etc/passwd", "a/../../b", "a\\b", "", "a//b"]
)
def test_entries_escaping_the_folder_are_malformed_and_never_read(
    variant: Path, path: str
) -> None:
    (variant.parent / "outside.py").write_text("secret")
    files = {**kernels_digest(variant), path: b64(b"secret")}
    [m] = check_digest(variant, {"algorithm": "sha256", "files": files})
    assert (m.path, m.kind) == (path, "malformed")


@pytest.mark.parametrize("value", ["not base64!", b64(b"x", "sha512"), 5, None])
def test_bad_hash_values_are_malformed(variant: Path, value: object) -> None:
    files = {**kernels_digest(variant), "_ops.py": value}
    [m] = check_digest(variant, {"algorithm": "sha256", "files": files})
    assert (m.path, m.kind) == ("_ops.py", "malformed")
    assert "sha256 digest (32 bytes)" in m.detail


@pytest.mark.parametrize("digest", [{"algorithm": "md5", "files": {}}, {"files": {}},
                                    {"algorithm": "sha256", "files": ["a"]}])
def test_unusable_digests_are_one_malformed_entry(variant: Path, digest: dict) -> None:
    [m] = check_digest(variant, digest)
    assert m.kind == "malformed" and m.path == "(digest)"


def test_verify_digest_raises_naming_each_mismatch(variant: Path) -> None:
    files = kernels_digest(variant)
    (variant / "_ops.py").write_text("tampered\n")
    with pytest.raises(IntegrityError) as info:
        verify_digest(variant, {"algorithm": "sha256", "files": files}, where="org/k torch-cpu")
    message = str(info.value)
    assert message.startswith("org/k torch-cpu: files do not match the metadata digest: _ops.py")
    assert "fetch it again, or rebuild" in message


def test_file_links_are_followed_like_the_hub_cache_does(tmp_path: Path) -> None:
    blob = tmp_path / "blobs" / "abc"
    blob.parent.mkdir()
    blob.write_text("ops = 1\n")
    folder = tmp_path / "snap" / "torch-cpu"
    folder.mkdir(parents=True)
    os.symlink(blob, folder / "_ops.py")
    digest = {"algorithm": "sha256", "files": {"_ops.py": b64(b"ops = 1\n")}}
    assert check_digest(folder, digest, link_roots=(blob.parent,)) == []
    # a link anywhere else is refused, not followed
    with pytest.raises(IntegrityError, match="points outside the variant folder"):
        check_digest(folder, digest)


def test_errors_for_bad_arguments(tmp_path: Path) -> None:
    with pytest.raises(IntegrityError, match="is not a folder"):
        check_digest(tmp_path / "nope", {"algorithm": "sha256", "files": {}})
