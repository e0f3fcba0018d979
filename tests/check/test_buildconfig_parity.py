"""Our build.toml validator against the reader of the pinned kernels release
(``kernels._rust.Build.open``, kernel-builder's own parser), in this process.

Both read the same table of files (valid and invalid, every edition, each key of every
table; edition 6 with ``build-layout``, ``[mlx-noarch]`` and every kernel ``language``,
C++ and Rust) and every file of the corpus, and must agree on accepting or refusing each,
and on the ``kernel-depends`` of every backend of a file both accept. Where we differ on
purpose, the case says so: ``STRICTER`` (kernels accepts what fails later: a bad
repository id, an empty backend list...) or ``PLUGIN`` (a kernel-plugins backend that
kernel-builder does not know: we accept it, with a note). kernels' reader prints a note on
stderr for every file it upgrades in memory (legacy and edition 5); pytest captures it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, NamedTuple

import pytest
from kernel_plugins_check.buildconfig import loads_toml, validate_build_data

from kernel_plugins.errors import BuildConfigError
from tests.support.inputs import BUILD_TOML, CORPUS
from tests.support.pins import kernels_pin

SAME, STRICTER, PLUGIN = "same", "stricter", "plugin"


class Case(NamedTuple):
    """One build.toml and how our verdict relates to kernels' (SAME, STRICTER, PLUGIN)."""

    id: str
    text: str
    ours: str = SAME


def sub(old: str, new: str, text: str = BUILD_TOML) -> str:
    assert old in text, old
    return text.replace(old, new, 1)


def general(line: str, text: str = BUILD_TOML) -> str:
    """``text`` with ``line`` added to [general]."""
    return sub("[general.hub]", f"{line}\n\n[general.hub]", text)


def table(block: str, text: str = BUILD_TOML) -> str:
    """``text`` with ``block`` (a table) before [general.hub]."""
    return sub("[general.hub]", f"{block}\n\n[general.hub]", text)


def torch(lines: str, text: str = BUILD_TOML) -> str:
    """``text`` with ``lines`` added to [torch]."""
    return sub("[torch]\n", f"[torch]\n{lines}\n", text)


def kernel(lines: str, backend: str = "cpu", depends: str = '["torch"]') -> str:
    """BUILD_TOML plus a kernel ``k`` for ``backend`` (declared in general.backends)."""
    text = BUILD_TOML if backend in ("cpu", "cuda") else sub(
        '["cpu", "cuda"]', f'["cpu", "cuda", "{backend}"]')
    return text + f'\n[kernel.k]\nbackend = "{backend}"\ndepends = {depends}\nsrc = ["k.cpp"]\n{lines}\n'


NOARCH = sub(BUILD_TOML[BUILD_TOML.index("[torch]"):], "[torch-noarch]\n")
LEGACY = sub("edition = 5\n", "")


def six(text: str) -> str:
    """``text`` in edition 6: each kernel names its ``language`` instead of its ``backend``."""
    text = sub("edition = 5", "edition = 6", text)
    for backend in ("cpu", "cuda", "metal", "rocm", "xpu"):
        text = text.replace(f'backend = "{backend}"', f'language = "cpp-{backend}"')
    return text


E6 = six(BUILD_TOML)
MLX = sub('["cpu", "cuda"]', '["metal"]', six(NOARCH)).replace("[torch-noarch]", "[mlx-noarch]")

#: Each kernel language of edition 6 with the keys it needs.
LANGUAGES = {
    **{f"cpp-{b}": 'depends = ["torch"]\nsrc = ["k.cpp"]' for b in ("cpu", "metal", "rocm", "xpu")},
    "cpp-cuda": 'depends = ["torch"]\nsrc = ["k.cu"]\ncuda-capabilities = ["8.0"]',
    "rust-cpu": 'cargo-manifest = "Cargo.toml"\nsrc = ["src/lib.rs"]',
    "rust-cuda-oxide": 'cargo-manifest = "Cargo.toml"\nsrc = ["src/lib.rs"]\n'
                       'cuda-capabilities = ["9.0"]',
    "rust-cutile": 'cargo-manifest = "Cargo.toml"\nsrc = ["src/lib.rs"]\ntileiras-minver = "13.2"',
}


def kernel6(language: str, keys: str, framework: str = "[tvm-ffi]\nsrc = []",
            backends: str = '["cpu", "cuda", "metal", "rocm", "xpu"]') -> str:
    """An edition-6 file with one kernel ``k`` of ``language`` (``keys`` its table's lines)."""
    head = E6[:E6.index("[torch]")].replace('["cpu", "cuda"]', backends)
    return f'{head}{framework}\n\n[kernel.k]\nlanguage = "{language}"\n{keys}\n'

DEP = '{repo-id = "kernels-community/activation", version = 1}'

#: Edition 5 files written after kernels' own examples (relu-tpu, relu-nki, relu-tvm-ffi),
#: and the same in edition 6 (where relu-tvm-ffi's kernels, which name a backend, are refused).
RELU_TPU = """\
[general]
name = "relu-tpu"
version = 1
edition = 5
license = "Apache-2.0"
backends = ["tpu"]

[general.hub]
repo-id = "kernels-test/relu-tpu"

[torch-noarch]

[kernel]
"""
RELU_NKI = """\
[general]
name = "relu-nki"
version = 1
edition = 5
license = "Apache-2.0"
backends = ["neuron"]

[general.neuron]
python-depends = ["nki"]

[torch-noarch]
"""
RELU_TVM_FFI = """\
[general]
name = "relu-tvm-ffi"
version = 2
edition = 5
license = "Apache-2.0"
backends = ["cpu", "cuda", "xpu"]
kernel-depends = [{ repo-id = "kernels-test/relu", revision = "v1" }]

[general.cuda]
minver = "12.6"
kernel-depends = [{ repo-id = "kernels-test/cutlass-helpers", version = 3 }]

[general.xpu]
python-depends = ["onednn"]

[tvm-ffi]
src = ["tvm-ffi-ext/binding.cpp"]

[kernel.relu_cuda]
backend = "cuda"
depends = []
src = ["relu_cuda/relu.cu"]

[kernel.relu_xpu]
backend = "xpu"
depends = ["sycl_tla"]
src = ["relu_xpu/relu.cpp"]
"""
EXAMPLES = {"relu-tpu": RELU_TPU, "relu-nki": RELU_NKI, "relu-tvm-ffi": RELU_TVM_FFI}

CASES = [
    *(Case(f"example-{n}-edition-5", t) for n, t in EXAMPLES.items()),
    *(Case(f"example-{n}-edition-6", sub("edition = 5", "edition = 6", t)) for n, t in
      EXAMPLES.items()),
    # editions
    Case("edition-5", BUILD_TOML),
    *(Case(f"edition-{e}", sub("edition = 5", f"edition = {e}"))
      for e in ("6", "4", "7", "0", "-1", '"5"', "5.0", "true")),
    Case("legacy-torch", LEGACY),
    Case("legacy-noarch", sub("edition = 5\n", "", NOARCH)),
    Case("legacy-tvm-ffi", sub('[torch]\nsrc', '[tvm-ffi]\nsrc', LEGACY)),
    Case("legacy-tpu-backend", sub("edition = 5\n", "", RELU_TPU)),
    Case("legacy-without-version", sub("version = 1\n", "", LEGACY)),
    Case("legacy-without-license", sub('license = "Apache-2.0"\n', "", LEGACY)),
    Case("legacy-without-framework", sub('[torch]\nsrc = ["torch-ext/torch_binding.cpp"]\n', "",
                                         LEGACY)),
    Case("legacy-kernel-depends", general(f"kernel-depends = [{DEP}]", LEGACY)),
    Case("legacy-cuda-kernel-depends", table(f"[general.cuda]\nkernel-depends = [{DEP}]", LEGACY)),
    Case("legacy-tpu-table", table('[general.tpu]\npython-depends = ["jax"]', LEGACY)),
    Case("legacy-neuron-table", table('[general.neuron]\npython-depends = ["nki"]', LEGACY)),
    Case("legacy-stable-abi", torch('stable-abi = "2.10"', LEGACY)),
    Case("legacy-stable-abi-table", LEGACY + '\n[torch.stable-abi]\ncuda = "2.10"\n'),
    Case("legacy-edition-at-top-level", "edition = 5\n" + LEGACY),
    # [general]
    *(Case(f"general-without-{k}", sub(line, "")) for k, line in (
        ("name", 'name = "relu"\n'), ("version", "version = 1\n"),
        ("license", 'license = "Apache-2.0"\n'), ("backends", 'backends = ["cpu", "cuda"]\n'))),
    Case("general-not-a-table", "general = 1\n" + BUILD_TOML[BUILD_TOML.index("[torch]"):]),
    Case("version-0", sub("version = 1", "version = 0")),
    Case("version-negative", sub("version = 1", "version = -1")),
    Case("version-string", sub("version = 1", 'version = "1"')),
    Case("version-huge", sub("version = 1", "version = 9223372036854775807")),
    Case("license-empty", sub('"Apache-2.0"', '""'), STRICTER),
    Case("license-integer", sub('"Apache-2.0"', "1")),
    Case("backends-empty", sub('["cpu", "cuda"]', "[]", NOARCH), STRICTER),
    Case("backends-twice", sub('["cpu", "cuda"]', '["cpu", "cuda", "cpu"]'), STRICTER),
    Case("backends-all-of-kernel-builder", sub('["cpu", "cuda"]', '["cann", "cpu", "cuda", '
                                               '"metal", "neuron", "rocm", "tpu", "xpu"]')),
    Case("backends-string", sub('["cpu", "cuda"]', '"cpu"')),
    *(Case(f"backend-{b}", sub('["cpu", "cuda"]', f'["{b}"]', NOARCH))
      for b in ("tpu", "cann", "neuron", "metal", "rocm", "xpu", "npu", "CUDA", "vpu")),
    Case("backend-mlu", sub('["cpu", "cuda"]', '["mlu", "musa"]', NOARCH), PLUGIN),
    *(Case(f"name-{n}", sub('name = "relu"', f"name = {v}")) for n, v in (
        ("one-letter", '"r"'), ("underscore", '"re_lu"'), ("trailing-dash", '"relu-"'),
        ("capital", '"Relu"'), ("double-dash", '"my--kernel"'), ("digit-end", '"relu2"'),
        ("integer", "1"))),
    *(Case(f"{k}-{n}", general(f'{k} = "{v}"')) for k in ("upstream", "source") for n, v in (
        ("https", "https://github.com/org/relu"), ("scp", "git@github.com:org/relu.git"),
        ("git-ssh", "git+ssh://git@github.com/org/relu.git"), ("ftp", "ftp://example.com/relu"),
        ("file", "file:///home/relu"), ("words", "not a url"), ("bare-host", "github.com/org/relu"),
        ("scp-absolute", "host:/srv/relu.git"))),
    Case("general-unknown-key", general('maintainer = "me"')),
    Case("general-snake-case-key", general('python_depends = ["einops"]')),
    Case("python-depends", general('python-depends = ["einops"]')),
    Case("python-depends-unknown", general('python-depends = ["leftpad"]'), STRICTER),
    Case("python-depends-of-another-backend", table('[general.cuda]\npython-depends = ["nki"]'),
         STRICTER),
    Case("python-depends-string", general('python-depends = "einops"')),
    Case("python-depends-integer", general("python-depends = [1]")),
    Case("kernel-depends-version", general(f"kernel-depends = [{DEP}]")),
    Case("kernel-depends-empty", general("kernel-depends = []")),
    *(Case(f"kernel-depends-{n}", general(f"kernel-depends = [{v}]")) for n, v in (
        ("revision", '{repo-id = "a/b", revision = "main"}'), ("neither", '{repo-id = "a/b"}'),
        ("both", '{repo-id = "a/b", version = 1, revision = "main"}'),
        ("version-string", '{repo-id = "a/b", version = "1"}'),
        ("version-0", '{repo-id = "a/b", version = 0}'),
        ("version-negative", '{repo-id = "a/b", version = -1}'),
        ("revision-integer", '{repo-id = "a/b", revision = 1}'),
        ("without-repo-id", "{version = 1}"), ("unknown-key", '{repo-id = "a/b", version = 1, x = 1}'),
        ("snake-case", '{repo_id = "a/b", version = 1}'), ("string", '"a/b"'))),
    Case("kernel-depends-table", general(f"kernel-depends = {DEP}")),
    Case("kernel-depends-bad-repo-id", general('kernel-depends = [{repo-id = "not a repo", '
                                               'version = 1}]'), STRICTER),
    Case("kernel-depends-dotdot", general('kernel-depends = [{repo-id = "a/../b", '
                                          'version = 1}]'), STRICTER),
    Case("kernel-depends-empty-revision", general('kernel-depends = [{repo-id = "a/b", '
                                                  'revision = ""}]'), STRICTER),
    Case("hub-branch", sub("[general.hub]\n", '[general.hub]\nbranch = "main"\n')),
    Case("hub-branch-integer", sub("[general.hub]\n", "[general.hub]\nbranch = 1\n")),
    Case("hub-unknown-key", sub("[general.hub]\n", "[general.hub]\nx = 1\n")),
    Case("hub-bad-repo-id", sub("kernels-community/relu", "../relu"), STRICTER),
    # [general.<backend>]
    Case("cuda-table", table('[general.cuda]\nminver = "12.1"\nmaxver = "12.9"\n'
                             'python-depends = ["nvidia-cutlass-dsl"]\n'
                             f'kernel-depends = [{DEP}, {{repo-id = "a/b", revision = "x"}}]')),
    Case("cuda-table-empty", table("[general.cuda]")),
    Case("cuda-table-without-cuda-backend", table('[general.cuda]\nminver = "12.1"', NOARCH)),
    Case("cuda-table-unknown-key", table("[general.cuda]\nfoo = 1")),
    Case("cuda-table-not-a-table", general("cuda = 1")),
    Case("cuda-kernel-depends-neither", table('[general.cuda]\nkernel-depends = [{repo-id = '
                                              '"a/b"}]')),
    *(Case(f"cuda-minver-{n}", table(f"[general.cuda]\nminver = {v}")) for n, v in (
        ("word", '"abc"'), ("three-parts", '"12.1.0"'), ("one-part", '"12"'),
        ("integer", "12"), ("blanks", '" 12.1 "'), ("plus", '"+12.1"'), ("dot-0", '"12.0"'),
        ("leading-zero", '"012.01"'), ("empty", '""'), ("trailing-dot", '"12."'),
        ("inner-blank", '"12. 1"'), ("negative", '"12.-1"'), ("huge", '"99999999999999999999.1"'),
        ("underscore", '"1_2.1"'))),
    Case("neuron-table", table(f'[general.neuron]\npython-depends = ["nki"]\nkernel-depends = '
                               f'[{DEP}]')),
    Case("neuron-minver", table('[general.neuron]\nminver = "1.0"')),
    Case("xpu-table", table(f'[general.xpu]\npython-depends = ["onednn"]\nkernel-depends = [{DEP}]')),
    Case("xpu-minver", table('[general.xpu]\nminver = "1.0"')),
    Case("tpu-table", table('[general.tpu]\npython-depends = ["jax"]')),
    Case("tpu-kernel-depends", table(f"[general.tpu]\nkernel-depends = [{DEP}]")),
    *(Case(f"{b}-table", table(f'[general.{b}]\npython-depends = ["einops"]'))
      for b in ("rocm", "metal", "cpu", "cann", "npu")),
    Case("mlu-table", table(f'[general.mlu]\npython-depends = ["einops"]\nkernel-depends = [{DEP}]',
                            sub('["cpu", "cuda"]', '["cpu", "cuda", "mlu"]')), PLUGIN),
    # frameworks
    Case("no-framework", sub('[torch]\nsrc = ["torch-ext/torch_binding.cpp"]\n', "")),
    Case("torch-and-noarch", BUILD_TOML + "\n[torch-noarch]\n"),
    Case("torch-and-tvm-ffi", BUILD_TOML + '\n[tvm-ffi]\nsrc = ["a.cpp"]\n'),
    Case("noarch", NOARCH),
    Case("noarch-empty-kernel-table", NOARCH + "\n[kernel]\n"),
    Case("noarch-with-kernels", NOARCH + '\n[kernel.k]\nbackend = "cpu"\ndepends = []\nsrc = []\n',
         STRICTER),
    Case("noarch-arch-keys", sub("[torch-noarch]\n", '[torch-noarch]\ncuda_capabilities = ["8.0"]\n'
                                 'rocm_archs = ["gfx90a"]\npyext = ["py", "json"]\n', NOARCH)),
    Case("noarch-kebab-arch-key", sub("[torch-noarch]\n", '[torch-noarch]\ncuda-capabilities = '
                                      '["8.0"]\n', NOARCH)),
    Case("noarch-src", sub("[torch-noarch]\n", '[torch-noarch]\nsrc = ["a.py"]\n', NOARCH)),
    Case("torch-empty", sub('[torch]\nsrc = ["torch-ext/torch_binding.cpp"]\n', "[torch]\n")),
    Case("torch-every-key", torch('include = ["i"]\npyext = ["py", "json"]\ncxx-flags = ["-O3"]\n'
                                  'minver = "2.8"\nmaxver = "2.10"')),
    *(Case(f"torch-minver-{n}", torch(f'minver = "{v}"')) for n, v in (
        ("three-parts", "2.8.0"), ("one-part", "2"), ("dot-0", "2.0"))),
    Case("torch-maxver-below-minver", torch('minver = "2.10"\nmaxver = "2.8"')),
    *(Case(f"stable-abi-{n}", torch(f"stable-abi = {v}")) for n, v in (
        ("string", '"2.10"'), ("three-parts", '"2.10.0"'), ("integer", "2"), ("word", '"x"'))),
    Case("stable-abi-table", BUILD_TOML + '\n[torch.stable-abi]\ncuda = "2.10"\ntpu = "2.10"\n'
         'cann = "2.9"\nneuron = "2.9"\n'),
    Case("stable-abi-table-empty", BUILD_TOML + "\n[torch.stable-abi]\n"),
    Case("stable-abi-table-unknown-backend", BUILD_TOML + '\n[torch.stable-abi]\nfoo = "2.10"\n'),
    Case("stable-abi-table-three-parts", BUILD_TOML + '\n[torch.stable-abi]\ncuda = "2.10.1"\n'),
    Case("stable-abi-table-mlu", BUILD_TOML + '\n[torch.stable-abi]\nmlu = "2.10"\n', PLUGIN),
    Case("torch-snake-case-key", torch('cxx_flags = ["-O3"]')),
    Case("torch-unknown-key", torch("sources = []")),
    Case("torch-src-integer", sub('src = ["torch-ext/torch_binding.cpp"]', "src = [1]")),
    Case("torch-include-string", torch('include = "i"')),
    Case("tvm-ffi", sub("[torch]\n", '[tvm-ffi]\ninclude = ["i"]\npyext = ["py"]\n'
                        'cxx-flags = ["-O2"]\n')),
    Case("tvm-ffi-without-src", sub('[torch]\nsrc = ["torch-ext/torch_binding.cpp"]',
                                    "[tvm-ffi]")),
    Case("tvm-ffi-minver", sub("[torch]\n", '[tvm-ffi]\nminver = "2.8"\n')),
    Case("tvm-ffi-stable-abi", sub("[torch]\n", '[tvm-ffi]\nstable-abi = "2.10"\n')),
    Case("top-level-unknown-table", BUILD_TOML + "\n[foo]\nx = 1\n"),
    Case("top-level-unknown-key", "x = 1\n" + BUILD_TOML),
    # [kernel.<name>]
    Case("kernel-cpu", kernel('cxx-flags = ["-O3"]\ninclude = ["i"]')),
    Case("kernel-cuda", kernel('cuda-capabilities = ["8.0", "9.0a"]\ncuda-flags = ["-x"]\n'
                               'cuda-minver = "12.4"\ncxx-flags = ["a"]', "cuda")),
    Case("kernel-cuda-minver-three-parts", kernel('cuda-minver = "12.4.1"', "cuda")),
    Case("kernel-metal", kernel('cxx-flags = ["a"]', "metal", '["torch", "metal-cpp"]')),
    Case("kernel-rocm", kernel('rocm-archs = ["gfx90a"]\nhip-flags = ["x"]', "rocm")),
    Case("kernel-xpu", kernel('sycl-flags = ["x"]', "xpu", '["torch", "sycl_tla"]')),
    *(Case(f"kernel-{b}", kernel("", b)) for b in ("tpu", "neuron", "cann", "npu", "vpu")),
    Case("kernel-mlu", kernel("", "mlu"), PLUGIN),
    Case("kernel-rocm-key-on-cpu", kernel('rocm-archs = ["gfx90a"]')),
    Case("kernel-hip-flags-on-cuda", kernel('hip-flags = ["x"]', "cuda")),
    Case("kernel-cuda-capability-integer", kernel("cuda-capabilities = [8]", "cuda")),
    Case("kernel-snake-case-key", kernel('cuda_capabilities = ["8.0"]', "cuda")),
    Case("kernel-unknown-key", kernel("foo = 1")),
    *(Case(f"kernel-without-{k}", sub(old, new, kernel(""))) for k, old, new in (
        ("backend", '[kernel.k]\nbackend = "cpu"', "[kernel.k]"),
        ("depends", 'depends = ["torch"]\nsrc = ["k.cpp"]', 'src = ["k.cpp"]'),
        ("src", '\nsrc = ["k.cpp"]', ""))),
    Case("kernel-depends-every-build-dependency", kernel("", "cuda", '["torch", "cutlass_2_10", '
         '"cutlass_3_5", "cutlass_3_6", "cutlass_3_8", "cutlass_3_9", "cutlass_4_0", '
         '"cutlass_4_4", "cutlass_4_5", "sycl_tla", "metal-cpp"]')),
    Case("kernel-depends-unknown", kernel("", "cpu", '["numpy"]')),
    Case("kernel-depends-dashes", kernel("", "cuda", '["cutlass-3-6"]')),
    Case("kernel-backend-not-declared", sub('backends = ["cpu", "cuda"]', 'backends = ["cuda"]'),
         STRICTER),
    Case("kernel-with-tvm-ffi", sub('[torch]\nsrc = ["torch-ext/torch_binding.cpp"]',
                                    '[tvm-ffi]\nsrc = ["b.cpp"]')),
    Case("kernel-quoted-name", sub("[kernel.relu_cpu]", '[kernel."relu.cpu"]')),
    Case("kernel-not-a-table", NOARCH + "\n[kernel]\nk = 1\n"),
    # edition 6: kernels chosen by language, build-layout, [mlx-noarch]
    Case("e6", E6),
    Case("e6-noarch", six(NOARCH)),
    Case("e6-without-framework", six(sub('[torch]\nsrc = ["torch-ext/torch_binding.cpp"]\n', ""))),
    Case("e6-kernel-with-backend", sub('language = "cpp-cpu"', 'backend = "cpu"', E6)),
    Case("e6-kernel-with-backend-and-language", sub('language = "cpp-cpu"',
                                                    'language = "cpp-cpu"\nbackend = "cpu"', E6)),
    Case("e6-kernel-without-language", sub('language = "cpp-cpu"\n', "", E6)),
    *(Case(f"e6-language-{n}", sub('"cpp-cpu"', v, E6)) for n, v in (
        ("cpp", '"cpp"'), ("rust", '"rust"'), ("capital", '"CPP-CPU"'), ("integer", "1"),
        ("cuda", '"cuda"'))),
    Case("e6-language-in-edition-5", sub('backend = "cpu"', 'language = "cpp-cpu"')),
    Case("e6-language-and-backend-in-edition-5", sub('backend = "cpu"',
                                                     'backend = "cpu"\nlanguage = "cpp-cpu"')),
    *(Case(f"e6-{lang}", kernel6(lang, keys)) for lang, keys in LANGUAGES.items()),
    *(Case(f"e6-{lang}-without-{k.split(' ')[0]}",
           kernel6(lang, "\n".join(x for x in keys.splitlines() if x != k)))
      for lang, keys in LANGUAGES.items() for k in keys.splitlines()
      if not k.startswith("cuda-capabilities")),
    *(Case(f"e6-{lang}-key-{k.split(' ')[0]}", kernel6(lang, f"{keys}\n{k}"))
      for lang, keys in LANGUAGES.items() for k in (
          'cuda-flags = ["-x"]', 'hip-flags = ["x"]', 'sycl-flags = ["x"]', 'rocm-archs = ["a"]',
          'cxx-flags = ["-O3"]', 'include = ["i"]', 'cargo-manifest = "Cargo.toml"',
          'cuda-capabilities = ["8.0"]', 'tileiras-minver = "13.2"', 'cuda-minver = "12.4"')
      if k.split(" ")[0] + " " not in keys),
    *(Case(f"e6-{lang}-in-{fw}", kernel6(lang, LANGUAGES[lang], fw),
           STRICTER if (lang, fw) == ("cpp-cpu", "[torch-noarch]") else SAME)
      for lang in ("rust-cpu", "rust-cuda-oxide", "rust-cutile", "cpp-cpu")
      for fw in ("[torch]", "[torch-noarch]", "[tvm-ffi]\nsrc = []")),
    *(Case(f"e6-tileiras-minver-{v}", kernel6("rust-cutile", f'cargo-manifest = "C.toml"\n'
                                              f'src = ["a.rs"]\ntileiras-minver = "{v}"'))
      for v in ("12.8", "13.0", "13.1", "13.2", "13.10", "14.0", "13.2.0", "13", "x")),
    Case("e6-cargo-manifest-integer", kernel6("rust-cpu", 'cargo-manifest = 1\nsrc = []')),
    Case("e6-rust-and-cpp-kernels", kernel6("rust-cpu", LANGUAGES["rust-cpu"]) +
         '\n[kernel.j]\nlanguage = "cpp-cpu"\ndepends = []\nsrc = []\n'),
    Case("e6-cpp-cuda-kernel-backend-not-declared", kernel6("cpp-cuda", LANGUAGES["cpp-cuda"],
                                                            backends='["cpu"]'), STRICTER),
    *(Case(f"e6-depends-{n}", sub('depends = ["torch"]', f"depends = {v}", E6)) for n, v in (
        ("shim", '["torch", "torch-stable-abi-shim"]'), ("unknown", '["numpy"]'),
        ("metal-cpp", '["metal-cpp"]'))),
    Case("e5-depends-shim", sub('depends = ["torch"]', 'depends = ["torch-stable-abi-shim"]')),
    *(Case(f"e6-build-layout-{n}", general(f"build-layout = {v}", E6)) for n, v in (
        ("files", '"files"'), ("zip", '"zip"'), ("capital", '"ZIP"'), ("tar", '"tar"'),
        ("integer", "1"), ("table", "{zip = {}}"), ("empty-table", "{}"))),
    Case("e6-build-layout-in-edition-5", general('build-layout = "zip"')),
    Case("e6-build-layout-in-legacy", general('build-layout = "zip"', LEGACY)),
    Case("e6-mlx-noarch", MLX),
    Case("e6-mlx-noarch-pyext", sub("[mlx-noarch]\n", '[mlx-noarch]\npyext = ["py", "json"]\n',
                                    MLX)),
    Case("e6-mlx-noarch-unknown-key", sub("[mlx-noarch]\n", '[mlx-noarch]\nsrc = ["a"]\n', MLX)),
    Case("e6-mlx-noarch-cpu", sub('["metal"]', '["cpu"]', MLX)),
    Case("e6-mlx-noarch-metal-and-cpu", sub('["metal"]', '["metal", "cpu"]', MLX)),
    Case("e6-mlx-noarch-and-torch", MLX + '\n[torch]\nsrc = ["a.cpp"]\n'),
    Case("e6-mlx-noarch-and-torch-noarch", MLX + "\n[torch-noarch]\n"),
    Case("e6-mlx-noarch-and-tvm-ffi", MLX + '\n[tvm-ffi]\nsrc = ["a.cpp"]\n'),
    Case("e6-mlx-noarch-with-kernels", MLX + '\n[kernel.k]\nlanguage = "cpp-metal"\n'
         'depends = []\nsrc = []\n', STRICTER),
    Case("e6-mlx-noarch-in-edition-5", sub("edition = 6", "edition = 5", MLX)),
    Case("e6-mlx-noarch-in-legacy", sub("edition = 6\n", "", MLX)),
    Case("e6-tpu-kernel-depends", table(f"[general.tpu]\nkernel-depends = [{DEP}]", E6)),
    Case("e6-cuda-table", table(f'[general.cuda]\nminver = "12.1"\nkernel-depends = [{DEP}]', E6)),
    Case("e6-metal-table", table('[general.metal]\npython-depends = ["einops"]', E6)),
    Case("e6-kernel-depends", general(f"kernel-depends = [{DEP}]", E6)),
    Case("e6-stable-abi-table", E6 + '\n[torch.stable-abi]\ncuda = "2.10"\n'),
    Case("e6-backend-npu", sub('["cpu", "cuda"]', '["npu"]', six(NOARCH))),
    Case("e6-backend-mlu", sub('["cpu", "cuda"]', '["mlu"]', six(NOARCH)), PLUGIN),
    Case("e6-edition-string", sub("edition = 6", 'edition = "6"', E6)),
    # TOML 1.1 syntax, which neither parser reads
    Case("toml-newline-in-inline-table", general('kernel-depends = [{repo-id = "a/b",\n'
                                                 "  version = 1}]")),
    Case("toml-trailing-comma-in-inline-table", general('kernel-depends = [{repo-id = "a/b", '
                                                        "version = 1,}]")),
]

CORPUS_FILES = sorted(CORPUS.glob("*.build.toml"))

def _kernels_verdict(build_cls: Any, version_cls: Any, folder: Path) -> dict[str, Any]:
    try:
        build = build_cls.open(folder)
    except ValueError as e:
        return {"ok": False, "error": str(e)}
    return {"ok": True, "deps": {
        str(backend).lower(): [
            [d.repo_id, "version", d.version.version] if isinstance(d.version, version_cls.Version)
            else [d.repo_id, "revision", d.version.revision]
            for d in build.all_kernel_depends(backend)]
        for backend in build.general.backends}}


@pytest.fixture(scope="module")
def kernels_verdicts(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    """The pinned kernels release's verdict on every case and corpus file, from its own
    reader (``kernels._rust.Build.open``), in this process."""
    import kernels
    from kernels._rust import Build, KernelVersion

    assert kernels.__version__ == kernels_pin()
    root = tmp_path_factory.mktemp("cases")
    texts = {c.id: c.text for c in CASES}
    texts.update({f"corpus-{p.name}": p.read_text(encoding="utf-8") for p in CORPUS_FILES})
    out = {}
    for name, text in texts.items():
        (root / name).mkdir()
        (root / name / "build.toml").write_text(text, encoding="utf-8")
        out[name] = _kernels_verdict(Build, KernelVersion, root / name)
    return out


def ours(text: str) -> tuple[Any, list[str]]:
    """Our verdict: the BuildToml (None when refused) and the issues, described."""
    try:
        data = loads_toml(text)
    except BuildConfigError as e:
        return None, [str(e)]
    config, issues = validate_build_data(data)
    return config, [i.describe() for i in issues]


def depends_by_backend(build: Any) -> dict[str, list[list[Any]]]:
    return {b: [[d.repo_id, "version", d.version] if d.version is not None
                else [d.repo_id, "revision", d.revision] for d in build.kernel_depends(b)]
            for b in build.config.general.backends}


def test_the_table_covers_each_verdict() -> None:
    assert len({c.id for c in CASES}) == len(CASES)
    assert all(loads_toml(c.text) for c in CASES if not c.id.startswith("toml-"))
    assert {c.ours for c in CASES} == {SAME, STRICTER, PLUGIN}


def disagreement(case: Case, theirs: dict[str, Any]) -> str | None:
    """How our verdict on ``case`` departs from what its ``ours`` says, or None."""
    build, issues = ours(case.text)
    said = f"{case.id} ({case.ours}): kernels: {theirs.get('error', 'accepted')}; ours: {issues or 'accepted'}"
    agreed = {SAME: (build is not None) == theirs["ok"], STRICTER: theirs["ok"] and build is None,
              PLUGIN: not theirs["ok"] and build is not None
              and any("kernel-builder does not know" in n for n in build.notes)}[case.ours]
    if agreed and build is not None and theirs["ok"] and depends_by_backend(build) != theirs["deps"]:
        return f"{case.id}: kernel-depends differ: ours {depends_by_backend(build)}, kernels {theirs['deps']}"
    return None if agreed else said


@pytest.mark.usefixtures("manager")
def test_we_agree_with_kernels_on_every_case_and_the_corpus(kernels_verdicts: dict) -> None:
    """Every case of the table and every corpus file (accepted by both) in one run: the list
    of disagreements names each case with both verdicts."""
    corpus = [Case(f"corpus-{p.name}", p.read_text(encoding="utf-8")) for p in CORPUS_FILES]
    assert all(kernels_verdicts[c.id]["ok"] for c in corpus)
    found = [d for c in [*CASES, *corpus] if (d := disagreement(c, kernels_verdicts[c.id]))]
    assert found == []
