"""Each outcome of the signature check, through ``kernel-plugins verify-signature`` and the API.

The bundles are real ones from the test suite's own Sigstore instance; sigstore's
``Verifier`` checks them unpatched against its ``trusted_root.json``.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from kernel_plugins import signatures
from kernel_plugins.cli.main import main
from kernel_plugins.errors import SignatureError
from tests.signatures.conftest import KC, OTHER, kernel, sign_variant
from tests.signatures.instance import GITHUB, Instance


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def _json(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, dict]:
    code, out, err = _run(capsys, *argv, "--json")
    return code, json.loads(out)


@pytest.fixture
def signed(tmp_path: Path, instance: Instance) -> Path:
    vdir = kernel(tmp_path / "k")
    sign_variant(vdir, instance)
    return tmp_path / "k"


def test_signed_by_the_default_policy_passes(signed: Path, root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = _run(capsys, "verify-signature", str(signed), "--trusted-root", str(root))
    assert code == 0, out + err
    assert f"torch-cpu: signed: signed by {KC} ({GITHUB}); files match the digest" in out
    code, doc = _json(capsys, "verify-signature", str(signed), "--trusted-root", str(root))
    assert code == 0 and doc["failed"] == 0
    assert doc["variants"][0]["state"] == "signed" and doc["variants"][0]["signer"].startswith(KC)


def test_trusted_root_from_the_environment(signed: Path, root: Path, capsys: pytest.CaptureFixture[str],
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KERNEL_PLUGINS_TRUSTED_ROOT", str(root))
    code, doc = _json(capsys, "verify-signature", str(signed))
    assert code == 0 and doc["variants"][0]["state"] == "signed"


def test_metadata_changed_by_one_byte(signed: Path, root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    meta = signed / "build/torch-cpu/metadata.json"
    raw = bytearray(meta.read_bytes())
    raw[raw.index(b'"version": 1') + 11] = ord("2")
    meta.write_bytes(bytes(raw))
    code, doc = _json(capsys, "verify-signature", str(signed), "--trusted-root", str(root))
    assert code == 1
    row = doc["variants"][0]
    assert row["state"] == "signature invalid" and "torch-cpu" == row["variant"]
    assert "changed after signing" in row["detail"] and "do not use this build" in row["detail"]


def test_file_changed_by_one_byte(signed: Path, root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code_file = signed / "build/torch-cpu/__init__.py"
    code_file.write_bytes(code_file.read_bytes().replace(b"+ 1", b"+ 2"))
    code, doc = _json(capsys, "verify-signature", str(signed), "--trusted-root", str(root))
    assert code == 1
    row = doc["variants"][0]
    assert row["state"] == "digest mismatch" and "__init__.py" in row["detail"]
    assert row["signer"].startswith(KC)  # the signature itself is fine


def test_an_added_file_is_a_digest_mismatch(signed: Path, root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (signed / "build/torch-cpu/extra.py").write_text("import os\n")
    code, doc = _json(capsys, "verify-signature", str(signed), "--trusted-root", str(root))
    assert code == 1 and doc["variants"][0]["state"] == "digest mismatch"
    assert "extra.py" in doc["variants"][0]["detail"]


def test_bundle_copied_from_another_variant(tmp_path: Path, instance: Instance, root: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    cpu, cuda = kernel(tmp_path / "k", "torch-cpu"), kernel(tmp_path / "k", "torch-cuda")
    sign_variant(cpu, instance)
    sign_variant(cuda, instance)
    shutil.copy(cuda / signatures.BUNDLE_NAME, cpu / signatures.BUNDLE_NAME)
    code, doc = _json(capsys, "verify-signature", str(tmp_path / "k"), "--all-variants", "--trusted-root", str(root))
    assert code == 1
    states = {r["variant"]: r["state"] for r in doc["variants"]}
    assert states == {"torch-cpu": "signature invalid", "torch-cuda": "signed"}


def test_signer_outside_the_policy(tmp_path: Path, instance: Instance, root: Path,
                                   capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    sign_variant(kernel(tmp_path / "k"), instance, OTHER)
    code, doc = _json(capsys, "verify-signature", str(tmp_path / "k"), "--trusted-root", str(root))
    assert code == 1
    row = doc["variants"][0]
    assert row["state"] == "signer not allowed" and OTHER in row["detail"] and "--add-cert-identity" in row["detail"]
    args = ["verify-signature", str(tmp_path / "k"), "--trusted-root", str(root)]
    for flag in ("--cert-identity", "--add-cert-identity"):  # required, or added to the policy
        code, doc = _json(capsys, *args, flag, OTHER, flag.replace("identity", "oidc-issuer"), GITHUB)
        assert code == 0 and doc["variants"][0]["state"] == "signed"
        code, doc = _json(capsys, *args, flag, OTHER, flag.replace("identity", "oidc-issuer"),
                          "https://accounts.google.com")
        assert code == 1, "the issuer is part of the signer"
    for prefix in ("CERT", "ADD_CERT"):
        monkeypatch.setenv(f"KERNEL_PLUGINS_{prefix}_IDENTITY", OTHER)
        monkeypatch.setenv(f"KERNEL_PLUGINS_{prefix}_OIDC_ISSUER", GITHUB)
        code, doc = _json(capsys, *args)
        assert code == 0
        monkeypatch.delenv(f"KERNEL_PLUGINS_{prefix}_IDENTITY")
        monkeypatch.delenv(f"KERNEL_PLUGINS_{prefix}_OIDC_ISSUER")


def test_cert_identity_requires_that_signer_as_sigstore_does(
    signed: Path, root: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue: ``--cert-identity X --cert-oidc-issuer I`` passed a build signed by the default
    kernels-community identity; in sigstore's CLI these flags name the signer required."""
    args = ["verify-signature", str(signed), "--trusted-root", str(root)]
    code, doc = _json(capsys, *args, "--cert-identity", OTHER, "--cert-oidc-issuer", GITHUB)
    row = doc["variants"][0]
    assert code == 1 and row["state"] == "signer not allowed"
    assert f"which the signer required ({OTHER} ({GITHUB})) does not allow" in row["detail"]
    code, doc = _json(capsys, *args, "--add-cert-identity", OTHER, "--add-cert-oidc-issuer", GITHUB)
    assert code == 0  # added: the default policy still holds
    monkeypatch.setenv("KERNEL_PLUGINS_CERT_IDENTITY", OTHER)
    monkeypatch.setenv("KERNEL_PLUGINS_CERT_OIDC_ISSUER", GITHUB)
    code, doc = _json(capsys, *args)
    assert code == 1 and doc["variants"][0]["state"] == "signer not allowed"
    raw = (signed / "build/torch-cpu/metadata.json").read_bytes()
    bundle = (signed / "build/torch-cpu" / signatures.BUNDLE_NAME).read_bytes()
    monkeypatch.delenv("KERNEL_PLUGINS_CERT_IDENTITY")
    monkeypatch.delenv("KERNEL_PLUGINS_CERT_OIDC_ISSUER")
    only = [signatures.Signer(OTHER, GITHUB)]
    assert not signatures.check_bundle(raw, bundle, variant="v", org=None, trusted_root=root,
                                       required_signers=only).ok
    assert signatures.check_bundle(raw, bundle, variant="v", org=None, trusted_root=root, extra_signers=only).ok


def test_another_trust_root_refuses(signed: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    other = Instance("elsewhere").write_root(tmp_path / "other_root.json")
    code, doc = _json(capsys, "verify-signature", str(signed), "--trusted-root", str(other))
    assert code == 1 and doc["variants"][0]["state"] == "signature invalid"
    assert "other_root.json" in doc["variants"][0]["detail"]


def test_org_binding(instance: Instance, root: Path) -> None:
    raw = b'{"name": "x"}'
    bundle = instance.sign(raw, KC)

    def state(org: str | None, **kw: object) -> str:
        return signatures.check_bundle(raw, bundle, variant="v", org=org, trusted_root=root, **kw).state  # type: ignore[arg-type]

    assert state("kernels-community") == "signed"
    assert state(None) == "signed"  # a local folder has no organisation
    assert state("evil-org") == "signer not allowed"  # kernels-community's workflow vouches for its own org
    own = instance.sign(raw, OTHER)
    mine = signatures.Signer(OTHER, GITHUB, ("someone",))
    for org, expected in (("someone", "signed"), ("kernels-community", "signer not allowed")):
        res = signatures.check_bundle(raw, own, variant="v", org=org, trusted_root=root, extra_signers=[mine])
        assert res.state == expected, org
    signatures.add_signer(OTHER, GITHUB)  # no organisations: any
    assert signatures.check_bundle(raw, own, variant="v", org="kernels-community", trusted_root=root).ok


def test_reusable_workflow_from_another_repository_is_refused(instance: Instance, root: Path) -> None:
    # kernels-community's workflow file called from someone else's repository
    raw = b"{}"
    bundle = instance.sign(raw, KC, repository="https://github.com/evil/fork")
    res = signatures.check_bundle(raw, bundle, variant="v", org="kernels-community", trusted_root=root)
    assert res.state == "signer not allowed"


def test_unsigned(tmp_path: Path, root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    sign_variant(kernel(tmp_path / "k"), None)
    code, out, err = _run(capsys, "verify-signature", str(tmp_path / "k"), "--trusted-root", str(root))
    assert code == 1
    assert "FAILED: unsigned: no metadata.json.sigstore" in out and "1 checked, 1 failed" in out


def test_filter_unsigned_and_filter_no_digest_skip_as_kernels_does(
        tmp_path: Path, instance: Instance, root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    sign_variant(kernel(tmp_path / "u"), None)
    code, out, err = _run(capsys, "verify-signature", str(tmp_path / "u"), "--trusted-root", str(root),
                          "--filter-unsigned")
    assert code == 0 and "unsigned: no metadata.json.sigstore" in out and "(skipped)" in out
    assert "0 checked, 0 failed" in out
    # signed, but metadata.json has no digest: a failure unless --filter-no-digest
    vdir = kernel(tmp_path / "n")
    raw = (vdir / "metadata.json").read_bytes()
    (vdir / signatures.BUNDLE_NAME).write_bytes(instance.sign(raw, KC))
    args = ["verify-signature", str(tmp_path / "n"), "--trusted-root", str(root)]
    code, doc = _json(capsys, *args)
    assert code == 1 and doc["variants"][0]["state"] == "digest mismatch"
    assert "no usable digest" in doc["variants"][0]["detail"]
    code, doc = _json(capsys, *args, "--filter-no-digest")
    assert code == 0 and doc["variants"][0]["status"] == "skipped" and doc["checked"] == 0
    code, doc = _json(capsys, *args, "--filter-unsigned")  # each filter skips its own case only
    assert code == 1 and doc["failed"] == 1


def test_filter_no_digest_still_fails_files_that_differ_from_the_digest(
        signed: Path, root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code_file = signed / "build/torch-cpu/__init__.py"
    code_file.write_bytes(code_file.read_bytes().replace(b"+ 1", b"+ 2"))
    code, doc = _json(capsys, "verify-signature", str(signed), "--trusted-root", str(root),
                      "--filter-no-digest", "--filter-unsigned")
    assert code == 1 and doc["variants"][0]["status"] == "failed"


def test_the_version_is_given_once(signed: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for extra in (["--version", "1"], ["--revision", "main"]):
        code, out, err = _run(capsys, "verify-signature", "kernels-community/x", "1", *extra)
        assert code == 2 and "give the version once" in err


def test_broken_and_huge_bundles(signed: Path, root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bundle = signed / "build/torch-cpu" / signatures.BUNDLE_NAME
    for content, fragment in ((b"\x00not json", "is not a sigstore bundle"),
                              (b'{"mediaType": "x"}', "is not a sigstore bundle"),
                              (b" " * (signatures.MAX_BUNDLE_BYTES + 1), "larger than")):
        bundle.write_bytes(content)
        code, out, err = _run(capsys, "verify-signature", str(signed), "--trusted-root", str(root))
        assert code == 1 and "bundle invalid" in out and fragment in out, out
        assert "Traceback" not in out + err


def test_bad_trust_root_files(signed: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "root.json"
    for content, fragment in (("not json {", "cannot be read as JSON"),
                              ('{"mediaType": "something else"}', "not a sigstore trusted_root.json")):
        bad.write_text(content)
        code, out, err = _run(capsys, "verify-signature", str(signed), "--trusted-root", str(bad))
        assert code == 1 and fragment in out + err and "Traceback" not in out + err
    code, out, err = _run(capsys, "verify-signature", str(signed), "--trusted-root", str(tmp_path / "missing.json"))
    assert code == 1 and "missing.json" in out + err and "Traceback" not in err


def test_identity_without_issuer(signed: Path, root: Path, capsys: pytest.CaptureFixture[str],
                                 monkeypatch: pytest.MonkeyPatch) -> None:
    code, out, err = _run(capsys, "verify-signature", str(signed), "--cert-identity", OTHER)
    assert code == 2 and "--cert-identity and --cert-oidc-issuer go together" in err
    code, out, err = _run(capsys, "verify-signature", str(signed), "--cert-identity", OTHER,
                          "--cert-oidc-issuer", "token.actions.githubusercontent.com")
    assert code == 1 and "is not an https:// URL" in out + err and "Traceback" not in err
    monkeypatch.setenv("KERNEL_PLUGINS_CERT_IDENTITY", OTHER)
    with pytest.raises(SignatureError, match="KERNEL_PLUGINS_CERT_OIDC_ISSUER go together"):
        signatures.signers()
    with pytest.raises(SignatureError, match="needs an identity and an OIDC issuer"):
        signatures.Signer(OTHER, "")


def test_cannot_check_offline_without_a_cached_root(signed: Path, capsys: pytest.CaptureFixture[str],
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    from huggingface_hub import constants

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    code, doc = _json(capsys, "verify-signature", str(signed))
    assert code == 1
    row = doc["variants"][0]
    assert row["state"] == "cannot check" and "no sigstore trust root is cached" in row["detail"]
    assert "--trusted-root" in row["detail"]


def test_a_cached_root_is_used_without_the_network(signed: Path, instance: Instance) -> None:
    from sigstore._internal.tuf import DEFAULT_TUF_URL, _get_dirs

    raw = (signed / "build/torch-cpu/metadata.json").read_bytes()
    bundle = (signed / "build/torch-cpu" / signatures.BUNDLE_NAME).read_bytes()
    res = signatures.check_bundle(raw, bundle, variant="v", org=None, fetch=False)
    assert res.state == "cannot check"
    cache = _get_dirs(DEFAULT_TUF_URL)[1]
    assert signatures._cached_root() == cache / "trusted_root.json"  # sigstore's own layout
    cache.mkdir(parents=True)
    instance.write_root(cache / "trusted_root.json")
    signatures._public_good.cache_clear()
    assert signatures.check_bundle(raw, bundle, variant="v", org=None, fetch=False).ok


def test_sigstore_missing_names_the_install(signed: Path, root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "sigstore", None)
    raw = (signed / "build/torch-cpu/metadata.json").read_bytes()
    res = signatures.check_bundle(raw, b"{}", variant="v", org=None, trusted_root=root)
    assert res.state == "cannot check" and "pip install 'sigstore>=4,<5'" in res.detail


def test_importing_kernel_plugins_does_not_import_sigstore() -> None:
    code = "import sys, kernel_plugins, kernel_plugins.signatures; assert 'sigstore' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True)


def test_help_lists_the_new_commands(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["--help"])
    out = capsys.readouterr().out
    for command in ("verify-signature", "info", "versions"):
        assert f"\n    {command}" in out


def test_versions_needs_a_hub_repository(signed: Path, capsys: pytest.CaptureFixture[str],
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    code, out, err = _run(capsys, "versions", str(signed))
    assert code == 1 and "is a local folder; versions are branches of a Hub repository" in err
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    code, out, err = _run(capsys, "versions", "kernels-community/activation")
    assert code == 1 and "HF_HUB_OFFLINE=1 is set" in err and "Traceback" not in err


def test_a_trust_root_others_could_have_written_is_refused(signed: Path, root: Path, tmp_path: Path,
                                                           manager: object) -> None:
    """Issue: a world-writable root, another user's, a link to one, or a 40 MB file were used
    (or read whole) without a word; the lock file's rules apply to it."""
    import os

    import kernel_plugins

    raw = (signed / "build/torch-cpu/metadata.json").read_bytes()
    bundle = (signed / "build/torch-cpu" / signatures.BUNDLE_NAME).read_bytes()

    def check(path: Path) -> signatures.SignatureCheck:
        return signatures.check_bundle(raw, bundle, variant="v", org=None, trusted_root=path)

    assert check(root).ok
    link = tmp_path / "link.json"
    link.symlink_to(root)
    with pytest.raises(SignatureError, match="link.json: refusing it: it is a symbolic link"):
        check(link)
    os.chmod(root, 0o666)
    with pytest.raises(SignatureError, match="refusing it: group or others may write it"):
        check(root)
    with pytest.raises(SignatureError, match="group or others may write it"):  # loads too
        kernel_plugins.load(signed, device="cpu", require_signature=True, trusted_root=root)
    os.chmod(root, 0o644)
    if os.getuid() == 0:  # only root can give a file away
        os.chown(root, 4242, -1)
        with pytest.raises(SignatureError, match="owned by user id 4242, not by you"):
            check(root)
        os.chown(root, 0, -1)
    huge = tmp_path / "huge.json"
    huge.write_bytes(b" " * (signatures.MAX_ROOT_BYTES + 1))
    with pytest.raises(SignatureError, match="larger than the .* allowed"):
        check(huge)


@pytest.mark.parametrize("identity", [
    "https://github.com/huggingface/kernels-community/.github/workflows/evil.yaml@refs/heads/main",
    "https://github.com/huggingface/kernels-community/.github/workflows/build.yaml@refs/heads/pr-1",
])
def test_another_workflow_of_kernels_community_is_not_its_signer(instance: Instance, root: Path, identity: str) -> None:
    """The whole identity is checked, not only the issuer and the repository: another
    workflow (or branch) of huggingface/kernels-community is not its build workflow."""
    raw = b'{"name": "x"}'
    res = signatures.check_bundle(raw, instance.sign(raw, identity), variant="v", org="kernels-community",
                                  trusted_root=root)
    assert res.state == "signer not allowed" and identity in res.detail
