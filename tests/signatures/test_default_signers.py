"""The default signers are the ones the pinned HF ``kernels`` release trusts, each bound to
its GitHub repository (as kernels binds it) and to the Hub organisation kernels-community."""

from __future__ import annotations

from pathlib import Path

import pytest

from kernel_plugins import signatures
from kernel_plugins.signatures import GITHUB_ACTIONS
from tests.signatures.instance import Instance

RS = "https://github.com/huggingface/kernels-community-rs/.github/workflows/build.yaml@refs/heads/main"


def test_the_default_signers_are_those_of_the_pinned_kernels_release() -> None:
    """kernels' DEFAULT_POLICY (one GitHubWorkflowPolicy per repository, read from the real
    release): the same repositories with the same workflow URIs, issuer GitHub Actions."""
    verify = pytest.importorskip("kernels._internals.verify", reason="the pinned kernels release is not installed")
    theirs = {(p.repo_id, uri) for p in verify.DEFAULT_POLICY._children for uri in p.signer_uris}
    ours = {(s.repository().removeprefix("https://github.com/"), s.identity)  # type: ignore[union-attr]
            for s in signatures.DEFAULT_SIGNERS}
    assert ours == theirs
    assert {s.issuer for s in signatures.DEFAULT_SIGNERS} == {GITHUB_ACTIONS}
    assert {s.orgs for s in signatures.DEFAULT_SIGNERS} == {("kernels-community",)}


def test_kernels_community_rs_signs_for_kernels_community_only(instance: Instance, root: Path) -> None:
    raw = b'{"name": "rs"}'
    bundle = instance.sign(raw, RS)

    def state(org: str | None, data: bytes = bundle) -> str:
        return signatures.check_bundle(raw, data, variant="v", org=org, trusted_root=root).state

    assert state("kernels-community") == "signed"
    assert state(None) == "signed"  # a local folder has no organisation
    assert state("kernels-community-rs") == "signer not allowed"  # a Hub org of that name is not bound
    assert state("evil") == "signer not allowed"
    # the rs workflow file run from another repository (a reusable-workflow call) is not that signer
    forked = instance.sign(raw, RS, repository="https://github.com/huggingface/kernels-community")
    assert state("kernels-community", forked) == "signer not allowed"
    # nor is another workflow of the rs repository, or the same one from a branch
    for identity in (RS.replace("build.yaml", "sign-old-builds.yaml"), RS.replace("heads/main", "heads/dev")):
        assert state("kernels-community", instance.sign(raw, identity)) == "signer not allowed", identity
