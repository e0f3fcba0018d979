"""Advice names arguments that exist where it is printed; install and emulation promises hold."""

from __future__ import annotations

import inspect
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from kernel_plugins_testing import run_forked

ROOT = Path(__file__).resolve().parents[2]


def _fresh_python(code: str, tmp_path: Path, *, spawn: bool = False, **env: str) -> subprocess.CompletedProcess[str]:
    """``code`` in a fresh interpreter, forked from one that imported torch unless ``spawn``
    (for what happens when torch is imported)."""
    env = {"HF_HOME": str(tmp_path / "hf"), "KERNEL_PLUGINS_REFERENCE_CACHE": str(tmp_path / "reference"), **env}
    if not spawn:
        return run_forked(textwrap.dedent(code), env, 600, cwd=ROOT)
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], cwd=ROOT, env={**os.environ, **env},
                          capture_output=True, text=True, timeout=600, check=False)


# -- advice: every argument a message advises exists in the caller that printed it --------


def _advised(message: str) -> set[str]:
    """Keyword arguments a message advises (``pass name=value``)."""
    return set(re.findall(r"\b([a-z_]+)=(?:True|'[a-z]+')", message))


def _callers() -> dict[str, Any]:
    import kernel_plugins
    import kernel_plugins.compat.kernels as compat
    from kernel_plugins import layers

    return {
        "load": kernel_plugins.load, "kernelize": layers.kernelize,
        "LayerRepository": layers.LayerRepository, "FuncRepository": layers.FuncRepository,
        "LockedLayerRepository": layers.LockedLayerRepository,
        "compat.get_kernel": compat.get_kernel, "compat.kernelize": compat.kernelize,
        "compat.LayerRepository": compat.LayerRepository,
    }


def test_the_trust_advice_names_an_argument_of_every_loading_caller() -> None:
    from kernel_plugins.errors import TrustError
    from kernel_plugins.trust import check_trusted

    with pytest.raises(TrustError) as refused:
        check_trusted("acme/activation")
    assert _advised(str(refused.value)) == {"trust_remote_code"}
    for where, caller in _callers().items():
        if where != "compat.kernelize":  # as in kernels: trust goes on its repositories
            assert "trust_remote_code" in inspect.signature(caller).parameters, where


def test_the_fallback_advice_names_an_argument_of_every_caller_that_warns() -> None:
    source = (ROOT / "src" / "kernel_plugins" / "fallback.py").read_text(encoding="utf-8")
    assert "Pass fallback='error' to refuse" in source.replace('"\n            "', "")
    for where in ("load", "kernelize"):
        assert "fallback" in inspect.signature(_callers()[where]).parameters, where
    # the compat API keeps kernels' signatures: its warnings name what exists there
    # (test_compat_queries_offline_answer_like_get_kernel checks the text)
    for where in ("compat.get_kernel", "compat.kernelize"):
        assert "fallback" not in inspect.signature(_callers()[where]).parameters, where


def test_kernelize_honours_the_repository_trust_and_fallback(monkeypatch: pytest.MonkeyPatch) -> None:
    import torch

    import kernel_plugins
    from kernel_plugins.errors import NoCompatibleVariantError
    from kernel_plugins.layers import (
        LayerRepository,
        kernelize,
        use_kernel_forward_from_hub,
        use_kernel_mapping,
    )

    calls: list[dict[str, Any]] = []

    def fake_load(target: object, **options: Any) -> Any:
        calls.append({"target": target, **options})
        raise NoCompatibleVariantError("nothing fits (test)")

    monkeypatch.setattr(kernel_plugins, "load", fake_load)

    @use_kernel_forward_from_hub("AdviceTestLayer")
    class Layer(torch.nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return x

    for trust in (True, False, "yes"):
        repo = LayerRepository("acme/act", layer_name="Layer", version=1, trust_remote_code=trust)  # type: ignore[arg-type]
        with use_kernel_mapping({"AdviceTestLayer": {"cpu": repo}}), pytest.warns(UserWarning):
            kernelize(Layer(), device="cpu", fallback="error")
    assert [c["trust_remote_code"] for c in calls] == [True, False, False]  # only True trusts
    assert {c["fallback"] for c in calls} == {"error"}


# -- compat: offline, has_kernel and get_kernel_variants answer as get_kernel loads -------


def test_compat_queries_offline_answer_like_get_kernel(tmp_path: Path) -> None:
    proc = _fresh_python("""
        import warnings
        import kernel_plugins.compat.kernels as kernels
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            assert kernels.get_kernel("kernels-community/activation", version=1) is not None
        advice = " ".join(str(w.message) for w in caught)
        assert "KERNEL_PLUGINS_STRICT=1 to refuse" in advice and "fallback=" not in advice, advice
        warnings.simplefilter("ignore")
        assert kernels.has_kernel("kernels-community/activation", version=1) is True
        variants = kernels.get_kernel_variants("kernels-community/activation", version=1)
        assert [str(v.variant.variant_str) for v in variants if isinstance(v, kernels.VariantAccepted)] == ["torch-cpu"]
        kinds = []
        for query in (kernels.get_kernel, kernels.has_kernel, kernels.get_kernel_variants):
            try:
                query("kernels-community/not-cached", version=1)
            except Exception as e:
                kinds.append(type(e).__name__)
        assert len(kinds) == 3 and len(set(kinds)) == 1, kinds
        print("ok", kinds[0])
    """, tmp_path, HF_HUB_OFFLINE="1")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.startswith("ok ")


# -- install: the README and the metadata agree; a plain install prints no NumPy warning --


def test_the_readme_says_what_the_metadata_requires() -> None:
    import tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    names = {re.match(r"[A-Za-z0-9_.-]+", d).group(0).lower() for d in project["dependencies"]}  # type: ignore[union-attr]
    install = (ROOT / "README.md").read_text(encoding="utf-8").split("## Install", 1)[1].split("\n## ", 1)[0]
    assert "torch" not in names and "numpy" in names  # torch warns on every use without numpy
    assert project["optional-dependencies"]["torch"] == ["torch>=2.5,<3"]
    assert "Installing kernel-plugins never installs, upgrades or replaces torch" in install
    assert "`torch` extra (`pip install '.[torch]'`" in " ".join(install.split())
    assert install.index("from a checkout") < install.index("pip install")  # what works today first


def test_the_emulation_example_names_the_plugin_it_needs() -> None:
    doc = (ROOT / "docs" / "emulation.md").read_text(encoding="utf-8")
    first = doc.split("```python", 1)
    emulated = re.findall(r'emulate\("(\w+)"', first[1].split("```", 1)[0])
    assert emulated, "the example emulates a backend"
    for name in emulated:  # said before the example, with the install that works today
        assert f"needs the {name} plugin" in first[0] and f"pip install ./plugins/{name}" in first[0]
        assert (ROOT / "plugins" / name / "pyproject.toml").is_file()


def test_using_torch_and_loading_prints_no_numpy_warning(tmp_path: Path) -> None:
    proc = _fresh_python("""
        import torch
        import kernel_plugins
        kernel_plugins.load("./examples/relu")
        torch.ones(2).sum()
    """, tmp_path, spawn=True, PYTHONWARNINGS="default")
    assert proc.returncode == 0, proc.stderr
    assert "NumPy" not in proc.stderr, proc.stderr


# -- docs/emulation.md: which operations are not bitwise equal to the CPU ----------------


def test_only_the_documented_operation_differs_on_an_emulated_device(tmp_path: Path) -> None:
    doc = (ROOT / "docs" / "emulation.md").read_text(encoding="utf-8")
    assert "The exception is `scaled_dot_product_attention`" in doc and "about 1e-6" in doc
    proc = _fresh_python("""
        from kernel_plugins_testing import emulate
        emulate("mlu", devices=1)
        import torch
        F = torch.nn.functional
        torch.manual_seed(0)
        q, k, v = (torch.randn(2, 4, 64, 32) for _ in range(3))
        x, w = torch.randn(64, 256), torch.randn(256, 128)
        same = {
            "matmul": lambda a: a @ w.to(a.device), "softmax": lambda a: a.softmax(-1),
            "layer_norm": lambda a: F.layer_norm(a, (256,)), "gelu": F.gelu, "silu": F.silu,
        }
        for name, op in same.items():
            assert torch.equal(op(x), op(x.to("mlu")).cpu()), name
        cpu = F.scaled_dot_product_attention(q, k, v)
        emulated = F.scaled_dot_product_attention(*(t.to("mlu") for t in (q, k, v))).cpu()
        print((cpu - emulated).abs().max().item())
    """, tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    difference = float(proc.stdout.split()[-1])
    assert 0 < difference <= 1e-6  # not bitwise, within what the document says
