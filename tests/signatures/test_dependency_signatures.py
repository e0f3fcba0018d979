"""A kernel's dependencies must be signed as the kernel must: an unsigned one refuses the load."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

import kernel_plugins
from kernel_plugins.errors import KernelDependencyError, SignatureError
from tests.signatures.conftest import kernel, sign_variant
from tests.signatures.instance import Instance


def test_an_unsigned_dependency_of_a_signed_kernel_is_refused(
    tmp_path: Path, instance: Instance, root: Path, manager: object, monkeypatch: pytest.MonkeyPatch,
) -> None:
    base = kernel(tmp_path / "base", name="sigbase")
    depends = [{"repo-id": "kernels-community/sigbase", "version": 1}]
    top = kernel(tmp_path / "top", name="sigtop", metadata={"kernel-depends": depends})
    sign_variant(top, instance)
    sign_variant(base, None)  # a digest, no signature
    monkeypatch.setenv("LOCAL_KERNELS", f"kernels-community/sigbase={tmp_path / 'base'}")
    with pytest.raises(KernelDependencyError, match="depends on kernels-community/sigbase") as e:
        kernel_plugins.load(tmp_path / "top", device="cpu", require_signature=True, trusted_root=root)
    assert isinstance(e.value.__cause__, SignatureError) and "unsigned" in str(e.value)
    assert not [m for m in sys.modules if "_sigtop_" in m or "_sigbase_" in m]
    sign_variant(base, instance)
    module = kernel_plugins.load(tmp_path / "top", device="cpu", require_signature=True,
                                 trusted_root=root)
    assert module.__kernel_provenance__.dependencies[0].signer is not None
