"""Fixtures for signature tests: a private Sigstore instance, its trust root, signed variants.

Every test runs with an empty sigstore cache (``XDG_CACHE_HOME``/``XDG_DATA_HOME`` in the
test folder) and without the signature variables of the environment, so nothing reads the
developer's cache and nothing contacts sigstore's servers.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from kernel_plugins import signatures
from tests.signatures.instance import Instance
from tests.support.digests import kernels_digest
from tests.support.kernels import make_variant

KC = signatures.DEFAULT_SIGNERS[0].identity
OTHER = "https://github.com/someone/kernels/.github/workflows/build.yaml@refs/heads/main"
CODE = "def add_one(x):\n    return x + 1\n"


@pytest.fixture(scope="session")
def instance() -> Instance:
    """The test suite's own Sigstore instance (CA, CT log, Rekor)."""
    return Instance("kptest")


@pytest.fixture
def root(instance: Instance, tmp_path: Path) -> Path:
    """Its ``trusted_root.json``."""
    return instance.write_root(tmp_path / "trusted_root.json")


@pytest.fixture(autouse=True)
def _isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for name in ("KERNEL_PLUGINS_TRUSTED_ROOT", "KERNEL_PLUGINS_REQUIRE_SIGNATURE",
                 "KERNEL_PLUGINS_CERT_IDENTITY", "KERNEL_PLUGINS_CERT_OIDC_ISSUER",
                 "KERNEL_PLUGINS_ADD_CERT_IDENTITY", "KERNEL_PLUGINS_ADD_CERT_OIDC_ISSUER",
                 "KERNEL_PLUGINS_CERT_ORGS", "LOCAL_KERNELS"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg-cache"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg-data"))
    monkeypatch.setattr(signatures, "_added", [])
    signatures._public_good.cache_clear()
    yield
    signatures._public_good.cache_clear()


def sign_variant(vdir: Path, instance: Instance | None, identity: str = KC, **sign_kw: object) -> bytes:
    """Give ``vdir`` a sha256 digest in its metadata and (with ``instance``) a bundle over it."""
    meta = json.loads((vdir / "metadata.json").read_bytes())
    meta["digest"] = {"algorithm": "sha256", "files": kernels_digest(vdir)}
    raw = json.dumps(meta, indent=1).encode()
    (vdir / "metadata.json").write_bytes(raw)
    if instance is not None:
        (vdir / signatures.BUNDLE_NAME).write_bytes(instance.sign(raw, identity, **sign_kw))  # type: ignore[arg-type]
    return raw


def kernel(root: Path, variant: str = "torch-cpu", *, name: str = "sigk", **kw: object) -> Path:
    """A one-variant kernel folder ``root/build/<variant>`` with plain code; returns the variant."""
    return make_variant(root, variant, name=name, **{"code": CODE, **kw})  # type: ignore[arg-type]
