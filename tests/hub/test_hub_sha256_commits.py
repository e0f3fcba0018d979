"""A commit of 64 hex digits (a SHA-256 git repository; kernels accepts such pins since
0.17.2) is a commit everywhere a sha is: a locked load finds its snapshot offline, and a
name of another length is still a ref."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from kernel_plugins import hub
from kernel_plugins.errors import RevisionError

SHA256 = "0123456789abcdef" * 4


def test_a_64_hex_commit_resolves_from_its_snapshot_offline(hf_cache: Path, hub_offline: Callable[[bool], None]) -> None:
    hub_offline(True)
    (hub.storage_folder("acme/sha256", "kernel") / "snapshots" / SHA256 / "build" / "torch-cpu").mkdir(parents=True)
    ref = hub.resolve("acme/sha256", revision=SHA256)
    assert (ref.sha, ref.requested, ref.version) == (SHA256, SHA256, None)
    for name in (SHA256[:-1], SHA256 + "0", SHA256[:50]):  # not a commit: a ref that is not cached
        with pytest.raises(RevisionError, match="Revision .* is not in"):
            hub.resolve("acme/sha256", revision=name)
