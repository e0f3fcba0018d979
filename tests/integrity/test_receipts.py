"""Hash receipts: a large file is hashed once per identity; a change of any kind hashes it
again; receipts that someone else could have written are ignored."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest

import kernel_plugins
from kernel_plugins.errors import IntegrityError
from kernel_plugins.integrity import receipts
from kernel_plugins.integrity.snapshot import MAX_KEPT_BYTES
from tests.support.owners import give_to_another_user
from tests.support.variant_dirs import write_variant

DATA = bytes(range(256)) * ((MAX_KEPT_BYTES + 4096) // 256)  # large: hashed, not kept in memory
OTHER_UID = 4242


@pytest.fixture
def receipts_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "receipts"
    monkeypatch.setenv(receipts.RECEIPTS_ENV, str(folder))
    monkeypatch.setattr(receipts, "SETTLE_NS", 0)  # files written by the test count as settled
    return folder


def receipt_of(folder: Path, path: Path) -> Path:
    st = os.stat(path)
    return folder / f"{st.st_dev:x}-{st.st_ino:x}.json"


def tamper(receipt: Path) -> None:
    """Keep the receipt's identity, claim other hashes (as a stale receipt would)."""
    data = json.loads(receipt.read_text())
    data["hashes"] = {name: "0" * len(value) for name, value in data["hashes"].items()}
    receipt.write_text(json.dumps(data))


def next_ctime_tick(tmp_path: Path, after_ns: int) -> None:
    """Wait until a file written now gets a status-change time later than ``after_ns``
    (file times are coarse: writes within one tick share a ctime)."""
    probe = tmp_path / "tick"
    for _ in range(1_000_000):
        probe.write_bytes(b"")
        if os.stat(probe).st_ctime_ns > after_ns:
            return
    raise AssertionError("the file system clock did not advance")


def test_a_receipt_replaces_the_rehash_until_the_file_changes(manager, tmp_path, receipts_dir):
    folder = write_variant(tmp_path / "k", {"__init__.py": "VALUE = 1\n", "data.bin": DATA}, digest=True)
    data = folder / "data.bin"
    assert kernel_plugins.load(tmp_path / "k", device="cpu").VALUE == 1
    receipt = receipt_of(receipts_dir, data)
    assert json.loads(receipt.read_text())["hashes"]["sha256"] == hashlib.sha256(DATA).hexdigest()
    assert not [p for p in receipts_dir.iterdir() if p != receipt]  # sources are read anyway: no receipt
    assert receipt.stat().st_mode & 0o077 == 0

    # a matching identity is trusted: the stale hashes it claims are what the digest check sees
    tamper(receipt)
    with pytest.raises(IntegrityError, match="data.bin: content does not match the digest"):
        kernel_plugins.load(tmp_path / "k", device="cpu")
    receipt.unlink()
    kernel_plugins.load(tmp_path / "k", device="cpu")  # hashed again, and a true receipt kept
    before = os.stat(data)

    # same size, mtime set back: only the ctime tells, and it does
    next_ctime_tick(tmp_path, before.st_ctime_ns)
    with open(data, "r+b") as f:
        f.write(b"\xff" * 16)
    os.utime(data, ns=(before.st_atime_ns, before.st_mtime_ns))
    after = os.stat(data)
    assert (after.st_size, after.st_mtime_ns, after.st_ino) == (before.st_size, before.st_mtime_ns, before.st_ino)
    assert after.st_ctime_ns != before.st_ctime_ns
    with pytest.raises(IntegrityError, match="data.bin: content does not match the digest"):
        kernel_plugins.load(tmp_path / "k", device="cpu")


def test_no_receipt_for_a_file_changed_just_now(manager, tmp_path, receipts_dir, monkeypatch):
    monkeypatch.setattr(receipts, "SETTLE_NS", 3600 * 10**9)
    write_variant(tmp_path / "k", {"__init__.py": "VALUE = 1\n", "data.bin": DATA}, digest=True)
    kernel_plugins.load(tmp_path / "k", device="cpu")
    assert not receipts_dir.exists() or not list(receipts_dir.iterdir())


def test_receipts_someone_else_could_have_written_are_ignored(manager, tmp_path, receipts_dir):
    give_to_another_user()  # needs root to chown: skipped elsewhere, never under CI
    folder = write_variant(tmp_path / "k", {"__init__.py": "VALUE = 1\n", "data.bin": DATA}, digest=True)
    kernel_plugins.load(tmp_path / "k", device="cpu")
    receipt = receipt_of(receipts_dir, folder / "data.bin")
    tamper(receipt)
    os.chown(receipt, OTHER_UID, OTHER_UID)  # planted by another user
    assert kernel_plugins.load(tmp_path / "k", device="cpu").VALUE == 1
    os.chown(receipt, 0, 0)
    receipt.chmod(0o666)  # written by root, but others may write it
    assert kernel_plugins.load(tmp_path / "k", device="cpu").VALUE == 1
    receipt.chmod(0o600)
    receipts_dir.chmod(0o777)  # the folder: anyone could have put it there
    assert kernel_plugins.load(tmp_path / "k", device="cpu").VALUE == 1
    receipts_dir.chmod(0o700)
    os.chown(receipts_dir, OTHER_UID, OTHER_UID)
    assert kernel_plugins.load(tmp_path / "k", device="cpu").VALUE == 1
    os.chown(receipts_dir, 0, 0)
    tamper(receipt)  # the loads above hashed the file and wrote a true receipt where they could
    with pytest.raises(IntegrityError, match="does not match the digest"):  # and it was this receipt
        kernel_plugins.load(tmp_path / "k", device="cpu")


def test_the_verify_command_hashes_everything_again(tmp_path, receipts_dir, monkeypatch):
    """``use_receipts=False`` (``kernel-plugins verify``): a receipt cannot hide bit rot."""
    from kernel_plugins.integrity import read_variant

    folder = write_variant(tmp_path / "k", {"__init__.py": "VALUE = 1\n", "data.bin": DATA})
    read_variant(folder)
    tamper(receipt_of(receipts_dir, folder / "data.bin"))
    assert read_variant(folder).files["data.bin"].hashes["sha256"] == "0" * 64
    assert read_variant(folder, use_receipts=False).files["data.bin"].hashes["sha256"] == (
        hashlib.sha256(DATA).hexdigest())
