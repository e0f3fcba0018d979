"""The error catalogue: every bad input raises one documented error, and docs/errors.md says so.

``CASES`` is the catalogue: (case id, section, the input, a callable that triggers the
error, the expected error type, a fragment of the message, what to do). The tests check
that each callable raises exactly that type with that fragment, and that docs/errors.md
lists every case (with the fragment, the type and the fix) and no other.

Regenerate the tables of docs/errors.md after adding a case::

    KERNEL_PLUGINS_WRITE_ERRORS_DOC=1 pytest tests/errors/test_errors_catalog.py
"""

from __future__ import annotations

import json
import os
import re
import types
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from kernel_plugins_check.buildconfig import read_build_toml

from kernel_plugins import errors as E
from kernel_plugins import hub, plugins
from kernel_plugins.detection import get_device
from kernel_plugins.device import BackendSpec, DeviceInfo, PyDepend, parse_device
from kernel_plugins.hookspecs import hookimpl
from kernel_plugins.importer import check_python_depends, import_snapshot
from kernel_plugins.integrity import verify_digest
from kernel_plugins.metadata import check_minver, parse_metadata, read_metadata
from kernel_plugins.provenance import KernelLoad
from kernel_plugins.registry import module_name
from kernel_plugins.sources import local_variants, parse_local_kernels, parse_name
from kernel_plugins.trust import check_trusted
from kernel_plugins.variants import parse_variant, validate_variant_name
from tests.support.inputs import BUILD_TOML, make_variant, metadata, unvalidated_device

DOC = Path(__file__).resolve().parents[2] / "docs" / "errors.md"
BEGIN, END = "<!-- BEGIN GENERATED CATALOGUE -->", "<!-- END GENERATED CATALOGUE -->"
WRITE_ENV = "KERNEL_PLUGINS_WRITE_ERRORS_DOC"


@dataclass
class Env:
    """What a trigger may use: a fresh folder and pytest's monkeypatch."""

    tmp: Path
    monkeypatch: pytest.MonkeyPatch


@dataclass(frozen=True)
class Case:
    """One catalogue entry."""

    id: str
    section: str
    input: str
    trigger: Callable[[Env], Any]
    error: type[E.KernelPluginsError]
    fragment: str
    fix: str


REF = hub.HubRef("org/name", "kernel", None, "0" * 40)


def _meta_file(env: Env, content: str | bytes) -> Path:
    folder = env.tmp / "torch-cpu"
    folder.mkdir()
    path = folder / "metadata.json"
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    return folder


def _read_meta(content: str | bytes) -> Callable[[Env], Any]:
    return lambda env: read_metadata(_meta_file(env, content))


def _read_toml(content: str | bytes) -> Callable[[Env], Any]:
    def run(env: Env) -> Any:
        path = env.tmp / "build.toml"
        path.write_bytes(content if isinstance(content, bytes) else content.encode())
        return read_build_toml(path)

    return run


def _read_pyproject(content: str) -> Callable[[Env], Any]:
    def run(env: Env) -> Any:
        from kernel_plugins.lock import read_dependencies

        (env.tmp / "pyproject.toml").write_text(content)
        return read_dependencies(env.tmp)

    return run


def _read_lock(content: str) -> Callable[[Env], Any]:
    def run(env: Env) -> Any:
        from kernel_plugins.lock import read_lockfile

        (env.tmp / "kernels.lock").write_text(content)
        return read_lockfile(env.tmp)

    return run


def _lock_fifo(env: Env) -> Any:
    from kernel_plugins.lock import read_lockfile

    os.mkfifo(env.tmp / "kernels.lock")
    return read_lockfile(env.tmp)


def _found_lock_writable_by_others(env: Env) -> Any:
    from kernel_plugins.lock import _discovery, find_lockfile

    env.monkeypatch.setattr(_discovery, "_temp_roots", lambda: [])
    (env.tmp / "pyproject.toml").write_text("")
    (env.tmp / "kernels.lock").write_text("[]")
    (env.tmp / "kernels.lock").chmod(0o666)
    return find_lockfile(str(env.tmp / "app.py"), what="LockedLayerRepository('org/name')")


def _lock_hashes_of_another_commit(env: Env) -> Any:
    from kernel_plugins.lock import read_lockfile

    (env.tmp / "kernels.lock").write_text(json.dumps([
        {"dependency": {"repo-id": "org/name", "version": 1}, "lock": {"commit": "b" * 40}}]))
    (env.tmp / "kernels.lock.variants").write_text(json.dumps([LOCK_ENTRY]))
    return read_lockfile(env.tmp)


def _found_lock_link(env: Env) -> Any:
    from kernel_plugins.lock import _discovery, find_lockfile

    env.monkeypatch.setattr(_discovery, "_temp_roots", lambda: [])
    (env.tmp / "pyproject.toml").write_text("")
    (env.tmp / "real.lock").write_text("[]")
    (env.tmp / "kernels.lock").symlink_to(env.tmp / "real.lock")
    return find_lockfile(str(env.tmp / "app.py"), what="LockedLayerRepository('org/name')")


def _no_lock_outside_temp(env: Env) -> Any:
    from kernel_plugins.lock import find_lockfile

    (env.tmp / "kernels.lock").write_text("[]")
    env.monkeypatch.chdir(env.tmp)
    return find_lockfile(str(env.tmp / "cell.py"), what="LockedLayerRepository('org/name')")


LOCK_ENTRY = {"repo_id": "org/name", "sha": "a" * 40,
              "variants": {"torch-cpu": {"hash": "sha256-" + "0" * 64,
                                         "hash_type": "git_lfs_concat"}}}


def _lock_with(**changes: Any) -> str:
    entry = {**LOCK_ENTRY, **changes}
    return json.dumps([{k: v for k, v in entry.items() if v is not None}])


def _plugin(name: str = "mlu", **hooks: Callable[..., Any]) -> types.ModuleType:
    module = types.ModuleType(f"fake_{name}")
    base: dict[str, Callable[..., Any]] = {
        "backend_spec": lambda: BackendSpec(name=name, device_type=name, display_name=name),
        "detect_device": lambda: DeviceInfo(backend=name, device_type=name, count=1),
        "list_variants": lambda device, system: [f"torch-{name}"],
    }
    for hook, fn in {**base, **hooks}.items():
        setattr(module, hook, hookimpl(fn))
    return module


def _strict_register(module: types.ModuleType, name: str = "mlu",
                     first: types.ModuleType | None = None) -> Callable[[Env], Any]:
    def run(env: Env) -> Any:
        pm = plugins.get_manager()
        if first is not None:
            pm.register(first, name=name, distribution="kernel-plugins-mlu")
        env.monkeypatch.setenv("KERNEL_PLUGINS_STRICT", "1")
        return pm.register(module, name=name, distribution="other-dist")

    return run


def _strict_detect(module: types.ModuleType) -> Callable[[Env], Any]:
    def run(env: Env) -> Any:
        pm = plugins.get_manager()
        pm.register(module, name="mlu")
        env.monkeypatch.setenv("KERNEL_PLUGINS_STRICT", "1")
        return pm.detect("mlu")

    return run


def _list_variants(answer: Any) -> Callable[[Env], Any]:
    def run(env: Env) -> Any:
        from kernel_plugins.device import SystemInfo

        pm = plugins.get_manager()
        pm.register(_plugin(list_variants=lambda device, system: answer), name="mlu")
        device = DeviceInfo(backend="mlu", device_type="mlu", count=1)
        return pm.list_variants(device, SystemInfo(cpu="x86_64", os="linux"))

    return run


def _import_error(env: Env) -> Any:
    meta = parse_metadata(metadata(id="_broken_kernel_9f8e"), where="metadata.json")
    folder = make_variant(env.tmp, "torch-cpu", None, {"__init__.py": "raise RuntimeError('x')"})
    from kernel_plugins.integrity import read_variant

    load = KernelLoad("org/name", "torch-cpu", folder, meta, module_name(meta.id))
    return import_snapshot(load, read_variant(folder))


def _symlinked_variant(env: Env) -> Any:
    outside = make_variant(env.tmp / "outside", "torch-cpu", metadata())
    (env.tmp / "repo" / "build").mkdir(parents=True)
    os.symlink(outside, env.tmp / "repo" / "build" / "torch-cpu")
    return local_variants(env.tmp / "repo")


def _ambiguous(env: Env) -> Any:
    (env.tmp / "examples" / "relu").mkdir(parents=True)
    env.monkeypatch.chdir(env.tmp)
    return parse_name("examples/relu")


def _linked_file(to_folder: bool) -> Callable[[Env], Any]:
    def run(env: Env) -> Any:
        from kernel_plugins.integrity import read_variant

        folder = make_variant(env.tmp, "torch-cpu", None, {"__init__.py": "", "real/x.py": ""})
        outside = env.tmp / "evil.py"
        outside.write_text("")
        if to_folder:
            os.symlink(folder / "real", folder / "alias")
        else:
            os.symlink(outside, folder / "evil.py")
        return read_variant(folder)

    return run


def _zip_member_escape(env: Env) -> Any:
    import zipfile

    from kernel_plugins.integrity import read_variant
    from kernel_plugins.integrity.archive import archive_view

    folder = make_variant(env.tmp, "torch-cpu", None, {})
    with zipfile.ZipFile(folder / "_relu_zip.zip", "w") as z:
        z.writestr("__init__.py", "")
        z.writestr("../evil.py", "")
    return archive_view(read_variant(folder), "_relu_zip.zip")


def _kernel_exits(env: Env) -> Any:
    from kernel_plugins.integrity import read_variant

    meta = parse_metadata(metadata(id="_exiting_kernel_1c2d"), where="metadata.json")
    folder = make_variant(env.tmp, "torch-cpu", None, {"__init__.py": "raise SystemExit(0)"})
    return import_snapshot(KernelLoad("org/name", "torch-cpu", folder, meta, module_name(meta.id)),
                           read_variant(folder))


def _offline_uncached(env: Env) -> Any:
    from huggingface_hub import constants

    env.monkeypatch.setattr(constants, "HF_HUB_CACHE", str(env.tmp / "cache"))
    env.monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    if hasattr(constants, "is_offline_mode"):
        env.monkeypatch.setattr(constants, "is_offline_mode", lambda: True)
    return hub.resolve("org/uncached")


def _torch_version(version: str | None) -> Callable[[Env], Any]:
    def trigger(env: Env) -> Any:
        from kernel_plugins import torch_support

        env.monkeypatch.setattr(torch_support, "torch_version_string", lambda: version)
        import kernel_plugins

        return kernel_plugins.load("./examples/relu", device="cpu")

    return trigger


def _malformed_endpoint(env: Env) -> Any:
    from huggingface_hub import constants

    env.monkeypatch.setattr(constants, "HF_HUB_CACHE", str(env.tmp / "cache"))
    return hub.resolve("org/name", version=1, endpoint="notaurl")


def _offline(env: Env) -> None:
    from huggingface_hub import constants

    env.monkeypatch.setattr(constants, "HF_HUB_CACHE", str(env.tmp / "cache"))
    env.monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    env.monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    if hasattr(constants, "is_offline_mode"):
        env.monkeypatch.setattr(constants, "is_offline_mode", lambda: True)


def _offline_trust(env: Env) -> Any:
    _offline(env)
    return check_trusted("acme/kernel")


def _minver(value: str) -> Callable[[Env], Any]:
    meta = parse_metadata(metadata(kernels_minver=value), where="metadata.json")
    return lambda env: check_minver(meta, where="build/torch-cpu/metadata.json")


def _disk_full(env: Env) -> Any:
    import errno

    exc = OSError(errno.ENOSPC, "No space left on device", "/cache/blobs/x.incomplete")
    raise hub.map_error(exc, "org/name", None, None, "downloading torch-cpu")


def _changed_digest(env: Env) -> Any:
    folder = make_variant(env.tmp, "torch-cpu", None, {"__init__.py": "A = 1\n"})
    digest = {"algorithm": "sha256", "files": {"__init__.py": "A" * 43 + "="}}
    return verify_digest(folder, digest, where="org/name torch-cpu")


def _load_depending(*pairs: tuple[str, list[dict[str, Any]]], offline: bool = False) -> Callable[[Env], Any]:
    """Load the first of kernels ``kernels-community/<name>`` (``LOCAL_KERNELS``) with these
    ``kernel-depends`` (``offline``: with ``HF_HUB_OFFLINE=1``)."""
    def run(env: Env) -> Any:
        import kernel_plugins

        if offline:
            _offline(env)

        entries = []
        for i, (name, depends) in enumerate(pairs):
            make_variant(env.tmp / name / "build", "torch-cpu",
                         metadata(name=name, id=f"_dep_case_{i}_{name.replace('-', '_')}",
                                  kernel_depends=depends))
            entries.append(f"kernels-community/{name}={env.tmp / name}")
        env.monkeypatch.setenv("LOCAL_KERNELS", os.pathsep.join(entries))
        return kernel_plugins.load(f"kernels-community/{pairs[0][0]}", device="cpu")

    return run


def _get_kernel_dep(env: Env) -> Any:
    import kernel_plugins

    return kernel_plugins.get_kernel_dep("kernels-community/activation")


def _python_depends(names: list[str], spec: BackendSpec) -> Callable[[Env], Any]:
    meta = parse_metadata(metadata(python_depends=names), where="metadata.json")
    return lambda env: check_python_depends(meta, spec, where="build/torch-cuda")


CUDA_SPEC = BackendSpec(
    name="cuda", device_type="cuda", display_name="CUDA",
    python_depends={"nvidia-cutlass-dsl": PyDepend("nvidia-cutlass-dsl", "cutlass_not_here")},
)
HUGE = 1 << 20

V, R, D, M, B, P, L, T, G, K = (
    "Variant names", "Repository ids, revisions and versions", "Device strings",
    "metadata.json", "build.toml", "pyproject.toml and kernels.lock",
    "LOCAL_KERNELS and local paths", "Path traversal and escapes", "Plugins",
    "Kernel import, dependencies and integrity",
)

CASES: list[Case] = [
    # --- variant names
    Case("variant-empty", V, '`""`', lambda e: validate_variant_name(""), E.VariantNameError,
         "variant name is empty", "Name the variant folder, e.g. `torch-cpu`."),
    Case("variant-unicode", V, '`"torch-cpü"`', lambda e: validate_variant_name("torch-cpü"),
         E.VariantNameError, "has characters other than lowercase ASCII letters",
         "Use only `a-z`, `0-9`, `_`, `.` and `-`."),
    Case("variant-huge", V, "a 1000-character name",
         lambda e: validate_variant_name("torch-" + "x" * 994), E.VariantNameError,
         "is 1000 characters long (at most 128)", "Use a real variant name (at most 128 chars)."),
    Case("variant-dotdot", V, '`".."`', lambda e: validate_variant_name(".."),
         E.VariantNameError, "contains a path separator or '..'",
         "A variant is one folder directly under `build/`."),
    Case("variant-separator", V, '`"torch-cpu/../x"`, `"a\\\\b"`',
         lambda e: validate_variant_name("torch-cpu/../x"), E.VariantNameError,
         "contains a path separator or '..'", "A variant is one folder directly under `build/`."),
    Case("variant-not-string", V, "`None`", lambda e: validate_variant_name(None),
         E.VariantNameError, "variant name must be a string, got NoneType", "Pass a string."),
    Case("variant-unknown-form", V, '`"cuda12-linux"`', lambda e: parse_variant("cuda12-linux"),
         E.VariantNameError, "has no known form",
         "Use one of the forms the message lists, e.g. `torch210-cxx11-cu128-x86_64-linux`."),
    # --- repo ids, revisions, versions
    Case("repo-id-empty", R, '`""`', lambda e: hub.validate_repo_id(""), E.RepoIdError,
         "expected exactly one '/'", "Use `org/name`."),
    Case("repo-id-three-parts", R, '`"a/b/c"`', lambda e: hub.validate_repo_id("a/b/c"),
         E.RepoIdError, "expected exactly one '/'", "Use `org/name`."),
    Case("repo-id-bad-characters", R, '`"org/na me"`',
         lambda e: hub.validate_repo_id("org/na me"), E.RepoIdError,
         "must start with a letter or digit and contain only letters, digits",
         "Remove spaces and other characters."),
    Case("repo-id-dotdot", R, '`"org/a..b"`', lambda e: hub.validate_repo_id("org/a..b"),
         E.RepoIdError, "must not contain '--' or '..'", "Remove `..` / `--`."),
    Case("repo-id-too-long", R, "a 97-character name",
         lambda e: hub.validate_repo_id("org/" + "a" * 97), E.RepoIdError,
         "is 97 characters long (at most 96)", "Shorten it."),
    Case("repo-id-git-suffix", R, '`"org/name.git"`',
         lambda e: hub.validate_repo_id("org/name.git"), E.RepoIdError,
         "drop the '.git' suffix", "Drop `.git`."),
    Case("repo-id-hub-page-address", R, '`"https://huggingface.co/org/name/tree/main"`',
         lambda e: parse_name("https://huggingface.co/org/name/tree/main"), E.RepoIdError,
         "pass 'org/name' with revision='main' instead",
         "Pass the repository id and the revision (`https://huggingface.co/org/name` alone is "
         "read as `org/name`)."),
    Case("repo-id-other-site-address", R, '`"https://github.com/org/name"`',
         lambda e: parse_name("https://github.com/org/name"), E.RepoIdError,
         "is not the address of a Hub repository", "Pass `org/name`, a short name or a folder."),
    Case("trust-look-alike", R, '`"kernels-comunity/activation"`',
         lambda e: check_trusted("kernels-comunity/activation"), E.TrustError,
         "did you mean 'kernels-community'",
         "Fix the spelling; a look-alike of a trusted name is never advised to be trusted."),
    Case("hub-deadline-bad", R, "`KERNEL_PLUGINS_HUB_DEADLINE=soon`",
         lambda e: (e.monkeypatch.setenv("KERNEL_PLUGINS_HUB_DEADLINE", "soon"), hub.request_args(None)),
         E.HubError, "KERNEL_PLUGINS_HUB_DEADLINE='soon': give the seconds one Hub request may take",
         "Set it to a number of seconds (default 300), or unset it."),
    Case("trust-offline-unknown", R, "`acme/kernel` with `HF_HUB_OFFLINE=1`, nothing remembered",
         _offline_trust, E.TrustError,
         "HF_HUB_OFFLINE=1 is set and no answer of the Hub about 'acme' is cached, so only that "
         "list applies", "Load it once online (the Hub's answer is remembered), or pass "
         "`trust_remote_code=True`."),
    Case("repo-id-not-string", R, "`42`", lambda e: hub.validate_repo_id(42), E.RepoIdError,
         "must be a string, got int", "Pass `org/name` as a string."),
    Case("kernel-name-empty", R, '`load("  ")`', lambda e: parse_name("  "), E.SourceError,
         "kernel name is empty", "Pass `org/name`, a short name or a local path."),
    Case("revision-empty", R, '`revision=""`',
         lambda e: hub.resolve("org/name", revision=""), E.RevisionError,
         "pass a branch, tag or commit sha as a non-empty string", "Pass a real revision."),
    Case("revision-traversal", R, '`revision="../../refs"`',
         lambda e: hub.resolve("org/name", revision="../../refs"), E.RevisionError,
         "must not contain '..', empty path parts, backslashes",
         "Pass a branch, tag or commit sha."),
    Case("revision-and-version", R, '`revision="main", version=1`',
         lambda e: hub.resolve("org/name", revision="main", version=1), E.RevisionError,
         "pass only one of them", "Pass either `revision` or `version`."),
    Case("version-zero", R, "`version=0`", lambda e: hub.resolve("org/name", version=0),
         E.RevisionError, "Invalid version 0", "Versions start at 1 (branch `v1`)."),
    Case("version-negative", R, "`version=-1`", lambda e: hub.resolve("org/name", version=-1),
         E.RevisionError, "Invalid version -1", "Versions start at 1."),
    Case("version-not-integer", R, '`version="1"`, `version=1.5`',
         lambda e: hub.resolve("org/name", version="1"), E.RevisionError,  # type: ignore[arg-type]
         "Invalid version '1'", "Pass an `int`."),
    Case("version-bool", R, "`version=True`", lambda e: hub.resolve("org/name", version=True),
         E.RevisionError, "Invalid version True", "Pass an `int`, not a bool."),
    # --- devices
    Case("device-bad-index", D, '`"mlu:x"`', lambda e: parse_device("mlu:x"), E.DeviceError,
         "invalid device string 'mlu:x'", "Use `type` or `type:N`, e.g. `mlu:1`."),
    Case("device-negative-index", D, '`"cuda:-1"`', lambda e: parse_device("cuda:-1"),
         E.DeviceError, "invalid device string 'cuda:-1'", "Indices start at 0."),
    Case("device-not-string", D, "`3.5`", lambda e: parse_device(3.5), E.DeviceError,
         "device must be a string like 'cuda' or 'mlu:1' or a torch.device, got float",
         "Pass a string or a `torch.device`."),
    Case("device-unknown-type", D, '`"qpu"`', lambda e: get_device("qpu"),
         E.UnknownDeviceError, "unknown device type 'qpu': no installed backend provides it",
         "Install the backend distribution that provides it."),
    Case("device-plugin-not-installed", D, '`"mlu"` without the plugin',
         lambda e: get_device("mlu"), E.UnknownDeviceError, "pip install kernel-plugins-mlu",
         "Install the plugin the message names."),
    Case("device-index-out-of-range", D, '`"cpu:3"`', lambda e: get_device("cpu:3"),
         E.DeviceError, "device cpu:3 requested, but cpu has 1 device(s)",
         "Use an index below the count."),
    # --- metadata.json
    Case("metadata-missing", M, "no metadata.json", lambda e: read_metadata(e.tmp),
         E.MetadataError, "every build variant needs a metadata.json",
         "Point at a variant folder, or rebuild the kernel."),
    Case("metadata-malformed", M, "`{`", _read_meta("{"), E.MetadataError,
         "malformed JSON at line 1 column 2", "Rebuild the kernel or fix the JSON."),
    Case("metadata-not-object", M, "`[]`", _read_meta("[]"), E.MetadataError,
         "expected a JSON object, got list", "Rebuild the kernel."),
    Case("metadata-wrong-type", M, '`"version": "1"`',
         _read_meta(json.dumps(metadata(version="1"))), E.MetadataError,
         "key 'version': Input should be a valid integer",
         "Write the value with the right type."),
    Case("metadata-missing-key", M, "no `backend`",
         _read_meta(json.dumps({k: v for k, v in metadata().items() if k != "backend"})),
         E.MetadataError, "key 'backend': Field required", "Add the key (rebuild the kernel)."),
    Case("metadata-bad-name", M, '`"name": "Relu"`', _read_meta(json.dumps(metadata(name="Relu"))),
         E.MetadataError, "key 'name': Value error, 'Relu' must match",
         "Lowercase letters, digits and `-`."),
    Case("metadata-huge", M, "a 1 MiB+ file", _read_meta(" " * (HUGE + 1)), E.MetadataError,
         "larger than the 1048576 allowed", "Use the real metadata.json (a few hundred bytes)."),
    Case("metadata-not-utf8", M, "bytes `ff fe`", _read_meta(b"\xff\xfe"), E.MetadataError,
         "not UTF-8 text", "Save the file as UTF-8."),
    Case("metadata-deep-nesting", M, "`[[[[...` 100 000 deep", _read_meta("[" * 100_000),
         E.MetadataError, "values are nested too deeply", "Rebuild the kernel."),
    Case("metadata-bad-minver", M, '`"kernels-minver": "0.18"`',
         _read_meta(json.dumps(metadata(kernels_minver="0.18"))), E.MetadataError,
         "key 'kernels-minver': Value error, '0.18' is not a kernels version X.Y.Z",
         "Write three numbers, e.g. `\"0.19.1\"`, as kernels does."),
    Case("metadata-bad-layout", M, '`"build-layout": "tar"`',
         _read_meta(json.dumps(metadata(build_layout="tar"))), E.MetadataError,
         "key 'build-layout': Input should be 'files' or 'zip'", "Write `files` or `zip` (rebuild the kernel)."),
    # --- build.toml
    Case("build-toml-missing", B, "no build.toml", lambda e: read_build_toml(e.tmp),
         E.BuildConfigError, "a kernel source repository has a build.toml",
         "Run `check` on the repository root."),
    Case("build-toml-malformed", B, "`[general`", _read_toml("[general"), E.BuildConfigError,
         "malformed TOML", "Fix the TOML syntax at the line named."),
    Case("build-toml-not-utf8", B, "bytes `ff fe`", _read_toml(b"\xff\xfe"),
         E.BuildConfigError, "not UTF-8 text", "Save the file as UTF-8."),
    Case("build-toml-huge", B, "a 1 MiB+ file", _read_toml("#" * (HUGE + 1)),
         E.BuildConfigError, "larger than the 1048576 allowed", "Check that it is the right file."),
    Case("build-toml-deep-nesting", B, "`a = [[[[...` 5000 deep",
         _read_toml("a = " + "[" * 5000 + "]" * 5000), E.BuildConfigError,
         "nested too deeply", "Flatten the file."),
    Case("build-toml-missing-key", B, "no `general.name`",
         _read_toml(BUILD_TOML.replace('name = "relu"\n', "")), E.BuildConfigError,
         "missing required key 'general.name'", "Add the key to the table named."),
    Case("build-toml-wrong-type", B, '`version = "1"`',
         _read_toml(BUILD_TOML.replace("version = 1", 'version = "1"')), E.BuildConfigError,
         "general.version: Input should be a valid integer (got '1')",
         "Write a whole number without quotes."),
    Case("build-toml-unknown-key", B, "`maintainer = ...` in [general]",
         _read_toml(BUILD_TOML.replace("[general]\n", '[general]\nmaintainer = "me"\n')),
         E.BuildConfigError, "unknown key 'general.maintainer'",
         "Remove it or fix its spelling; the fix lists the allowed keys."),
    Case("build-toml-snake-case", B, "`cuda_capabilities = [...]`",
         _read_toml(BUILD_TOML.replace("cuda-capabilities", "cuda_capabilities")),
         E.BuildConfigError, "keys are kebab-case: write 'cuda-capabilities'",
         "Write the key in kebab-case."),
    Case("build-toml-unknown-backend", B, '`backends = ["vpu"]`',
         _read_toml(BUILD_TOML.replace('backends = ["cpu", "cuda"]',
                                       'backends = ["cpu", "cuda", "vpu"]')),
         E.BuildConfigError, "unknown backend 'vpu'",
         "Use a backend name of kernel-builder (or of a kernel-plugins backend it lacks)."),
    Case("build-toml-edition-unsupported", B, "`edition = 7`",
         _read_toml(BUILD_TOML.replace("edition = 5", "edition = 7")), E.BuildConfigError,
         "edition 7 is not supported", "Write `edition = 6` (or 5): kernel-builder knows no other."),
    Case("build-toml-legacy-v3", B, "no `edition` and no `license`",
         _read_toml(BUILD_TOML.replace('license = "Apache-2.0"\n', "").replace("edition = 5\n", "")),
         E.BuildConfigError, "in the v3 format, which kernel-builder no longer reads",
         "Add the key, or migrate with `kernel-builder update-build`."),
    Case("build-toml-edition-5-key", B, "`kernel-depends` without `edition`",
         _read_toml(BUILD_TOML.replace("edition = 5\n", 'kernel-depends = []\n')),
         E.BuildConfigError, "'general.kernel-depends' needs edition 5 or 6",
         "Migrate to edition 6 with `kernel-builder update-build`, or add `edition = 5`."),
    Case("build-toml-kernel-depends", B, '`kernel-depends = [{repo-id = "a b", version = 1}]`',
         _read_toml(BUILD_TOML.replace("edition = 5\n", 'edition = 5\nkernel-depends = '
                                       '[{repo-id = "a b", version = 1}]\n')),
         E.BuildConfigError, "general.kernel-depends[0].repo-id: Invalid repository id 'a b'",
         "Use an `org/name` repository id and one of `version` / `revision`."),
    Case("build-toml-python-depends", B, '`python-depends = ["leftpad"]` in [general]',
         _read_toml(BUILD_TOML.replace("edition = 5\n", 'edition = 5\npython-depends = '
                                       '["leftpad"]\n')),
         E.BuildConfigError, "'leftpad' is not a python-depends name known for every backend",
         "Use a name the fix lists, or move it to the table of the backend that knows it."),
    Case("build-toml-version-form", B, '`minver = "2.8.0"` in [torch]',
         _read_toml(BUILD_TOML.replace("[torch]\n", '[torch]\nminver = "2.8.0"\n')),
         E.BuildConfigError, "torch.minver: '2.8.0' is not a version such as \"12.8\"",
         "Write two numbers, `major.minor`."),
    Case("build-toml-no-framework", B, "edition 5 without [torch]/[torch-noarch]/[tvm-ffi]",
         _read_toml(BUILD_TOML.replace('[torch]\nsrc = ["torch-ext/torch_binding.cpp"]\n', "")),
         E.BuildConfigError, "no framework table", "Add exactly one framework table."),
    Case("build-toml-backend-key", B, "`rocm-archs` in a cuda kernel",
         _read_toml(BUILD_TOML.replace('cuda-capabilities = ["8.0"]', "rocm-archs = []")),
         E.BuildConfigError, "key 'rocm-archs' is only for rocm kernels",
         "Remove the key or fix the kernel's backend."),
    # --- pyproject.toml / kernels.lock
    Case("pyproject-malformed", P, "`[tool.kernels`", _read_pyproject("[tool.kernels"),
         E.LockfileError, "is not valid TOML", "Fix the TOML syntax."),
    Case("pyproject-no-table", P, "no `[tool.kernels.dependencies]`",
         _read_pyproject("[project]\nname = 'x'\n"), E.LockfileError,
         "no [tool.kernels.dependencies] table", "Add the table the message shows."),
    Case("pyproject-wrong-type", P, '`"org/name" = "1"`',
         _read_pyproject('[tool.kernels.dependencies]\n"org/name" = "1"\n'), E.LockfileError,
         "is not a version: expected a positive integer", 'Write `"org/name" = 1`.'),
    Case("pyproject-bad-repo-id", P, '`"org/na me" = 1`',
         _read_pyproject('[tool.kernels.dependencies]\n"org/na me" = 1\n'), E.LockfileError,
         "tool.kernels.dependencies key 'org/na me'", "Use `org/name` keys."),
    Case("lock-malformed", P, "`[`", _read_lock("["), E.LockfileError,
         "malformed JSON at line 1", "Regenerate with `kernel-plugins lock PROJECT_DIR`."),
    Case("lock-not-a-list", P, "`{}`", _read_lock("{}"), E.LockfileError,
         "expected a JSON list of entries, got dict", "Regenerate the lock file."),
    Case("lock-missing-key", P, "an entry without `sha`", _read_lock(_lock_with(sha=None)),
         E.LockfileError, "key 'sha' is missing", "Regenerate the lock file."),
    Case("lock-wrong-type", P, '`"sha": 5`', _read_lock(_lock_with(sha=5)), E.LockfileError,
         "key 'sha' must be a commit sha (40 or 64 lowercase hex digits), got 5",
         "Regenerate the lock file."),
    Case("lock-variant-traversal", P, 'variant `"../x"`',
         _read_lock(_lock_with(variants={"../x": LOCK_ENTRY["variants"]["torch-cpu"]})),
         E.LockfileError, "variant name '../x' is not a plain folder name",
         "Regenerate the lock file."),
    Case("lock-not-a-file", P, "a FIFO named `kernels.lock`", _lock_fifo, E.LockfileError,
         "not a regular file; refusing to read it", "Put the real lock file there."),
    Case("lock-found-writable", P, "a found `kernels.lock` with mode 0666",
         _found_lock_writable_by_others, E.LockfileError,
         "refusing this kernels.lock: group or others may write it",
         "`chmod go-w` it (and own it), or pass `lockfile=`."),
    Case("lock-kernels-unknown-key", P, "a kernels entry with `hash` beside `commit`",
         _read_lock(json.dumps([{"dependency": {"repo-id": "org/name", "version": 1},
                                 "lock": {"commit": "a" * 40, "hash": "x"}}])),
         E.LockfileError, "unknown key 'lock.hash'",
         "Remove it: kernels allows no other key (hashes go in `kernels.lock.variants`)."),
    Case("lock-hashes-mismatch", P, "`kernels.lock.variants` of another commit",
         _lock_hashes_of_another_commit, E.LockfileError, "does not match kernels.lock",
         "Lock again (`kernel-plugins lock PROJECT_DIR`), or delete `kernels.lock.variants`."),
    Case("lock-found-link", P, "a found `kernels.lock` that is a symbolic link", _found_lock_link,
         E.LockfileError, "refusing this kernels.lock: it is a symbolic link",
         "Put the file itself there, or pass `lockfile=`."),
    Case("lock-not-found", P, "no lock file but one in the temp folder",
         _no_lock_outside_temp, E.LockfileError, "in the temporary folder, which is never searched",
         "Pass `lockfile=`, or lock the project (`kernel-plugins lock PROJECT_DIR`)."),
    # --- LOCAL_KERNELS and local paths
    Case("local-kernels-malformed", L, '`LOCAL_KERNELS="nonsense"`',
         lambda e: parse_local_kernels("nonsense"), E.SourceError,
         "LOCAL_KERNELS entry 'nonsense' is malformed: expected 'org/name=/path'",
         "Write `org/name=/path` entries separated by `os.pathsep`."),
    Case("local-kernels-bad-repo", L, '`LOCAL_KERNELS="a/b/c=/x"`',
         lambda e: parse_local_kernels("a/b/c=/x"), E.SourceError,
         "LOCAL_KERNELS entry 'a/b/c=/x': Invalid repository id", "Use `org/name` before `=`."),
    Case("local-path-missing", L, '`load("./nope")`', lambda e: parse_name(str(e.tmp / "nope")),
         E.SourceError, "does not exist", "Check the path."),
    Case("local-no-variants", L, "an empty folder", lambda e: local_variants(e.tmp),
         E.SourceError, "holds no build variants", "Point at a repository with `build/`."),
    Case("name-ambiguous", L, '`load("examples/relu")` with a folder `examples/relu` here',
         _ambiguous, E.AmbiguousNameError,
         "'examples/relu' is ambiguous: it is a Hub repository id",
         "Write `./examples/relu` for the folder or `hub:examples/relu` for the Hub."),
    # --- path traversal
    Case("variant-symlink-outside", T, "`build/torch-cpu` -> a folder outside the repository",
         _symlinked_variant, E.SourceError, "is a link that points outside",
         "Replace the link with a real folder."),
    Case("variant-file-link-outside", T, "`build/torch-cpu/evil.py` -> a file outside the variant",
         _linked_file(False), E.IntegrityError, "a link that points outside the variant folder",
         "Replace the link with the file itself."),
    Case("variant-folder-link", T, "`build/torch-cpu/alias` -> a folder", _linked_file(True),
         E.IntegrityError, "a link to a folder", "Replace the link with the folder itself."),
    Case("zip-member-escape", T, "a member `../evil.py` in the `<id>.zip` of the zip layout", _zip_member_escape,
         E.IntegrityError, "_relu_zip.zip: member '../evil.py' is refused: its path is not a plain relative path",
         "Rebuild the kernel with kernel-builder."),
    Case("hub-variant-traversal", T, 'Hub variant `"../../x"`',
         lambda e: hub.cached_variant_path(REF, "../../x"), E.SourceError,
         "Invalid build variant '../../x'", "A variant is one folder name under `build/`."),
    Case("metadata-id-dots", T, '`"id": "ops.relu"`',
         _read_meta(json.dumps(metadata(id="ops.relu"))), E.MetadataError,
         "must be a plain ASCII Python identifier (no dots, slashes or dashes)",
         "Rebuild with a plain identifier as id."),
    Case("metadata-id-slashes", T, '`"id": "../../evil"`',
         _read_meta(json.dumps(metadata(id="../../evil"))), E.MetadataError,
         "must be a plain ASCII Python identifier", "Rebuild with a plain identifier as id."),
    Case("metadata-id-dunder", T, '`"id": "__spec__"`',
         _read_meta(json.dumps(metadata(id="__spec__"))), E.MetadataError,
         "must not start with two underscores", "Rebuild with an id that does not start with `__`."),
    # --- plugins
    Case("plugin-hook-raising", G, "`backend_spec` raises (strict)",
         _strict_register(_plugin(backend_spec=lambda: 1 / 0)), E.PluginError,
         "failed in backend_spec: ZeroDivisionError",
         "Fix or uninstall the plugin; without KERNEL_PLUGINS_STRICT=1 it is skipped."),
    Case("plugin-wrong-spec-type", G, "`backend_spec` returns a dict (strict)",
         _strict_register(_plugin(backend_spec=lambda: {"name": "mlu"})), E.PluginError,
         "returned dict, expected kernel_plugins.BackendSpec", "Fix the plugin."),
    Case("plugin-detect-raising", G, "`detect_device` raises (strict)",
         _strict_detect(_plugin(detect_device=lambda: 1 / 0)), E.PluginError,
         "failed in detect_device: ZeroDivisionError",
         "Fix the plugin; without strict mode it shows as that backend's error."),
    Case("plugin-negative-count", G, "a DeviceInfo with `count=-1` (strict)",
         _strict_detect(_plugin(detect_device=lambda: unvalidated_device(
             backend="mlu", device_type="mlu", count=-1))), E.PluginError,
         "detect_device returned an invalid DeviceInfo: count: must be an integer >= 0 (got -1)",
         "Fix the plugin."),
    Case("plugin-non-string-variant", G, "`list_variants` returns `[1]`", _list_variants([1]),
         E.PluginError, "list_variants returned a bad name: variant name must be a string",
         "Fix the plugin."),
    Case("plugin-duplicate-backend", G, "two plugins declare `mlu` (strict)",
         _strict_register(_plugin(), first=_plugin()), E.PluginError,
         "backend name 'mlu' is already provided by plugin 'mlu' (kernel-plugins-mlu ?)",
         "Uninstall one of the two distributions."),
    Case("plugin-unknown-hook", G, "a hook `detect_devices` that does not exist (strict)",
         _strict_register(_plugin(detect_devices=lambda: None)), E.PluginError,
         "implements hooks that do not exist: detect_devices", "Fix the hook's name."),
    # --- import, dependencies, integrity
    Case("kernel-import-error", K, "`__init__.py` raises", _import_error, E.KernelImportError,
         "failed: RuntimeError: x", "Fix the kernel; nothing is left in `sys.modules`."),
    Case("kernel-sys-exit", K, "`__init__.py` calls `sys.exit(0)`", _kernel_exits,
         E.KernelImportError, "SystemExit: 0 (the kernel's code called sys.exit)",
         "Fix the kernel; nothing is left in `sys.modules` and the next load raises again."),
    Case("offline-not-cached", K, "`HF_HUB_OFFLINE=1` and nothing cached", _offline_uncached,
         E.OfflineError, "HF_HUB_OFFLINE=1 is set and nothing of org/uncached is in the local cache",
         "Unset HF_HUB_OFFLINE, or download the kernel first."),
    Case("torch-missing", K, "a load without torch", _torch_version(None),
         E.MissingDependencyError, "loading a kernel needs torch (torch >= 2.5, < 3), which is not "
         "installed: install the torch build for your device first",
         "Install torch as the message says (installing kernel-plugins never does)."),
    Case("torch-out-of-range", K, "a load with torch 2.4", _torch_version("2.4.0"),
         E.MissingDependencyError, "the installed torch 2.4.0 is outside the releases "
         "kernel-plugins supports (torch >= 2.5, < 3)",
         "Install a torch in the range; with a vendor stack, its extension and torch together."),
    Case("hub-endpoint-malformed", K, "`HF_ENDPOINT=notaurl`", _malformed_endpoint, E.HubError,
         "HF_ENDPOINT is 'notaurl', not an http:// or https:// address",
         "Set HF_ENDPOINT to the Hub's address, or unset it."),
    Case("local-disk-error", K, "disk full while downloading", _disk_full, E.LocalDiskError,
         "Local disk error while downloading torch-cpu for org/name: No space left on device",
         "Free disk space (or fix the cache folder's permissions), then try again."),
    Case("python-depends-unknown", K, '`"python-depends": ["leftpad"]`',
         _python_depends(["leftpad"], CUDA_SPEC), E.MetadataError,
         "python-depends names 'leftpad', which is not a known dependency for backend 'cuda'",
         "Use a known dependency name."),
    Case("python-depends-missing", K, "`nvidia-cutlass-dsl` not installed",
         _python_depends(["nvidia-cutlass-dsl"], CUDA_SPEC), E.MissingDependencyError,
         "pip install nvidia-cutlass-dsl", "Install the package the message names."),
    Case("kernels-minver-too-new", K, '`"kernels-minver": "0.20.0"`', _minver("0.20.0"),
         E.KernelsVersionError, "needs kernels>=0.20.0 (kernels-minver), but this kernel-plugins "
         "reads the format of kernels 0.19.1", "Upgrade kernel-plugins, or load an older version "
         "of the kernel."),
    Case("kernel-depends-cycle", K, "`ring` depends on `link`, `link` on `ring`",
         _load_depending(("ring", [{"repo-id": "kernels-community/link", "version": 1}]),
                         ("link", [{"repo-id": "kernels-community/ring", "version": 1}])),
         E.KernelDependencyError,
         "kernel dependencies form a cycle: kernels-community/ring -> kernels-community/link "
         "(version 1) -> kernels-community/ring (version 1) -> kernels-community/link (version 1)",
         "Remove one of the entries named."),
    Case("kernel-depends-untrusted", K, "a dependency from an organisation not trusted",
         _load_depending(("needs-evil", [{"repo-id": "evil-org/ops", "version": 1}]), offline=True),
         E.KernelDependencyError,
         "kernels-community/needs-evil depends on evil-org/ops (version 1) (kernel-depends), "
         "which cannot be loaded: TrustError",
         "Provide it locally (`LOCAL_KERNELS=org/name=PATH`), trust the organisation "
         "(`KERNEL_PLUGINS_TRUSTED_ORGS`, `trust_remote_code=True`) or drop the dependency; the cause "
         "is the dependency's own error."),
    Case("kernel-depends-not-repo-id", M, '`"kernel-depends": [{"repo-id": "ops", "version": 1}]`',
         _read_meta(json.dumps(metadata(kernel_depends=[{"repo-id": "ops", "version": 1}]))),
         E.MetadataError, "key 'kernel-depends.0.repo-id': Value error, 'ops' is not a Hub "
         "repository id 'org/name'", "Name the dependency by its repository id `org/name`."),
    Case("kernel-depends-two-pins", M, '`{"repo-id": "org/x", "version": 1, "revision": "main"}`',
         _read_meta(json.dumps(metadata(kernel_depends=[
             {"repo-id": "org/x", "version": 1, "revision": "main"}]))),
         E.MetadataError, "give exactly one of 'version' (an integer N, branch vN) or 'revision'",
         "Pin each dependency by a version or by a revision, not both."),
    Case("get-kernel-dep-outside-loading", K, "`get_kernel_dep(...)` after the kernel loaded",
         _get_kernel_dep, E.KernelDependencyError, "`get_kernel_dep` only works during kernel "
         "loading", "Call it in the kernel's module code, while the kernel is imported."),
    Case("digest-mismatch", K, "a file changed after the build", _changed_digest,
         E.IntegrityError, "files do not match the metadata digest: __init__.py",
         "Delete the folder and fetch it again, or rebuild."),
]

IDS = [c.id for c in CASES]


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        manager: plugins.PluginManager) -> Env:
    monkeypatch.delenv("LOCAL_KERNELS", raising=False)
    return Env(tmp_path, monkeypatch)


def raise_of(case: Case, env: Env) -> E.KernelPluginsError:
    """Run the trigger; return the error it raised (failing on anything else)."""
    try:
        case.trigger(env)
    except E.KernelPluginsError as e:
        return e
    except BaseException as e:  # pragma: no cover - reported as the test failure
        pytest.fail(f"{case.id}: raised {type(e).__name__}, not a KernelPluginsError: {e}")
    pytest.fail(f"{case.id}: no error raised")


def test_case_ids_are_unique() -> None:
    assert len(IDS) == len(set(IDS))


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_case_raises_its_documented_error(case: Case, env: Env) -> None:
    error = raise_of(case, env)
    assert type(error) is case.error, f"{type(error).__name__}: {error}"
    assert case.fragment in str(error)


def test_a_failed_kernel_import_leaves_nothing_behind(env: Env) -> None:
    import sys

    with pytest.raises(E.KernelImportError):
        _import_error(env)
    assert not [m for m in sys.modules if m.startswith(module_name("_broken_kernel_9f8e"))]


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|").replace("[", "\\[")  # no autorefs link


def render(messages: dict[str, str]) -> str:
    """The generated tables of docs/errors.md, one per section."""
    out: list[str] = []
    for section in dict.fromkeys(c.section for c in CASES):
        out += [f"### {section}", "", "| case | input | error | message | what to do |",
                "|---|---|---|---|---|"]
        for c in (c for c in CASES if c.section == section):
            out.append(
                f"| `{c.id}` | {c.input} | `{c.error.__name__}` | {_cell(messages[c.id])} "
                f"| {c.fix} |"
            )
        out.append("")
    return "\n".join(out).rstrip() + "\n"


def doc_rows(text: str) -> dict[str, str]:
    """case id -> its table row in docs/errors.md."""
    return {m.group(1): m.group(0) for m in re.finditer(r"^\| `([a-z0-9-]+)` \|.*$", text, re.M)}


def test_docs_list_every_case_with_message_and_fix(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, manager: plugins.PluginManager
) -> None:
    if os.environ.get(WRITE_ENV):
        messages = {}
        for i, case in enumerate(CASES):
            with monkeypatch.context() as mp:
                folder = tmp_path / str(i)
                folder.mkdir()
                plugins.reset_manager(plugins.PluginManager(entry_points=False))
                msg = str(raise_of(case, Env(folder, mp)))
            messages[case.id] = msg.replace(str(folder), "<tmp>")
        plugins.reset_manager(manager)
        text = DOC.read_text()
        head, _, rest = text.partition(BEGIN)
        _, _, tail = rest.partition(END)
        DOC.write_text(f"{head}{BEGIN}\n\n{render(messages)}\n{END}{tail}")
    rows = doc_rows(DOC.read_text())
    assert sorted(rows) == sorted(IDS), "docs/errors.md and CASES list different cases"
    for case in CASES:
        row = rows[case.id]
        assert f"`{case.error.__name__}`" in row, case.id
        assert _cell(case.fragment) in row, f"{case.id}: message fragment missing from the doc"
        assert row.rstrip().endswith(f"| {case.fix} |"), f"{case.id}: fix missing from the doc"
