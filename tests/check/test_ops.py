"""``torch.compile`` claims checked on request: ``kernel_plugins_check.ops`` (opcheck on the
custom operators a layer's forward calls), ``kernel-plugins check --ops`` and
``kernelize(..., check_ops=True)``; the bundled reference kernels pass, a plain load or
kernelize checks nothing."""

from __future__ import annotations

import json
import sys
import uuid
from pathlib import Path

import pytest
import torch
from kernel_plugins_check.ops import check_kernel_ops, check_layer

import kernel_plugins
from kernel_plugins import layers as kl
from kernel_plugins.cli.main import main
from kernel_plugins.errors import LayerError
from kernel_plugins.reference import reference_repo
from tests.lock.conftest import forget_kernel_modules  # noqa: F401 - a fixture

pytestmark = pytest.mark.usefixtures("manager", "forget_kernel_modules")

LAYERS = '''
import torch
from torch import nn

NS = {ns!r}


@torch.library.custom_op(NS + "::scale", mutates_args=())
def scale(x: torch.Tensor) -> torch.Tensor:
    return x * 2


if {fake}:
    @scale.register_fake
    def _(x):
        return torch.empty_like(x)


class Scale(nn.Module):
    can_torch_compile = True
    has_backward = False

    def forward(self, x):
        return scale(x)


class Keyword(nn.Module):
    can_torch_compile = True

    def forward(self, x, *, bias):
        return x + bias


class Eager(nn.Module):
    def forward(self, x):
        return scale(x)
'''


def scale_kernel(root: Path, *, fake: bool) -> Path:
    """A kernel whose ``Scale`` layer calls a custom op, with or without a fake kernel."""
    kid = f"_ops_check_{uuid.uuid4().hex[:10]}"
    variant = root / "build" / "torch-cpu"
    variant.mkdir(parents=True)
    (variant / "metadata.json").write_text(json.dumps({
        "name": "ops-check", "id": kid, "version": 1, "license": "MIT", "python-depends": [],
        "backend": {"type": "cpu"}}))
    (variant / "__init__.py").write_text("from . import layers\n")
    (variant / "layers.py").write_text(LAYERS.format(ns=kid, fake=fake))
    return root


@pytest.mark.parametrize("name", ["activation", "rmsnorm", "rotary"])
def test_every_layer_of_the_bundled_reference_kernels_passes(name: str) -> None:
    kernel = kernel_plugins.load(reference_repo(name), device="cpu")
    results = check_kernel_ops(kernel)
    claimed = sorted(n for n, c in vars(kernel.layers).items()
                     if isinstance(c, type) and getattr(c, "can_torch_compile", False))
    assert [r.layer for r in results] == claimed and claimed
    assert all(r.ok for r in results), [r.summary() for r in results if not r.ok]
    assert all(r.ops for r in results)  # each calls the kernel's own custom operators


def test_an_op_without_a_fake_kernel_fails_naming_the_op_and_the_test(tmp_path: Path) -> None:
    kernel = kernel_plugins.load(scale_kernel(tmp_path / "k", fake=False), device="cpu")
    result = check_layer(kernel.layers.Scale)
    assert not result.ok and [o.op.rsplit("::", 1)[1] for o in result.ops] == ["scale"]
    assert "test_faketensor" in result.ops[0].failed
    assert "fails torch.library.opcheck: op _ops_check_" in result.summary()
    assert "::scale failed test_faketensor" in result.summary()
    good = kernel_plugins.load(scale_kernel(tmp_path / "g", fake=True), device="cpu")
    assert check_layer(good.layers.Scale).ok


def test_a_forward_without_samples_is_not_checked(tmp_path: Path) -> None:
    kernel = kernel_plugins.load(scale_kernel(tmp_path / "k", fake=True), device="cpu")
    result = check_layer(kernel.layers.Keyword)
    assert not result.ok and "keyword-only parameter `bias`" in str(result.problem)
    assert result.summary().startswith("torch.compile claim not checked: no sample inputs")
    assert [r.layer for r in check_kernel_ops(kernel)] == ["Keyword", "Scale"]  # not Eager


def _model() -> torch.nn.Module:
    @kl.use_kernel_forward_from_hub("Scale")
    class Scale(torch.nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return x * 2

    return Scale()


COMPILE = kl.Mode.INFERENCE | kl.Mode.TORCH_COMPILE


def test_kernelize_refuses_a_failing_layer_for_torch_compile_when_asked(tmp_path: Path) -> None:
    repo = kl.LocalLayerRepository(scale_kernel(tmp_path / "k", fake=False), layer_name="Scale")
    model = _model()
    with kl.use_kernel_mapping({"Scale": {"cpu": repo}}):
        with pytest.raises(LayerError, match="::scale failed test_faketensor"):
            kl.kernelize(model, mode=COMPILE, device="cpu", use_fallback=False, check_ops=True)
        with pytest.warns(UserWarning, match="nothing was replaced"):
            kl.kernelize(model, mode=COMPILE, device="cpu", check_ops=True)
        choice = kl.kernel_choice(model)
        assert choice is not None and not choice.uses_kernel
        assert any("failed test_faketensor" in s for s in choice.skipped)
        prov = kernel_plugins.loaded_kernels()[-1]  # the kernel was loaded, then refused
        assert "failed test_faketensor" in prov.op_checks["Scale"]
        assert "failed test_faketensor" in prov.to_dict()["op_checks"]["Scale"]  # type: ignore[index]
        kl.kernelize(model, mode=kl.Mode.INFERENCE, device="cpu", check_ops=True)  # not compiling
        assert kl.kernel_choice(model).uses_kernel  # type: ignore[union-attr]


def test_kernelize_uses_a_layer_that_passes_and_records_it(tmp_path: Path) -> None:
    repo = kl.LocalLayerRepository(scale_kernel(tmp_path / "k", fake=True), layer_name="Scale")
    model = _model()
    with kl.use_kernel_mapping({"Scale": {"cpu": repo}}):
        kl.kernelize(model, mode=COMPILE, device="cpu", use_fallback=False, check_ops=True)
    choice = kl.kernel_choice(model)
    assert choice is not None and choice.uses_kernel
    assert choice.provenance.op_checks["Scale"].startswith("passed torch.library.opcheck: ops _ops_check_")


def test_the_check_is_opt_in(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A plain load and a TORCH_COMPILE kernelize run no opcheck and import no checker."""
    monkeypatch.delitem(sys.modules, "kernel_plugins_check.ops", raising=False)

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("opcheck ran")

    monkeypatch.setattr(torch.library, "opcheck", refuse)
    repo = kl.LocalLayerRepository(scale_kernel(tmp_path / "k", fake=False), layer_name="Scale")
    model = _model()
    with kl.use_kernel_mapping({"Scale": {"cpu": repo}}):
        kl.kernelize(model, mode=COMPILE, device="cpu", use_fallback=False)
    assert kl.kernel_choice(model).uses_kernel  # type: ignore[union-attr]
    assert kl.kernel_choice(model).provenance.op_checks == {}  # type: ignore[union-attr]
    assert "kernel_plugins_check.ops" not in sys.modules


def test_the_command_exits_1_naming_the_op_and_the_test(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = scale_kernel(tmp_path / "k", fake=False)
    assert main(["check", "--ops", str(bad)]) == 1
    out = capsys.readouterr().out
    assert "Scale: torch.compile claim fails torch.library.opcheck: op _ops_check_" in out
    assert "Keyword: torch.compile claim not checked" in out
    assert "failed: 2 layer(s) claim can_torch_compile" in out
    assert main(["check", "--ops", "--json", str(bad)]) == 1
    doc = json.loads(capsys.readouterr().out)
    assert doc["ok"] is False and {r["layer"]: r["ok"] for r in doc["layers"]} == {
        "Keyword": False, "Scale": False}
    assert main(["check", "--ops", str(reference_repo("rmsnorm"))]) == 0
    assert "RMSNorm: passed torch.library.opcheck" in capsys.readouterr().out
