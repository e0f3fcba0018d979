"""build.toml models: every real-world file validates; bad files get located, fixable issues."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from kernel_plugins_check.buildconfig import (
    MAX_BUILD_TOML_BYTES,
    loads_toml,
    parse_build_toml,
    read_build_toml,
    validate_build_data,
)

from kernel_plugins.errors import BuildConfigError
from tests.check.test_buildconfig_parity import RELU_TPU
from tests.support.inputs import BUILD_TOML, CORPUS

CORPUS_FILES = sorted(CORPUS.glob("*.build.toml"))
pytestmark = pytest.mark.usefixtures("manager")


def issues_of(text: str) -> dict[str, tuple[str, str]]:
    """key -> (message, fix) of every issue of ``text`` (which must be valid TOML)."""
    config, issues = validate_build_data(loads_toml(text))
    assert config is None, "expected issues"
    return {i.key: (i.message, i.fix) for i in issues}


def test_the_corpus_is_complete() -> None:
    assert len(CORPUS_FILES) == 52


@pytest.mark.parametrize("path", CORPUS_FILES, ids=lambda p: p.name.removesuffix(".build.toml"))
def test_every_real_build_toml_validates(path: Path) -> None:
    build = read_build_toml(path)
    assert build.name == path.name.removesuffix(".build.toml") or path.name.startswith("mlx")
    assert len(build.notes) == 1
    if build.edition == 5:
        assert build.shape == "edition 5" and not build.legacy
        assert f"{path} is in edition 5, which kernels 0.19.1 still reads by upgrading it to " \
            "edition 6 in memory" in build.notes[0]
    else:
        assert build.legacy and build.shape == "legacy v4"
        assert "legacy (v4) build.toml" in build.notes[0]
    assert "`kernel-builder update-build` migrates it" in build.notes[0]


def test_corpus_editions_and_shapes() -> None:
    shapes = [read_build_toml(p).shape for p in CORPUS_FILES]
    assert shapes.count("edition 5") == 5
    assert shapes.count("legacy v4") == 47


def test_models_expose_the_tables() -> None:
    fa4 = read_build_toml(CORPUS / "flash-attn4.build.toml")
    assert fa4.config.torch_noarch is not None and fa4.config.kernel == {}
    assert fa4.python_depends("cuda") == ["einops", "tvm-ffi", "nvidia-cutlass-dsl"]
    assert fa4.python_depends("rocm") == ["einops", "tvm-ffi"]
    assert fa4.backend_tables["cuda"].minver == "12.8"  # type: ignore[attr-defined]
    act = read_build_toml(CORPUS / "activation.build.toml")
    assert act.config.torch is not None and act.config.torch.stable_abi == {
        "cuda": "2.10",
        "rocm": "2.10",
    }
    assert act.config.kernel["activation_rocm"].rocm_archs[0] == "gfx906"  # type: ignore[index]
    assert act.backends == ["cuda", "metal", "cpu", "rocm"]
    fa3 = read_build_toml(CORPUS / "flash-attn3.build.toml")
    assert fa3.config.torch is not None and fa3.config.torch.stable_abi == "2.9"
    assert fa3.shape == "legacy v4"


def test_a_good_edition_5_file() -> None:
    build = parse_build_toml(BUILD_TOML)
    assert (build.edition, build.name, build.backends) == (5, "relu", ["cpu", "cuda"])
    assert build.config.general.hub is not None
    assert build.config.general.hub.repo_id == "kernels-community/relu"


def test_unknown_key_is_refused_with_its_location_and_the_allowed_keys() -> None:
    found = issues_of(BUILD_TOML.replace("[torch]\n", "[torch]\nsources = []\n"))
    message, fix = found["torch.sources"]
    assert message == "unknown key 'torch.sources'"
    assert "keys allowed in [torch]:" in fix and "src" in fix and "stable-abi" in fix


def test_snake_case_key_gets_the_kebab_case_fix() -> None:
    found = issues_of(BUILD_TOML.replace("cuda-capabilities", "cuda_capabilities"))
    assert found["kernel.relu_cuda.cuda_capabilities"][1] == (
        "keys are kebab-case: write 'cuda-capabilities' instead of 'cuda_capabilities'"
    )


def test_unknown_key_in_a_kernel_table_lists_backend_specific_keys() -> None:
    found = issues_of(BUILD_TOML.replace('backend = "cpu"\n', 'backend = "cpu"\nflags = []\n'))
    fix = found["kernel.relu_cpu.flags"][1]
    assert "backend, cxx-flags, depends, include, src" in fix
    assert "for rocm kernels: rocm-archs, hip-flags" in fix


@pytest.mark.parametrize(
    ("drop", "key"),
    [
        ('name = "relu"\n', "general.name"),
        ('backends = ["cpu", "cuda"]\n', "general.backends"),
        ('src = ["relu_cpu/relu.cpp"]\n', "kernel.relu_cpu.src"),
        ('version = 1\n', "general.version"),
        ('license = "Apache-2.0"\n', "general.license"),
    ],
)
def test_missing_required_keys(drop: str, key: str) -> None:
    message, fix = issues_of(BUILD_TOML.replace(drop, "", 1))[key]
    assert f"missing required key '{key}'" in message
    assert fix.startswith(f"add {key.rsplit('.', 1)[1]} = ...")


def test_a_legacy_file_without_version_or_license_is_the_v3_format_kernels_refuses() -> None:
    text = BUILD_TOML.replace("edition = 5\n", "").replace("version = 1\n", "")
    found = issues_of(text.replace('license = "Apache-2.0"\n', ""))
    for key in ("general.version", "general.license"):
        message, fix = found[key]
        assert "v3 format, which kernel-builder no longer reads" in message
        assert "kernel-builder update-build" in fix


@pytest.mark.parametrize(
    ("add", "key"),
    [
        ('kernel-depends = [{repo-id = "a/b", version = 1}]\n', "general.kernel-depends"),
        ('[general.tpu]\npython-depends = ["jax"]\n', "general.tpu"),
        ('[general.cuda]\nkernel-depends = [{repo-id = "a/b", version = 1}]\n',
         "general.cuda.kernel-depends"),
    ],
)
def test_what_only_edition_5_has_is_refused_in_a_legacy_file(add: str, key: str) -> None:
    text = BUILD_TOML.replace("edition = 5\n", "").replace("\n[general.hub]", f"{add}[general.hub]")
    assert issues_of(text)[key] == (
        f"'{key}' needs edition 5 or 6, and this file has no edition (a legacy file)",
        "migrate the file to edition 6 with `kernel-builder update-build` (or add edition = 5 to "
        "[general], which keeps its [kernel.*] tables as they are)",
    )
    assert parse_build_toml(text.replace("[general]\n", "[general]\nedition = 5\n"))


@pytest.mark.parametrize(
    ("old", "new", "key", "fix"),
    [
        ("version = 1", 'version = "1"', "general.version", "whole number without quotes"),
        ("version = 1", "version = -1", "general.version", "not negative"),
        ('backends = ["cpu", "cuda"]', 'backends = "cpu"', "general.backends", "write a list"),
        ('name = "relu"', 'name = "Relu_Kernel"', "general.name", 'such as "my-kernel"'),
        ('depends = ["torch"]\nsrc = ["relu_cpu/relu.cpp"]', 'depends = ["torch"]\nsrc = [1]',
         "kernel.relu_cpu.src[0]", "quoted string"),
        ("[torch]\n", '[torch]\nstable-abi = 2\n', "torch.stable-abi", "stable-abi = \"2.10\""),
        ("[torch]\n", '[torch]\nminver = "two"\n', "torch.minver", 'version such as "12.8"'),
    ],
)
def test_wrong_types_name_the_key_and_the_fix(old: str, new: str, key: str, fix: str) -> None:
    found = issues_of(BUILD_TOML.replace(old, new, 1))
    assert fix in found[key][1]


def test_unknown_backends_are_refused_everywhere_with_the_known_list() -> None:
    text = BUILD_TOML.replace('backends = ["cpu", "cuda"]', 'backends = ["cpu", "cuda", "vpu"]')
    text = text.replace('backend = "cpu"', 'backend = "qpu"')
    text = text.replace("[torch]\n", "[torch.stable-abi]\nfoo = \"2.10\"\n[torch]\n")
    found = issues_of(text)
    for key, name in (
        ("general.backends[2]", "vpu"),
        ("kernel.relu_cpu.backend", "qpu"),
        ("torch.stable-abi.foo", "foo"),
    ):
        message, fix = found[key]
        assert message == f"unknown backend '{name}'"
        assert fix == ("use one of cann, cpu, cuda, metal, neuron, rocm, tpu, xpu (kernel-builder's "
                       "backends) or mlu, musa (kernel-plugins backends)")


def test_the_kernel_plugins_name_of_a_builder_backend_gets_the_builder_spelling() -> None:
    found = issues_of(BUILD_TOML.replace('["cpu", "cuda"]', '["cpu", "cuda", "npu"]'))
    assert found["general.backends[2]"][1] == "write 'cann'"


@pytest.mark.parametrize("backend", ["tpu", "neuron", "cann"])
def test_kernel_builder_compiles_no_kernels_for_noarch_only_backends(backend: str) -> None:
    text = BUILD_TOML.replace('["cpu", "cuda"]', f'["cpu", "cuda", "{backend}"]').replace(
        'backend = "cpu"', f'backend = "{backend}"')
    message, fix = issues_of(text)["kernel.relu_cpu.backend"]
    assert message == (f"kernel-builder compiles no {backend} kernels (only cpu, cuda, metal, "
                       "rocm, xpu)")
    assert "[torch-noarch]" in fix


def test_mlu_and_musa_targets_validate_without_the_plugins_installed() -> None:
    text = """
[general]
name = "mlu-ops"
version = 1
edition = 5
license = "MIT"
backends = ["mlu", "musa", "cann"]

[general.mlu]
python-depends = ["einops"]

[torch]
src = []

[kernel.ops_mlu]
backend = "mlu"
depends = ["torch"]
src = ["ops_mlu/ops.mlu"]

[kernel.ops_musa]
backend = "musa"
depends = ["torch"]
src = ["ops_musa/ops.mu"]
"""
    build = parse_build_toml(text)
    assert build.backends == ["mlu", "musa", "npu"]  # cann is the builder name of npu
    assert build.python_depends("mlu") == ["einops"]
    edition, targets, unchecked = build.notes
    assert edition.startswith("build.toml is in edition 5, which kernels 0.19.1 still reads")
    assert unchecked == ("build.toml: [general.mlu] python-depends cannot be checked: backend "
                         "'mlu' is not installed (pip install kernel-plugins-mlu (from a checkout: "
                           "pip install ./plugins/mlu))")
    assert targets.startswith("build.toml targets mlu, musa: kernel-plugins backends that "
                              "kernel-builder does not know")


def test_a_tpu_noarch_kernel_validates_with_or_without_the_plugin(manager) -> None:
    """kernels' TPU layout (relu-tpu): backends = ["tpu"] with [torch-noarch]."""
    text = RELU_TPU.replace("edition = 5", "edition = 6").replace("[torch-noarch]", '[general.tpu]\npython-depends = ["jax"]\n\n[torch-noarch]')
    build = parse_build_toml(text)
    assert build.backends == ["tpu"]
    assert build.python_depends("tpu") == ["jax"]
    assert build.notes == ("build.toml: [general.tpu] python-depends cannot be checked: backend "
                           "'tpu' is not installed (pip install kernel-plugins-tpu (from a checkout: "
                           "pip install ./plugins/tpu))",)
    from kernel_plugins_tpu.hooks import TPU

    assert manager.register(TPU, name="tpu")
    assert parse_build_toml(text).notes == ()
    message, fix = issues_of(text.replace('"jax"', '"jax", "nki"'))["general.tpu.python-depends[1]"]
    assert message == "'nki' is not a python-depends name known for backend 'tpu'"
    assert "jax" in fix and "libtpu" in fix


@pytest.mark.parametrize(
    ("block", "key", "fix"),
    [
        ('python-depends = ["einops", "leftpad"]\n', "general.python-depends[1]",
         "use one of einops, helion, numpy, triton, tvm-ffi"),
        ('python-depends = ["nvidia-cutlass-dsl"]\n', "general.python-depends[0]",
         "move it to [general.cuda] (only that backend knows it)"),
        ('[general.cuda]\npython-depends = ["einops", "nki"]\n', "general.cuda.python-depends[1]",
         "use one of einops, helion, numpy, nvidia-cutlass-dsl, triton, tvm-ffi"),
    ],
)
def test_python_depends_are_names_known_for_their_backend(block: str, key: str, fix: str) -> None:
    message, found = issues_of(BUILD_TOML.replace("[general.hub]", f"{block}[general.hub]"))[key]
    name = "nki" if "nki" in block else "leftpad" if "leftpad" in block else "nvidia-cutlass-dsl"
    assert message.startswith(f"{name!r} is not a python-depends name known for ")
    assert found == fix


def test_backend_specific_kernel_keys_belong_to_their_backend() -> None:
    text = BUILD_TOML.replace('src = ["relu_cpu/relu.cpp"]', 'src = ["a.cpp"]\nrocm-archs = []')
    message, fix = issues_of(text)["kernel.relu_cpu.rocm-archs"]
    assert "only for rocm kernels" in message and "'cpu'" in message
    assert fix == "remove 'rocm-archs' or set backend = \"rocm\""


def test_kernel_backend_must_be_declared_in_general_backends() -> None:
    text = BUILD_TOML.replace('backends = ["cpu", "cuda"]', 'backends = ["cuda"]')
    message, fix = issues_of(text)["kernel.relu_cpu.backend"]
    assert "general.backends does not list" in message
    assert "add 'cpu' to general.backends" in fix


def test_duplicate_backend_is_reported() -> None:
    text = BUILD_TOML.replace('backends = ["cpu", "cuda"]', 'backends = ["cpu", "cuda", "cpu"]')
    assert "listed twice" in issues_of(text)["general.backends[2]"][0]


@pytest.mark.parametrize(
    ("edition", "message"),
    [("7", "is not supported"), ("4", "is not supported"), ('"5"', "must be a whole number"),
     ("-1", "must be a whole number"), ("true", "must be a whole number")],
)
def test_unsupported_or_malformed_editions(edition: str, message: str) -> None:
    found = issues_of(BUILD_TOML.replace("edition = 5", f"edition = {edition}"))
    assert message in found["general.edition"][0]
    assert found["general.edition"][1].startswith("write edition = 6")
    assert ("kernel-builder and kernels 0.19.1 read editions 5 and 6" in found["general.edition"][0]
            or message == "must be a whole number")


EDITION_6 = BUILD_TOML.replace("edition = 5", "edition = 6").replace(
    'backend = "cpu"', 'language = "cpp-cpu"').replace('backend = "cuda"', 'language = "cpp-cuda"')


def test_an_edition_6_file_validates_without_notes_and_its_kernels_name_their_backend() -> None:
    build = parse_build_toml(EDITION_6.replace("[general.hub]", 'build-layout = "zip"\n\n[general.hub]'))
    assert (build.edition, build.shape, build.notes) == (6, "edition 6", ())
    assert build.config.general.build_layout == "zip"  # type: ignore[attr-defined]
    assert {n: (k.language, k.backend) for n, k in build.config.kernel.items()} == {
        "relu_cpu": ("cpp-cpu", "cpu"), "relu_cuda": ("cpp-cuda", "cuda")}


@pytest.mark.parametrize("edition", ["edition = 5\n", ""])
def test_what_only_edition_6_has_is_refused_before_it_with_the_fix(edition: str) -> None:
    text = BUILD_TOML.replace("edition = 5\n", edition).replace(
        "[general.hub]", 'build-layout = "zip"\n\n[general.hub]')
    message, fix = issues_of(text)["general.build-layout"]
    assert message.startswith("'general.build-layout' needs edition 6, and this file has ")
    assert fix.startswith("write edition = 6 (a kernel then names its kind with language")


def test_edition_6_kernels_name_a_language_not_a_backend() -> None:
    found = issues_of(EDITION_6.replace('language = "cpp-cpu"', 'backend = "cpu"'))
    message, fix = found["kernel.relu_cpu.language"]
    assert message == "missing required key 'kernel.relu_cpu.language'"
    assert fix.startswith("use one of cpp-cpu, cpp-cuda, cpp-metal, cpp-rocm, cpp-xpu, rust-cpu, "
                          "rust-cuda-oxide, rust-cutile: edition 6 names a kernel's kind")
    unknown = issues_of(EDITION_6.replace('"cpp-cpu"', '"cpp"'))["kernel.relu_cpu.language"]
    assert unknown[0] == "unknown kernel kind 'cpp'"
    flags = issues_of(EDITION_6.replace('language = "cpp-cpu"', 'language = "cpp-cpu"\n'
                                        'cuda-flags = ["-x"]'))["kernel.relu_cpu.cuda-flags"]
    assert flags[1] == ("remove it or fix its spelling; keys allowed in [kernel.relu_cpu]: "
                        "cxx-flags, depends, include, language, src")


def test_rust_kernels_need_tvm_ffi_and_cutile_needs_cuda_13_2() -> None:
    head = EDITION_6[:EDITION_6.index("[torch]")]
    rust = '\n[kernel.k]\nlanguage = "rust-cutile"\ncargo-manifest = "Cargo.toml"\nsrc = []\n'
    found = issues_of(f'{head}[torch]\nsrc = []\n{rust}tileiras-minver = "13.1"\n')
    assert found["kernel.k.language"][1] == "use a [tvm-ffi] framework table instead of [torch]"
    assert found["kernel.k.tileiras-minver"][0] == (
        "tileiras-minver '13.1' is below 13.2, the first CUDA version with cuTile")
    build = parse_build_toml(f'{head}[tvm-ffi]\nsrc = []\n{rust}tileiras-minver = "13.2"\n')
    assert build.config.kernel["k"].backend == "cuda"


def test_mlx_noarch_is_for_metal_alone() -> None:
    head = EDITION_6[:EDITION_6.index("[torch]")]
    assert parse_build_toml(head.replace('["cpu", "cuda"]', '["metal"]') + "[mlx-noarch]\n")
    found = issues_of(head + "[mlx-noarch]\n")
    assert found["general.backends[0]"][0] == (
        "[mlx-noarch] kernels are for the metal backend only, got 'cpu'")


def test_edition_5_needs_exactly_one_framework_table() -> None:
    none = BUILD_TOML.replace('[torch]\nsrc = ["torch-ext/torch_binding.cpp"]\n', "")
    assert issues_of(none)[""][0] == "no framework table"
    two = BUILD_TOML + "\n[torch-noarch]\n"
    found = issues_of(two)
    assert "more than one framework table" in found[""][0]
    assert "a [torch-noarch] kernel has no compiled code" in found["kernel"][0]


def test_kernel_depends_need_exactly_one_of_version_and_revision() -> None:
    text = BUILD_TOML.replace(
        'backends = ["cpu", "cuda"]\n',
        'backends = ["cpu", "cuda"]\nkernel-depends = [{repo-id = "a/b"}, '
        '{repo-id = "a/b", version = 1}, {repo-id = "a/b", revision = "main"}]\n',
    )
    found = issues_of(text.replace('"kernels-community/relu"', '"kernels-community/relu"'))
    assert set(found) == {"general.kernel-depends[0]"}
    assert "exactly one of 'version'" in found["general.kernel-depends[0]"][0]


def test_hub_repo_id_is_validated() -> None:
    found = issues_of(BUILD_TOML.replace("kernels-community/relu", "kernels-community/../relu"))
    assert "Invalid repository id" in found["general.hub.repo-id"][0]


def test_quoted_kernel_names_are_located_in_toml_syntax() -> None:
    build = parse_build_toml(BUILD_TOML.replace("[kernel.relu_cpu]", '[kernel."relu.cpu"]'))
    assert "relu.cpu" in build.config.kernel
    text = BUILD_TOML.replace("[kernel.relu_cpu]", '[kernel."relu.cpu"]').replace(
        'backend = "cpu"', "backend = 1"
    )
    assert 'kernel."relu.cpu".backend' in issues_of(text)


def test_parse_raises_one_error_listing_every_issue() -> None:
    text = BUILD_TOML.replace("version = 1", 'version = "1"').replace("[torch]\n", "[torch]\nx=1\n")
    with pytest.raises(BuildConfigError) as info:
        parse_build_toml(text, where="repo/build.toml")
    message = str(info.value)
    assert message.startswith("repo/build.toml: invalid build.toml: ")
    assert "general.version:" in message and "torch.x: unknown key 'torch.x'" in message


@pytest.mark.parametrize(
    ("raw", "fragment"),
    [
        (b"[general\nname = 1", "malformed TOML"),
        (b"name = \xff\xfe", "not UTF-8 text"),
        (b"a = " + b"[" * 5000 + b"]" * 5000, "nested too deeply"),
        (b"# " + b"x" * (MAX_BUILD_TOML_BYTES + 1), "larger than the"),
    ],
    ids=["syntax", "encoding", "nesting", "huge"],
)
def test_unreadable_files(tmp_path: Path, raw: bytes, fragment: str) -> None:
    (tmp_path / "build.toml").write_bytes(raw)
    with pytest.raises(BuildConfigError, match=fragment):
        read_build_toml(tmp_path)


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(BuildConfigError, match="a kernel source repository has a build.toml"):
        read_build_toml(tmp_path)


def test_non_table_document_is_an_issue_not_a_crash() -> None:
    config, issues = validate_build_data(["not", "a", "table"])
    assert config is None and "expected a TOML document" in issues[0].message


def test_python_310_without_tomli_gets_an_install_hint(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "tomllib", None)
    monkeypatch.setitem(sys.modules, "tomli", None)
    with pytest.raises(BuildConfigError, match="pip install tomli"):
        parse_build_toml(BUILD_TOML)
