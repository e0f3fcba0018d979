"""Signatures on load: required or not, every loading path, nothing imported when refused."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from kernel_plugins_testing import run_forked

import kernel_plugins
from kernel_plugins import signatures
from kernel_plugins.cli.main import main
from kernel_plugins.errors import SignatureError
from tests.signatures.conftest import KC, OTHER, kernel, sign_variant
from tests.signatures.instance import GITHUB, Instance
from tests.support.threads import within


def _module_id(vdir: Path) -> str:
    return json.loads((vdir / "metadata.json").read_text())["id"]


def _not_imported(vdir: Path) -> bool:
    kid = _module_id(vdir)
    return not [m for m in sys.modules if kid in m]


def test_signed_local_folder_records_its_signer(tmp_path: Path, instance: Instance, root: Path, manager: object) -> None:
    sign_variant(kernel(tmp_path / "k"), instance)
    mod = kernel_plugins.load(tmp_path / "k", device="cpu", require_signature=True, trusted_root=root)
    assert mod.add_one(1) == 2
    assert mod.__kernel_provenance__.signer == f"{KC} ({GITHUB})"


def test_unsigned_loads_unless_a_signature_is_required(tmp_path: Path, root: Path, manager: object,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    vdir = kernel(tmp_path / "k")
    sign_variant(vdir, None)
    with pytest.raises(SignatureError, match="refused, a signature is required: unsigned") as err:
        kernel_plugins.load(tmp_path / "k", device="cpu", require_signature=True, trusted_root=root)
    assert "torch-cpu" in str(err.value)
    assert _not_imported(vdir)
    monkeypatch.setenv("KERNEL_PLUGINS_REQUIRE_SIGNATURE", "1")
    monkeypatch.setenv("KERNEL_PLUGINS_TRUSTED_ROOT", str(root))
    with pytest.raises(SignatureError, match="unsigned"):
        kernel_plugins.load(tmp_path / "k", device="cpu")
    with pytest.raises(SignatureError, match="unsigned"):
        from kernel_plugins.compat import kernels as compat

        compat.get_local_kernel(tmp_path / "k")
    assert _not_imported(vdir)
    monkeypatch.delenv("KERNEL_PLUGINS_REQUIRE_SIGNATURE")
    mod = kernel_plugins.load(tmp_path / "k", device="cpu")
    assert mod.__kernel_provenance__.signer is None


def test_a_bundle_that_does_not_verify_is_refused_without_the_requirement(
    tmp_path: Path, instance: Instance, root: Path, manager: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    vdir = kernel(tmp_path / "k")
    sign_variant(vdir, instance)
    meta = vdir / "metadata.json"
    meta.write_bytes(meta.read_bytes().replace(b"Apache-2.0", b"Apache-2.1"))  # the digest still matches
    # no trust root available offline: the bundle is not checked, the kernel loads
    mod = kernel_plugins.load(tmp_path / "k", device="cpu")
    assert mod.__kernel_provenance__.signer is None
    vdir2 = kernel(tmp_path / "k2")
    sign_variant(vdir2, instance)
    meta2 = vdir2 / "metadata.json"
    meta2.write_bytes(meta2.read_bytes().replace(b"Apache-2.0", b"Apache-2.1"))
    monkeypatch.setenv("KERNEL_PLUGINS_TRUSTED_ROOT", str(root))
    with pytest.raises(SignatureError, match="its signature bundle does not verify: signature invalid"):
        kernel_plugins.load(tmp_path / "k2", device="cpu")
    assert _not_imported(vdir2)


def test_signer_not_allowed_loads_without_the_requirement(tmp_path: Path, instance: Instance, root: Path,
                                                           manager: object) -> None:
    sign_variant(kernel(tmp_path / "k"), instance, OTHER)
    with signatures.requiring(False, trusted_root=root):
        mod = kernel_plugins.load(tmp_path / "k", device="cpu")
    assert mod.__kernel_provenance__.signer.startswith(OTHER)
    sign_variant(kernel(tmp_path / "k2"), instance, OTHER)
    with pytest.raises(SignatureError, match="signer not allowed"):
        kernel_plugins.load(tmp_path / "k2", device="cpu", require_signature=True, trusted_root=root)


def test_local_kernels_override_keeps_the_organisation(tmp_path: Path, instance: Instance, root: Path,
                                                       manager: object, monkeypatch: pytest.MonkeyPatch) -> None:
    sign_variant(kernel(tmp_path / "k"), instance)
    monkeypatch.setenv("LOCAL_KERNELS", f"evil-org/sigk={tmp_path / 'k'}")
    with signatures.requiring(trusted_root=root), pytest.raises(SignatureError, match="organisation 'evil-org'"):
        kernel_plugins.load("evil-org/sigk", device="cpu")
    sign_variant(kernel(tmp_path / "k2"), instance)
    monkeypatch.setenv("LOCAL_KERNELS", f"kernels-community/sigk={tmp_path / 'k2'}")
    with signatures.requiring(trusted_root=root):
        assert kernel_plugins.load("kernels-community/sigk", device="cpu").__kernel_provenance__.signer


def test_required_offline_without_a_root_says_so(tmp_path: Path, instance: Instance, manager: object,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    from huggingface_hub import constants

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    sign_variant(kernel(tmp_path / "k"), instance)
    with pytest.raises(SignatureError, match="cannot check: no sigstore trust root is cached"):
        kernel_plugins.load(tmp_path / "k", device="cpu", require_signature=True)


def test_cli_load_require_signature(tmp_path: Path, instance: Instance, root: Path, manager: object,
                                    capsys: pytest.CaptureFixture[str]) -> None:
    sign_variant(kernel(tmp_path / "k"), instance)
    code = main(["load", str(tmp_path / "k"), "--require-signature", "--trusted-root", str(root), "--json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert json.loads(out)["provenance"]["signer"].startswith(KC)
    sign_variant(kernel(tmp_path / "u"), None)
    code = main(["load", str(tmp_path / "u"), "--require-signature", "--trusted-root", str(root)])
    out, err = capsys.readouterr()
    assert code == 1 and "error:" in err and "unsigned" in err and "Traceback" not in err


def test_a_plain_load_does_not_import_sigstore(tmp_path: Path, instance: Instance) -> None:
    # unsigned, and signed with no trust root available offline (the environment's sigstore
    # cache is the test's empty one): nothing to check, so sigstore is not imported
    sign_variant(kernel(tmp_path / "k"), None)
    sign_variant(kernel(tmp_path / "s"), instance)
    code = (f"import sys, kernel_plugins; kernel_plugins.load({str(tmp_path / 'k')!r}, device='cpu'); "
            f"m = kernel_plugins.load({str(tmp_path / 's')!r}, device='cpu'); "
            "assert m.__kernel_provenance__.signer is None; assert 'sigstore' not in sys.modules")
    done = run_forked(code)  # a process that has imported torch, nothing else of note
    assert done.returncode == 0, done.stderr[-3000:]


def test_kernelize_requires_the_signature_too(tmp_path: Path, instance: Instance, root: Path,
                                              manager: object) -> None:
    import torch
    from torch import nn

    from kernel_plugins.layers import (
        LocalLayerRepository,
        Mode,
        kernelize,
        use_kernel_forward_from_hub,
        use_kernel_mapping,
    )

    layers = "import torch\n\nclass Twice(torch.nn.Module):\n    def forward(self, x):\n        return x * 2\n"
    for name, inst in (("signed", instance), ("unsigned", None)):
        sign_variant(kernel(tmp_path / name, name=f"tw{name}", code="from . import layers\n",
                            extra_files={"layers.py": layers}), inst)

    @use_kernel_forward_from_hub("Twice")
    class Doubler(nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return x + x

    def run(name: str) -> nn.Module:
        model = nn.Sequential(Doubler())
        repo = LocalLayerRepository(tmp_path / name, layer_name="Twice")
        with use_kernel_mapping({"Twice": {"cpu": repo}}), signatures.requiring(trusted_root=root):
            return kernelize(model, mode=Mode.INFERENCE, device="cpu")

    assert torch.equal(run("signed")(torch.ones(2)), torch.full((2,), 2.0))
    with pytest.raises(SignatureError, match="unsigned"):
        run("unsigned")


def test_a_misspelt_requirement_is_an_error(tmp_path: Path, manager: object, monkeypatch: pytest.MonkeyPatch) -> None:
    sign_variant(kernel(tmp_path / "k"), None)
    monkeypatch.setenv("KERNEL_PLUGINS_REQUIRE_SIGNATURE", "yes")
    with pytest.raises(SignatureError, match="KERNEL_PLUGINS_REQUIRE_SIGNATURE='yes': set it to 1"):
        kernel_plugins.load(tmp_path / "k", device="cpu")


def _within(seconds: float, fifo: Path, call: Callable[[], object]) -> object:
    """``call()``, failing the test when it does not end in ``seconds`` (the FIFO is then
    opened for writing, so that the reader it waits in is let go)."""
    import os

    return within(seconds, call, what=f"still waiting on the FIFO {fifo}",
                  release=lambda: os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)))


@pytest.mark.skipif(not hasattr(__import__("os"), "mkfifo"), reason="needs FIFOs")
def test_a_bundle_that_is_a_fifo_is_refused_at_once(tmp_path: Path, instance: Instance, root: Path,
                                                    manager: object, monkeypatch: pytest.MonkeyPatch,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    import os

    from kernel_plugins.errors import IntegrityError

    vdir = kernel(tmp_path / "k")
    sign_variant(vdir, None)
    fifo = vdir / signatures.BUNDLE_NAME
    os.mkfifo(fifo)
    monkeypatch.setenv("KERNEL_PLUGINS_TRUSTED_ROOT", str(root))  # a bundle is checked
    with pytest.raises(IntegrityError, match="not a regular file"):
        _within(10, fifo, lambda: kernel_plugins.load(tmp_path / "k", device="cpu"))
    assert _not_imported(vdir)
    for command in ("verify-signature", "info"):
        code = _within(10, fifo, lambda c=command: main([c, str(tmp_path / "k"), "--json"]))
        out = json.loads(capsys.readouterr().out)
        assert code == 1 and "not a regular file" in json.dumps(out), (command, out)


def _signed_without_digest(vdir: Path, instance: Instance) -> None:
    """Sign ``vdir``'s metadata.json as kernels-community, leaving it without a digest."""
    raw = (vdir / "metadata.json").read_bytes()
    assert b"digest" not in raw
    (vdir / signatures.BUNDLE_NAME).write_bytes(instance.sign(raw, KC))


def test_a_signed_metadata_without_a_digest_covers_nothing(tmp_path: Path, instance: Instance, root: Path,
                                                           manager: object, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue: the signature covers metadata.json only; without a digest in it any code loaded
    under require_signature, with kernels-community named as its signer."""
    vdir = kernel(tmp_path / "k", code="def add_one(x):\n    return 666\n")
    _signed_without_digest(vdir, instance)
    with pytest.raises(SignatureError, match="digest mismatch: .*no usable digest, so nothing covers the other files"):
        kernel_plugins.load(tmp_path / "k", device="cpu", require_signature=True, trusted_root=root)
    monkeypatch.setenv("LOCAL_KERNELS", f"kernels-community/sigk={tmp_path / 'k'}")
    with signatures.requiring(trusted_root=root), pytest.raises(SignatureError, match="no usable digest"):
        kernel_plugins.load("kernels-community/sigk", device="cpu")
    with signatures.requiring(False, trusted_root=root), pytest.raises(SignatureError, match="no usable digest"):
        kernel_plugins.load(tmp_path / "k", device="cpu")  # checked without the requirement too
    assert _not_imported(vdir)
    # the same rule as verify-signature's
    assert main(["verify-signature", str(tmp_path / "k"), "--trusted-root", str(root)]) == 1


def test_a_signed_hub_build_without_a_digest_is_refused_by_load_and_download(
    tmp_path: Path, instance: Instance, root: Path, manager: object, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    from tests.loading.test_safety_rules import CODE, FakeHub, write_lock

    fake = FakeHub(tmp_path, monkeypatch)
    repo = fake.add("kernels-community/nodigest", {"torch-cpu": CODE})
    bundle = instance.sign(repo.published["torch-cpu"]["metadata.json"], KC)
    for files in (repo.published["torch-cpu"], repo.served["torch-cpu"]):
        files[signatures.BUNDLE_NAME] = bundle
    monkeypatch.setenv("KERNEL_PLUGINS_TRUSTED_ROOT", str(root))
    with signatures.requiring(), pytest.raises(SignatureError, match="no usable digest"):
        kernel_plugins.load(repo.repo_id, device="cpu")
    write_lock(tmp_path / "proj", repo, "torch-cpu")
    monkeypatch.setenv("KERNEL_PLUGINS_REQUIRE_SIGNATURE", "1")
    assert main(["download", str(tmp_path / "proj"), "--json"]) == 1
    assert "no usable digest" in capsys.readouterr().out


def test_lock_records_no_signer_for_a_signed_build_without_a_digest(
    tmp_path: Path, instance: Instance, root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from kernel_plugins import hub
    from kernel_plugins.hub import HubRef

    vdir = kernel(tmp_path / "snap", code="def add_one(x):\n    return 666\n")
    _signed_without_digest(vdir, instance)
    monkeypatch.setattr(hub, "download_file", lambda ref, path: vdir / Path(path).name)  # one GET per file
    monkeypatch.setenv("KERNEL_PLUGINS_TRUSTED_ROOT", str(root))
    ref = HubRef("kernels-community/sigk", "kernel", "v1", "a" * 40, 1)
    with pytest.raises(SignatureError, match="torch-cpu: refused, digest mismatch: .*no usable digest"):
        signatures.lock_signers(ref, {"torch-cpu": {"metadata.json": {}, signatures.BUNDLE_NAME: {}}})
    sign_variant(vdir, instance)  # with its digest, the signer is recorded
    assert signatures.lock_signers(ref, {"torch-cpu": {signatures.BUNDLE_NAME: {}}})["torch-cpu"].startswith(KC)


def test_requiring_holds_in_threads_started_inside_the_block(tmp_path: Path, instance: Instance, root: Path,
                                                             manager: object) -> None:
    """Issue: requiring() was a ContextVar, so a thread pool inside the block (a model loader
    building layers) loaded unsigned code."""
    from concurrent.futures import ThreadPoolExecutor

    sign_variant(kernel(tmp_path / "u"), None)
    sign_variant(kernel(tmp_path / "s"), instance)

    def load(name: str) -> object:
        return kernel_plugins.load(tmp_path / name, device="cpu")

    with signatures.requiring(trusted_root=root), ThreadPoolExecutor(2) as pool:
        unsigned, signed = pool.submit(load, "u"), pool.submit(load, "s")
        with pytest.raises(SignatureError, match="a signature is required: unsigned"):
            unsigned.result()
        assert signed.result().__kernel_provenance__.signer.startswith(KC)  # the block's root too
    with ThreadPoolExecutor(1) as pool:  # the block ended: the requirement with it
        assert pool.submit(load, "u").result().__kernel_provenance__.signer is None
    assert not signatures.signature_required()


def test_a_reference_standing_in_says_the_signature_requirement_was_set_aside(
    tmp_path: Path, manager: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue: the bundled reference (trusted as installed) stood in under a required
    signature, and the warning did not say that the requirement was set aside."""
    from tests.loading.test_safety_rules import FakeHub, cuda_only

    cuda_only(FakeHub(tmp_path, monkeypatch))  # no variant for cpu
    with pytest.warns(UserWarning, match="portable reference kernel") as seen:
        kernel_plugins.load("activation", device="cpu")
    assert "signature" not in str(seen[0].message)
    with pytest.warns(UserWarning, match="A signature was required: the bundled reference kernel is "
                      "trusted as installed, so the requirement was set aside for it"):
        mod = kernel_plugins.load("activation", device="cpu", require_signature=True)
    assert mod.__kernel_provenance__.source == "reference" and mod.__kernel_provenance__.signer is None


def test_the_signed_metadata_bytes_are_the_ones_parsed(tmp_path: Path, instance: Instance, root: Path,
                                                       manager: object, monkeypatch: pytest.MonkeyPatch) -> None:
    """metadata.json is read once: a file swapped on disk right after its signature was
    checked is never what the load parses (its id, its digest, its python-depends)."""
    vdir = kernel(tmp_path / "k")
    signed = sign_variant(vdir, instance)
    swapped = json.loads(signed)
    swapped["id"] = "_swapped_after_the_check"
    real = signatures.on_load

    def check_then_swap(fetched: object, metadata: bytes, res: object = None) -> object:
        signer = real(fetched, metadata, res)  # type: ignore[arg-type]
        (vdir / "metadata.json").write_text(json.dumps(swapped))
        return signer

    monkeypatch.setattr(signatures, "on_load", check_then_swap)
    mod = kernel_plugins.load(tmp_path / "k", device="cpu", require_signature=True, trusted_root=root)
    assert mod.__name__.endswith(json.loads(signed)["id"]) and mod.__kernel_provenance__.signer
    assert json.loads((vdir / "metadata.json").read_text())["id"] == "_swapped_after_the_check"


def test_the_signature_is_checked_before_the_metadata_is_parsed(tmp_path: Path, root: Path, manager: object) -> None:
    """A required-signature load of a metadata.json both unsigned and invalid reports the
    signature: the parser never sees unsigned bytes first."""
    vdir = kernel(tmp_path / "k")
    (vdir / "metadata.json").write_text('{"name": "x", "id": "../../evil", "version": "one"}')
    with pytest.raises(SignatureError, match="a signature is required: unsigned"):
        kernel_plugins.load(tmp_path / "k", device="cpu", require_signature=True, trusted_root=root)
