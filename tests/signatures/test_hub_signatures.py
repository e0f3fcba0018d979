"""Signed kernels served by the loopback Hub (olah): verify-signature, info, versions, load."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

import kernel_plugins
from kernel_plugins import signatures
from kernel_plugins.cli.main import main
from kernel_plugins.errors import IntegrityError, SignatureError
from tests.signatures.conftest import KC, kernel, sign_variant
from tests.signatures.instance import Instance
from tests.support.hub import HubServer, make_kernel_repo


def _files(vdir: Path) -> dict[str, str | bytes]:
    return {p.relative_to(vdir).as_posix(): p.read_bytes() for p in vdir.rglob("*") if p.is_file()}


def _build(tmp: Path, instance: Instance | None, name: str, **kw: object) -> dict[str, dict[str, str | bytes]]:
    vdir = kernel(tmp / name, name=name)
    sign_variant(vdir, instance, **kw)  # type: ignore[arg-type]
    return {"torch-cpu": _files(vdir)}


@pytest.fixture
def served(hub_env: HubServer, tmp_path: Path, instance: Instance) -> dict[str, str]:
    """kernels-community/sigk (v1 signed, v2 signed with a changed file), tests-org/sigcopy
    (kernels-community's signed build re-uploaded elsewhere), tests-org/unsig (unsigned)."""
    uid = tmp_path.name[-8:].replace("-", "").replace("_", "")
    good = _build(tmp_path, instance, f"sigk{uid}")
    repo = make_kernel_repo(hub_env, f"kernels-community/sigk{uid}", variants=good, branches=("v1",))
    bad = {"torch-cpu": {**good["torch-cpu"], "__init__.py": b"def add_one(x):\n    return x + 2\n"}}
    repo.write_files(bad["torch-cpu"], prefix="build/torch-cpu/")
    repo.commit("v2")
    repo.branch("v2")
    make_kernel_repo(hub_env, f"tests-org/sigcopy{uid}", variants=good)
    make_kernel_repo(hub_env, f"tests-org/unsig{uid}", variants=_build(tmp_path, None, f"unsig{uid}"))
    return {"good": f"kernels-community/sigk{uid}", "copy": f"tests-org/sigcopy{uid}",
            "unsigned": f"tests-org/unsig{uid}", "name": f"sigk{uid}"}


def _json(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, dict]:
    code = main([*argv, "--json"])
    out, err = capsys.readouterr()
    return code, json.loads(out)


def test_verify_signature_on_the_hub(served: dict[str, str], root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, doc = _json(capsys, "verify-signature", served["good"], "--version", "1", "--trusted-root", str(root))
    assert code == 0, doc
    assert doc["variants"][0]["state"] == "signed" and doc["variants"][0]["signer"].startswith(KC)
    code, doc = _json(capsys, "verify-signature", served["good"], "--version", "2", "--trusted-root", str(root))
    assert code == 1 and doc["variants"][0]["state"] == "digest mismatch"
    # kernels' positional form: REPO VERSION
    for version, state in (("1", "signed"), ("2", "digest mismatch")):
        code, doc = _json(capsys, "verify-signature", served["good"], version, "--trusted-root", str(root))
        assert doc["variants"][0]["state"] == state and doc["target"].endswith(f"(v{version})"), doc
    code, doc = _json(capsys, "verify-signature", served["copy"], "--trusted-root", str(root))
    assert code == 1 and doc["variants"][0]["state"] == "signer not allowed"
    assert "organisation 'tests-org'" in doc["variants"][0]["detail"]
    code, doc = _json(capsys, "verify-signature", served["unsigned"], "--trusted-root", str(root))
    assert code == 1 and doc["variants"][0]["state"] == "unsigned"


def test_info_and_versions(served: dict[str, str], root: Path, capsys: pytest.CaptureFixture[str],
                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KERNEL_PLUGINS_TRUSTED_ROOT", str(root))
    code, doc = _json(capsys, "info", served["good"], "--version", "1")
    assert code == 0
    assert (doc["name"], doc["version"], doc["license"]) == (served["name"], 1, "Apache-2.0")
    assert doc["variants"] == ["torch-cpu"] and doc["variant_for_device"] == "torch-cpu"
    assert doc["functions"] == ["add_one"] and doc["layers"] == [] and doc["python_depends"] == []
    assert doc["digest"] == "files match the digest" and doc["signature"]["state"] == "signed"
    code, doc = _json(capsys, "info", served["good"], "--version", "2")
    assert doc["digest"].startswith("the files do not match its digest: __init__.py")
    code, doc = _json(capsys, "versions", served["good"])
    assert code == 0
    assert [(v["branch"], v["variants"], v["for_device"]) for v in doc["versions"]] == [
        ("v1", ["torch-cpu"], ["torch-cpu"]), ("v2", ["torch-cpu"], ["torch-cpu"])]
    assert len({v["sha"] for v in doc["versions"]}) == 2
    assert main(["versions", served["good"]]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("v1 ") and lines[0].endswith(": cpu: torch-cpu") and lines[1].startswith("v2 ")


def test_load_requiring_a_signature(served: dict[str, str], root: Path, manager: object) -> None:
    with signatures.requiring(trusted_root=root):
        mod = kernel_plugins.load(served["good"], version=1, device="cpu")
        assert mod.__kernel_provenance__.signer.startswith(KC)
        with pytest.raises(IntegrityError, match="digest"):
            kernel_plugins.load(served["good"], version=2, device="cpu")
        for repo, fragment in (("copy", "signer not allowed"), ("unsigned", "unsigned")):
            with pytest.raises(SignatureError, match=fragment):
                kernel_plugins.load(served[repo], device="cpu", trust_remote_code=True)
    assert not [m for m in sys.modules if "unsig" in m]
    # without the requirement the unsigned kernel and the foreign-signed copy load
    plain = kernel_plugins.load(served["unsigned"], device="cpu", trust_remote_code=True)
    assert plain.__kernel_provenance__.signer is None


def test_lock_records_signers_and_refuses_a_change(served: dict[str, str], root: Path, tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str],
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.lock.conftest import write_pyproject

    monkeypatch.setenv("KERNEL_PLUGINS_TRUSTED_ROOT", str(root))
    project = write_pyproject(tmp_path / "proj", {served["good"]: 1, served["unsigned"]: 1})
    assert main(["lock", str(project)]) == 0, capsys.readouterr().err
    lockfile = project / "kernels.lock.variants"  # the signers are beside kernels.lock
    entries = {e["repo_id"]: e for e in json.loads(lockfile.read_text())}
    assert entries[served["good"]]["variants"]["torch-cpu"]["signer"].startswith(KC)
    assert "signer" not in entries[served["unsigned"]]["variants"]["torch-cpu"]
    capsys.readouterr()
    assert main(["download", str(project), "--trust-remote-code"]) == 0, capsys.readouterr().out
    assert main(["verify", str(project)]) == 0, capsys.readouterr().out
    capsys.readouterr()
    monkeypatch.setenv("KERNEL_PLUGINS_REQUIRE_SIGNATURE", "1")  # download refuses the unsigned one
    assert main(["download", str(project), "--trust-remote-code", "--json"]) == 1
    rows = {r["repo_id"]: r for r in json.loads(capsys.readouterr().out)["variants"]}
    assert rows[served["good"]]["status"] == "ok" and "a signature is required: unsigned" in rows[served["unsigned"]]["detail"]
    monkeypatch.delenv("KERNEL_PLUGINS_REQUIRE_SIGNATURE")
    # the unsigned build pinned as if it had been signed: download and verify refuse it
    entries[served["unsigned"]]["variants"]["torch-cpu"]["signer"] = f"{KC} (x)"
    # and the signed one recorded under someone else's name
    entries[served["good"]]["variants"]["torch-cpu"]["signer"] = "https://github.com/other/x (y)"
    lockfile.write_text(json.dumps(list(entries.values())))
    for argv in (["download", str(project), "--trust-remote-code", "--json"], ["verify", str(project), "--json"]):
        assert main(argv) == 1
        rows = {r["repo_id"]: r for r in json.loads(capsys.readouterr().out)["variants"]}
        assert "now it is unsigned" in rows[served["unsigned"]]["detail"]
        assert "records it as signed by https://github.com/other/x (y)" in rows[served["good"]]["detail"]
        assert "now it is signed" in rows[served["good"]]["detail"]
