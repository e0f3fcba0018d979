"""``kernel_plugins_check``: each check of a kernel repository, on disk and on the Hub."""

from __future__ import annotations

import base64
import hashlib
import json
import os
from pathlib import Path

import pytest
from kernel_plugins_check import Problem, check, check_path

from kernel_plugins.errors import SourceError
from tests.support.digests import kernels_digest
from tests.support.inputs import BUILD_TOML, CORPUS, make_repo, make_variant, metadata, tree_state

pytestmark = pytest.mark.usefixtures("manager")

CUDA_META = metadata(id="_relu_cuda_0a1b2c", backend={"type": "cuda", "archs": ["8.0"]})


def by_key(problems: tuple[Problem, ...]) -> dict[tuple[str, str], Problem]:
    return {(p.file, p.key): p for p in problems}


def test_a_clean_repository_has_no_problems(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "relu", {
        "torch-cpu": metadata(),
        "torch213-cxx11-cu128-x86_64-linux": CUDA_META,
        "torch-stable-abi211-cu128-x86_64-linux": CUDA_META,
        "tvm-ffi01-cu128-x86_64-linux": CUDA_META,
        "torch-universal": metadata(backend={"type": "universal"}),
    })
    report = check(repo)
    assert report.ok, [p.describe() for p in report.problems]
    assert len(report.variants) == 5
    assert any("torch-universal is deprecated" in n for n in report.notes)


def test_nested_layout_is_accepted(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "r", {})
    make_variant(repo / "build", "torch-cpu", metadata(name="relu"), {"relu/__init__.py": ""})
    assert check(repo).ok


def test_missing_module_and_metadata(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "r", {})
    make_variant(repo / "build", "torch-cpu", None, {"README": "x"})
    found = by_key(check(repo).problems)
    assert "missing: every build variant needs a metadata.json" in found[
        ("build/torch-cpu/metadata.json", "")].message
    assert found[("build/torch-cpu", "")].message == (
        "no kernel module: expected __init__.py or <python_name>/__init__.py"
    )


@pytest.mark.parametrize("name", ["Torch-CPU", "torch-cpü", "weird-name-x"])
def test_bad_variant_names(tmp_path: Path, name: str) -> None:
    repo = make_repo(tmp_path / "r", {name: metadata()})
    [problem] = check(repo).problems
    assert problem.file == f"build/{name}" and problem.key == ""
    assert problem.message.startswith("variant name") and "rename the folder" in problem.fix


@pytest.mark.parametrize(
    ("meta", "key", "fragment"),
    [
        (metadata(version="1"), "version", "valid integer"),
        (metadata(id="relu.ops"), "id", "plain ASCII Python identifier"),
        (metadata(id="../../etc"), "id", "plain ASCII Python identifier"),
        ({k: v for k, v in metadata().items() if k != "license"}, "license", "missing required"),
        (metadata(backend={"archs": []}), "backend.type", "missing required"),
    ],
)
def test_metadata_problems_name_the_key(
    tmp_path: Path, meta: dict, key: str, fragment: str
) -> None:
    repo = make_repo(tmp_path / "r", {"torch-cpu": meta})
    found = by_key(check(repo).problems)
    problem = found[("build/torch-cpu/metadata.json", key)]
    assert fragment in problem.message
    assert f"set '{key}' in metadata.json" in problem.fix


@pytest.mark.parametrize(
    ("text", "fragment"),
    [("{", "malformed JSON at line 1"), ("[]", "expected a JSON object, got list"),
     ("[" * 100000, "nested too deeply")],
)
def test_unreadable_metadata(tmp_path: Path, text: str, fragment: str) -> None:
    repo = make_repo(tmp_path / "r", {"torch-cpu": text})
    found = by_key(check(repo).problems)
    assert fragment in found[("build/torch-cpu/metadata.json", "")].message


def test_backend_type_must_agree_with_the_variant(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "r", {
        "torch-cuda": metadata(backend={"type": "rocm"}),
        "torch213-cxx11-cu128-x86_64-linux": metadata(backend={"type": "xpu"}),
        "torch213-cxx11-foo12-x86_64-linux": metadata(),
        "torch-qpu": metadata(),
        "torch-cpu": metadata(backend={"type": "qpu"}),
    })
    found = by_key(check(repo).problems)
    noarch = found[("build/torch-cuda/metadata.json", "backend.type")]
    assert noarch.message == "variant torch-cuda is for backend 'cuda' but backend.type is 'rocm'"
    assert noarch.fix == "set backend.type to 'cuda', or move the build to build/torch-rocm"
    arch = found[("build/torch213-cxx11-cu128-x86_64-linux/metadata.json", "backend.type")]
    assert "token 'cu128' of backend 'cuda' but backend.type is 'xpu'" in arch.message
    token = found[("build/torch213-cxx11-foo12-x86_64-linux", "")]
    assert token.message == "backend token 'foo12' belongs to no known backend"
    assert "noarch variant for unknown backend 'qpu'" in found[("build/torch-qpu", "")].message
    unknown = found[("build/torch-cpu/metadata.json", "backend.type")]
    assert unknown.message == "unknown backend 'qpu'"


def test_plugin_targets_validate_without_the_plugin_installed(tmp_path: Path) -> None:
    toml = BUILD_TOML.replace('backends = ["cpu", "cuda"]', 'backends = ["cpu", "cuda", "mlu"]')
    repo = make_repo(tmp_path / "r", {
        "torch213-cxx11-mlu313-x86_64-linux": metadata(backend={"type": "mlu"}),
        "torch-musa": metadata(backend={"type": "musa"}),
        "torch213-cxx11-cann83-aarch64-linux": metadata(backend={"type": "npu"}),
        "torch-npu": metadata(backend={"type": "cann"}, python_depends=["cann-extra"]),
    }, build_toml=toml)
    report = check(repo)
    assert report.ok, [p.describe() for p in report.problems]
    assert any("'cann-extra' cannot be checked: backend 'npu' is not installed "
               "(pip install kernel-plugins-npu (from a checkout: pip install ./plugins/npu))"
               in n for n in report.notes)


def test_python_depends_must_be_known_for_the_backend(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "r", {
        "torch-cpu": metadata(python_depends=["einops", "nvidia-cutlass-dsl"]),
        "torch-cuda": metadata(backend={"type": "cuda"}, python_depends=["nvidia-cutlass-dsl"]),
    })
    [problem] = check(repo).problems
    assert (problem.file, problem.key) == ("build/torch-cpu/metadata.json", "python-depends[1]")
    assert problem.message == "'nvidia-cutlass-dsl' is not a known dependency for backend 'cpu'"
    assert "einops, helion, numpy, triton, tvm-ffi" in problem.fix


def test_digest_matches_and_mismatches(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "r", {})
    folder = make_variant(repo / "build", "torch-cpu", None, {"__init__.py": "A = 1\n",
                                                             "_ops.py": "B = 1\n"})
    files = kernels_digest(folder)
    meta = metadata(digest={"algorithm": "sha256", "files": files})
    (folder / "metadata.json").write_text(json.dumps(meta))
    (folder / "__pycache__").mkdir()
    (folder / "__pycache__" / "x.pyc").write_bytes(b"\0")
    # shipped bytecode is a problem of its own; the digest itself matches
    problems = check(repo).problems
    assert [p.file for p in problems] == ["build/torch-cpu/__pycache__"]
    assert "ships Python bytecode" in problems[0].message
    (folder / "__pycache__" / "x.pyc").unlink()
    (folder / "__pycache__").rmdir()
    assert check(repo).ok
    (folder / "_ops.py").write_text("B = 2\n")
    (folder / "new.py").write_text("")
    found = by_key(check(repo).problems)
    changed = found[("build/torch-cpu/_ops.py", "digest")]
    assert "content does not match the digest" in changed.message
    assert "not listed in the digest" in found[("build/torch-cpu/new.py", "digest")].message
    meta["digest"]["files"]["../../escape"] = base64.b64encode(hashlib.sha256().digest()).decode()
    (folder / "metadata.json").write_text(json.dumps(meta))
    found = by_key(check(repo).problems)
    assert "unusable digest entry" in found[("build/torch-cpu/metadata.json", "digest")].message


def test_metadata_must_agree_with_build_toml(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "r", {"torch-cpu": metadata(name="relu-old", version=2)})
    found = by_key(check(repo).problems)
    assert found[("build/torch-cpu/metadata.json", "name")].message == (
        "name 'relu-old' differs from build.toml's 'relu'"
    )
    assert "version 2 differs from build.toml's 1" in found[
        ("build/torch-cpu/metadata.json", "version")].message


def test_build_toml_problems_come_first_with_file_and_key(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "r", {"torch-cpu": metadata()},
                     build_toml=BUILD_TOML.replace("version = 1", 'version = "1"'))
    first = check(repo).problems[0]
    assert (first.file, first.key) == ("build.toml", "general.version")
    (repo / "build.toml").write_text("[general")
    first = check(repo).problems[0]
    assert (first.file, first.key) == ("build.toml", "") and "malformed TOML" in first.message


def test_legacy_build_toml_is_a_note_not_a_problem(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "relu", {}, build_toml=(CORPUS / "relu.build.toml").read_text())
    report = check(repo)
    assert report.ok and report.variants == ()
    assert any("legacy (v4) build.toml" in n for n in report.notes)
    assert any("no build/ folder" in n for n in report.notes)


def test_the_command_line_names_the_build_toml_key_and_the_fix(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from kernel_plugins.cli.main import main

    repo = make_repo(tmp_path / "relu", {"torch-cpu": metadata()},
                     build_toml=BUILD_TOML.replace("edition = 5", "edition = 6"))
    assert main(["check", str(repo)]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert lines[:2] == [  # edition 6 kernels name their language
        "build.toml: kernel.relu_cpu.language: missing required key 'kernel.relu_cpu.language' "
        "(fix: use one of cpp-cpu, cpp-cuda, cpp-metal, cpp-rocm, cpp-xpu, rust-cpu, "
        "rust-cuda-oxide, rust-cutile: edition 6 names a kernel's kind with language, and its "
        "backend follows from it)",
        "build.toml: kernel.relu_cuda.language: missing required key 'kernel.relu_cuda.language' "
        "(fix: use one of cpp-cpu, cpp-cuda, cpp-metal, cpp-rocm, cpp-xpu, rust-cpu, "
        "rust-cuda-oxide, rust-cutile: edition 6 names a kernel's kind with language, and its "
        "backend follows from it)",
    ]
    assert lines[-1] == f"2 problem(s) in {repo} (1 variant(s))"
    (repo / "build.toml").write_text(BUILD_TOML.replace("edition = 5", "edition = 7"))
    assert main(["check", str(repo)]) == 1
    assert capsys.readouterr().out.splitlines()[0] == (
        "build.toml: general.edition: edition 7 is not supported: kernel-builder and kernels "
        "0.19.1 read editions 5 and 6 (and legacy files without an edition) (fix: write edition "
        "= 6 (or upgrade kernel-plugins-check, if kernel-builder has a newer edition))"
    )
    mlu = BUILD_TOML.replace('["cpu", "cuda"]', '["cpu", "cuda", "mlu"]')
    (repo / "build.toml").write_text(mlu)
    assert main(["check", str(repo)]) == 0
    out = capsys.readouterr().out
    assert "note: build.toml targets mlu: kernel-plugins backends that kernel-builder does not " \
        "know" in out


@pytest.mark.parametrize("path", sorted(CORPUS.glob("*.build.toml"))[::7], ids=lambda p: p.name)
def test_corpus_repositories_check_clean(tmp_path: Path, path: Path) -> None:
    repo = make_repo(tmp_path / "k", {}, build_toml=path.read_text())
    assert check(repo).ok


def test_links_out_of_the_repository_are_refused_and_not_followed(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    make_variant(outside, "torch-cpu", metadata())
    repo = make_repo(tmp_path / "r", {"torch-cuda": metadata(backend={"type": "cuda"})})
    os.symlink(outside / "torch-cpu", repo / "build" / "torch-cpu")
    os.symlink("/etc/hostname", repo / "build" / "torch-cuda" / "data.bin")
    found = by_key(check(repo).problems)
    assert set(found) == {("build/torch-cpu", ""), ("build/torch-cuda/data.bin", "")}
    assert "variant folder is a link that points outside" in found[("build/torch-cpu", "")].message
    assert "a link that points outside the variant folder" in found[("build/torch-cuda/data.bin", "")].message


def test_links_inside_the_variant_are_fine_and_out_of_it_are_not(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "r", {"torch-cpu": metadata()})
    variant = repo / "build" / "torch-cpu"
    (variant / "real.py").write_text("")
    os.symlink(variant / "real.py", variant / "alias.py")
    assert check(repo).ok
    # inside the repository but outside the variant: loading refuses it, so check does too
    (repo / "shared.py").write_text("")
    os.symlink(repo / "shared.py", variant / "shared.py")
    (problem,) = check(repo).problems
    assert problem.file == "build/torch-cpu/shared.py"
    assert "points outside the variant folder" in problem.message


def test_check_writes_nothing(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "r", {"torch-cpu": metadata(), "BAD": "{"})
    before = tree_state(repo)
    assert not check(repo).ok
    assert tree_state(repo) == before


def test_a_single_variant_folder_can_be_checked(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "r", {"torch-cpu": metadata(backend={"type": "cuda"})})
    report = check(repo / "build" / "torch-cpu")
    assert report.variants == ("torch-cpu",)
    [problem] = report.problems
    assert (problem.file, problem.key) == ("build/torch-cpu/metadata.json", "backend.type")


def test_empty_and_missing_targets(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    [problem] = check(tmp_path / "empty").problems
    assert problem.message == "neither build.toml nor build/ was found"
    (tmp_path / "empty" / "build").mkdir()
    [problem] = check(tmp_path / "empty").problems
    assert problem.message == "build/ holds no variant folders"
    with pytest.raises(SourceError, match="does not exist"):
        check_path(tmp_path / "missing")
    (tmp_path / "file").write_text("")
    with pytest.raises(SourceError, match="is not a folder"):
        check_path(tmp_path / "file")
    with pytest.raises(SourceError, match="apply only to Hub repos"):
        check(tmp_path / "empty", version=1)


def test_local_kernels_override_is_checked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo = make_repo(tmp_path / "r", {"torch-cpu": metadata()})
    monkeypatch.setenv("LOCAL_KERNELS", f"acme/relu={repo}")
    report = check("acme/relu")
    assert report.ok and report.notes[0].startswith("checked the LOCAL_KERNELS override")


def test_report_to_dict(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "r", {"torch-cpu": metadata(version="x")})
    data = check(repo).to_dict()
    assert data["ok"] is False and data["variants"] == ["torch-cpu"]
    assert data["problems"][0]["key"] == "version"
    json.dumps(data)


def _fake_cache(cache: Path, repo_id: str, sha: str, files: dict[str, str]) -> None:
    storage = cache / ("kernels--" + repo_id.replace("/", "--"))
    (storage / "refs").mkdir(parents=True)
    (storage / "refs" / "main").write_text(sha)
    for rel, content in files.items():
        blob = storage / "blobs" / hashlib.sha256(content.encode()).hexdigest()
        blob.parent.mkdir(exist_ok=True)
        blob.write_text(content)
        target = storage / "snapshots" / sha / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        os.symlink(os.path.relpath(blob, target.parent), target)


def test_hub_repo_from_the_offline_cache(hf_cache: Path, hub_offline) -> None:  # noqa: ANN001
    hub_offline(True)
    sha = "a" * 40
    _fake_cache(hf_cache, "acme/relu", sha, {
        "build.toml": BUILD_TOML,
        "build/torch-cpu/__init__.py": "A = 1\n",
        "build/torch-cpu/metadata.json": json.dumps(metadata()),
        "build/torch-cuda/__init__.py": "A = 1\n",
        "build/torch-cuda/metadata.json": json.dumps(metadata(version=3, backend={"type": "cuda"})),
    })
    report = check("acme/relu")
    assert report.target == f"acme/relu@{sha}"
    assert report.variants == ("torch-cpu", "torch-cuda")
    [problem] = report.problems  # the blob links stay inside the repo's cache folder
    assert (problem.file, problem.key) == ("build/torch-cuda/metadata.json", "version")


def test_hub_repo_on_a_server(hub_env, tmp_path: Path) -> None:  # noqa: ANN001
    from tests.support.hub import make_kernel_repo

    make_kernel_repo(
        hub_env, "hardening-org/checked",
        variants={
            "torch-cpu": {"__init__.py": "A = 1\n", "metadata.json": json.dumps(metadata())},
            "torch-xpu": {"__init__.py": "A = 1\n",
                          "metadata.json": json.dumps(metadata(backend={"type": "cuda"}))},
        },
        extra_files={"build.toml": BUILD_TOML.replace('"cuda"]', '"cuda", "xpu"]')},
    )
    report = check("hardening-org/checked", version=1)
    [problem] = report.problems
    assert (problem.file, problem.key) == ("build/torch-xpu/metadata.json", "backend.type")
    # fetched and valid (edition 5: kernels reads it by upgrading it in memory)
    assert [n for n in report.notes if "build.toml" in n] == [
        "build.toml is in edition 5, which kernels 0.19.1 still reads by upgrading it to edition 6 "
        "in memory (kernel-builder's Nix builder needs edition 6); `kernel-builder update-build` "
        "migrates it"]
    make_kernel_repo(hub_env, "hardening-org/no-toml")
    report = check("hardening-org/no-toml")
    assert "no build.toml: only build/ was checked" in report.notes


#: examples/relu's layers module before it was fixed: HF kernels 0.17.2 refused it.
LENIENT_LAYERS = '''"""Layers."""
import torch


class ReLU(torch.nn.Module):
    """Drop-in forward."""

    has_backward = True
    kernel_properties = frozenset({"deterministic"})

    def forward(self, x):
        return torch.clamp_min(x, 0)


class Stateful(nn.Module):
    def __init__(self):
        super().__init__()

    def _helper(self):
        pass

    def forward(self, x):
        return x


class Fn(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x
'''


def test_layer_classes_that_hf_kernels_refuses_are_problems(tmp_path: Path) -> None:
    repo = tmp_path / "relu"
    make_variant(repo / "build", "torch-cpu", metadata(), {"__init__.py": "from . import layers\n",
                                                          "layers.py": LENIENT_LAYERS})
    found = by_key(check(repo).problems)
    assert sorted(found) == [("build/torch-cpu/layers.py", "ReLU"), ("build/torch-cpu/layers.py", "Stateful")]
    relu = found[("build/torch-cpu/layers.py", "ReLU")]
    assert "defines kernel_properties: HF kernels 0.19.1 refuses it" in relu.message
    assert "__kernel_properties__" in relu.fix
    assert "defines __init__, _helper:" in found[("build/torch-cpu/layers.py", "Stateful")].message
    # the nested layout and a layers package are read too
    make_variant(repo / "build", "torch-cuda", metadata(backend={"type": "cuda"}),
                 {"relu/__init__.py": "", "relu/layers/__init__.py": LENIENT_LAYERS})
    assert ("build/torch-cuda/relu/layers/__init__.py", "ReLU") in by_key(check(repo).problems)


def test_the_example_and_the_reference_kernels_have_layers_hf_kernels_accepts() -> None:
    from kernel_plugins.reference import reference_repo

    for repo in (Path(__file__).resolve().parents[2] / "examples" / "relu",
                 *(reference_repo(n) for n in ("activation", "rmsnorm", "rotary"))):
        report = check(repo)
        assert report.ok, [p.describe() for p in report.problems]


def test_the_command_line_imports_the_checker_only_when_check_runs() -> None:
    """Every command builds the parser, which imports ``kernel_plugins_check.command``: that must
    not import pydantic and the build.toml models (about 0.2 s of `kernel-plugins list-backends`)."""
    import subprocess
    import sys

    code = ("import sys; from kernel_plugins.cli.main import build_parser; build_parser(); "
            "print('pydantic' in sys.modules, 'kernel_plugins_check.command' in sys.modules); "
            "import kernel_plugins_check as k; print(k.check.__module__, k.CheckReport.__name__)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "True", "kernel_plugins_check._target", "CheckReport"]
    with pytest.raises(AttributeError, match="no attribute 'nothing'"):
        import kernel_plugins_check

        kernel_plugins_check.nothing  # noqa: B018
