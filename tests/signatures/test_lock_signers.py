"""The signer a lock records, checked by ``download`` and ``verify`` without the loopback Hub.

A fake Hub (:class:`tests.loading.test_safety_rules.FakeHub`) serves a build signed by the
test suite's Sigstore instance; the lock is kernels' ``kernels.lock`` with the signer in
``kernels.lock.variants``. The end-to-end test of the same rule against olah is
``tests/signatures/test_hub_signatures.py::test_lock_records_signers_and_refuses_a_change``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kernel_plugins import hub, signatures
from kernel_plugins.cli.main import main
from kernel_plugins.integrity import variant_hash
from kernel_plugins.lock import KernelLock, VariantLock, write_lockfile
from tests.loading.test_safety_rules import FakeHub, FakeRepo
from tests.signatures.conftest import KC, kernel, sign_variant
from tests.signatures.instance import Instance


class CachingFakeHub(FakeHub):
    """A fake Hub whose downloads ``verify`` finds in the cache."""

    def __init__(self, root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        super().__init__(root, monkeypatch)
        monkeypatch.setattr(hub, "cached_variants", self.cached_variants)

    def cached_variants(self, ref: hub.HubRef) -> dict[str, Path]:
        build = self.root / "cache" / ref.repo_id / ref.sha / "build"
        return {p.name: p for p in build.iterdir()} if build.is_dir() else {}


def _repo(fake: FakeHub, tmp: Path, repo_id: str, instance: Instance | None) -> FakeRepo:
    vdir = kernel(tmp / repo_id, name=repo_id.split("/")[1].replace("-", ""))
    sign_variant(vdir, instance)
    files = {p.relative_to(vdir).as_posix(): p.read_bytes() for p in vdir.rglob("*") if p.is_file()}
    repo = FakeRepo(repo_id, f"{len(fake.repos) + 1:040x}", {"torch-cpu": files}, {"torch-cpu": dict(files)})
    fake.repos[repo_id] = repo
    return repo


def _rows(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, dict[str, dict[str, str]]]:
    code = main([*argv, "--json"])
    return code, {r["repo_id"]: r for r in json.loads(capsys.readouterr().out)["variants"]}


def test_download_and_verify_refuse_a_signer_other_than_the_locked_one(
    tmp_path: Path, instance: Instance, root: Path, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str], manager: object,
) -> None:
    monkeypatch.setenv("KERNEL_PLUGINS_TRUSTED_ROOT", str(root))
    fake = CachingFakeHub(tmp_path, monkeypatch)
    signed = _repo(fake, tmp_path, "kernels-community/lock-signed", instance)
    unsigned = _repo(fake, tmp_path, "kernels-community/lock-unsigned", None)
    meta = signed.published["torch-cpu"]["metadata.json"]
    signer = signatures.check_bundle(meta, signed.published["torch-cpu"][signatures.BUNDLE_NAME],
                                     variant="torch-cpu", org="kernels-community").signer
    assert signer is not None and signer.startswith(KC)

    def lock(signers: dict[str, str | None]) -> Path:
        return write_lockfile(tmp_path / "proj", [KernelLock(r.repo_id, r.sha, {"torch-cpu": VariantLock(
            variant_hash(r.listing("torch-cpu")), signer=signers[r.repo_id])}, version=1) for r in (signed, unsigned)])

    (tmp_path / "proj").mkdir()
    lock({signed.repo_id: signer, unsigned.repo_id: None})
    for argv in (["download", str(tmp_path / "proj")], ["verify", str(tmp_path / "proj")]):
        code, rows = _rows(capsys, *argv)
        assert code == 0 and {r["status"] for r in rows.values()} == {"ok"}, rows

    # the signed build recorded under someone else's name, the unsigned one as if signed
    lock({signed.repo_id: "https://github.com/other/x (y)", unsigned.repo_id: signer})
    for argv in (["download", str(tmp_path / "proj")], ["verify", str(tmp_path / "proj")]):
        code, rows = _rows(capsys, *argv)
        assert code == 1
        assert "records it as signed by https://github.com/other/x (y)" in rows[signed.repo_id]["detail"]
        assert "now it is signed" in rows[signed.repo_id]["detail"]
        assert f"records it as signed by {signer}" in rows[unsigned.repo_id]["detail"]
        assert "now it is unsigned" in rows[unsigned.repo_id]["detail"]
