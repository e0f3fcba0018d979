"""Materialise the bundled reference kernels as kernel repositories with noarch variants.

The package ships each reference kernel's Python sources once, in
``<name>/torch-ext/``, plus the files every kernel shares in ``_common/``. A kernel
repository needs one self-contained ``build/torch-<backend>/`` folder per backend (each
is imported as a package on its own, by kernel-plugins and by HF ``kernels``), with a
``metadata.json`` naming that backend and its Python dependencies. Shipping those folders
would put nine copies of the same code in the wheel, so they are created on first use
instead, in a cache folder keyed by a fingerprint of the sources:

``<cache>/<fingerprint>/<name>/build/torch-<backend>/``
    every source file (a copy: the loader refuses links that lead out of a variant) and
    ``metadata.json``, written with a ``digest`` of those files, so that every load checks
    that nothing in the cache was changed since.

The cache is ``$KERNEL_PLUGINS_REFERENCE_CACHE`` when set, else
``$XDG_CACHE_HOME/kernel-plugins/reference`` (``~/.cache/...`` without XDG), else a
folder under the system temporary directory when the home cache is not writable.
Creation is atomic (a finished repository is renamed into place), so concurrent
processes never see a partial one. Besides the standard library it uses only :mod:`kernel_plugins.integrity` (for the digest).
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import shutil
import tempfile
from pathlib import Path

__all__ = [
    "BACKENDS",
    "CACHE_ENV",
    "SOURCE_DIR",
    "cache_root",
    "fingerprint",
    "kernel_info",
    "materialize",
    "source_files",
    "variant_id",
]

#: Noarch backends the reference kernels are built for, each with the ``python-depends``
#: its variant declares. The kernels are plain PyTorch, so none needs a package beyond
#: torch and the device's own PyTorch extension (which the backend plugin provides).
BACKENDS: dict[str, tuple[str, ...]] = {
    "cpu": (),
    "cuda": (),
    "rocm": (),
    "xpu": (),
    "metal": (),
    "mlu": (),
    "musa": (),
    "npu": (),
    "neuron": (),
}

#: Environment variable that overrides the cache folder.
CACHE_ENV = "KERNEL_PLUGINS_REFERENCE_CACHE"

#: Folder (inside each kernel) that holds the kernel's own sources.
SOURCE_DIR = "torch-ext"

_ROOT = Path(__file__).resolve().parent
_COMMON = _ROOT / "_common"
_LAYOUT_VERSION = "2"  # 2: copies with a digest (1 linked to the packaged files)


def kernel_info(name: str) -> dict[str, object]:
    """The ``kernel.json`` of reference kernel ``name``: name, version and license."""
    info = json.loads((_ROOT / name / "kernel.json").read_text("utf-8"))
    if not isinstance(info, dict):
        raise ValueError(f"{_ROOT / name / 'kernel.json'} must hold a JSON object")
    return info


def source_files(name: str) -> dict[str, Path]:
    """File name -> packaged source of one variant of ``name`` (kernel files + shared files)."""
    files: dict[str, Path] = {}
    for folder in (_COMMON, _ROOT / name / SOURCE_DIR):
        if folder.is_dir():
            for path in sorted(folder.iterdir()):
                if path.is_file() and path.suffix == ".py":
                    files[path.name] = path
    return files


def _backends(extra: tuple[str, ...] = ()) -> dict[str, tuple[str, ...]]:
    """:data:`BACKENDS` plus ``extra`` backend names (third-party backends, no depends)."""
    return {**BACKENDS, **{b: () for b in extra if b not in BACKENDS}}


@functools.cache
def fingerprint(name: str, extra_backends: tuple[str, ...] = ()) -> str:
    """12 hex digits identifying the sources, metadata and backends of ``name``.

    Computed once per process (the packaged sources do not change while it runs), so a
    fallback load does not read and hash every source file again.
    """
    digest = hashlib.sha256(f"layout {_LAYOUT_VERSION}\n".encode())
    digest.update(json.dumps(kernel_info(name), sort_keys=True).encode())
    digest.update(json.dumps(_backends(extra_backends), sort_keys=True).encode())
    for file_name, path in source_files(name).items():
        digest.update(f"\0{file_name}\0".encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:12]


def variant_id(name: str, backend: str, fp: str) -> str:
    """The metadata ``id`` (module name and ``torch.ops`` namespace) of one variant."""
    return f"_{name.replace('-', '_')}_reference_{fp[:8]}_{backend}"


def cache_root() -> Path:
    """The folder that holds materialised reference repositories (see the module doc)."""
    explicit = os.environ.get(CACHE_ENV)
    if explicit:
        return Path(explicit).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".cache"
    return base / "kernel-plugins" / "reference"


def _build(name: str, fp: str, dest: Path, backends: dict[str, tuple[str, ...]]) -> None:
    from ..integrity import compute_digest

    info = kernel_info(name)
    files = source_files(name)
    readme = _ROOT / name / "README.md"
    if readme.is_file():
        shutil.copyfile(readme, dest / "README.md")
    for backend, depends in backends.items():
        variant = dest / "build" / f"torch-{backend}"
        variant.mkdir(parents=True)
        for file_name, src in files.items():
            shutil.copyfile(src, variant / file_name)
        metadata = {
            "name": info["name"],
            "id": variant_id(name, backend, fp),
            "version": info["version"],
            "license": info["license"],
            "python-depends": list(depends),
            "backend": {"type": backend},
            "digest": {"algorithm": "sha256", "files": compute_digest(variant)},
        }
        (variant / "metadata.json").write_text(json.dumps(metadata, indent=2) + "\n", "utf-8")


def _complete(repo: Path, backends: dict[str, tuple[str, ...]]) -> bool:
    build = repo / "build"
    return all((build / f"torch-{b}" / "metadata.json").is_file() for b in backends)


def _materialize_in(root: Path, name: str, fp: str, backends: dict[str, tuple[str, ...]]) -> Path:
    repo = root / fp / name
    if _complete(repo, backends):
        return repo
    (root / fp).mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{name}-", dir=root / fp))
    try:
        _build(name, fp, staging, backends)
        try:
            os.replace(staging, repo)
        except OSError:
            if not _complete(repo, backends):  # not a concurrent winner: a real failure
                raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return repo


def materialize(name: str, extra_backends: tuple[str, ...] = ()) -> Path:
    """The kernel repository of reference kernel ``name``, created on first use.

    :param extra_backends: backends besides :data:`BACKENDS` (a third-party backend) that
        get a ``torch-<backend>`` variant too.
    :raises OSError: neither the cache folder nor the temporary directory can be written
        (the message names both and the variable that moves the cache).
    """
    backends = _backends(extra_backends)
    fp = fingerprint(name, extra_backends)
    first = cache_root()
    try:
        return _materialize_in(first, name, fp, backends)
    except OSError as e:
        if os.environ.get(CACHE_ENV):
            raise OSError(
                f"cannot create the reference kernel {name!r} under {first} ({e}); set "
                f"{CACHE_ENV} to a writable folder"
            ) from e
        fallback = (
            Path(tempfile.gettempdir())
            / f"kernel-plugins-reference-{os.getuid() if hasattr(os, 'getuid') else 'user'}"
        )
        try:
            return _materialize_in(fallback, name, fp, backends)
        except OSError as e2:
            raise OSError(
                f"cannot create the reference kernel {name!r} under {first} ({e}) nor under "
                f"{fallback} ({e2}); set {CACHE_ENV} to a writable folder"
            ) from e2
