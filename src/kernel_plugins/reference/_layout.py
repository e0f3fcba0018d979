"""Materialise the bundled reference kernels as kernel repositories with noarch variants.

The package ships each kernel's sources once (``<name>/torch-ext/`` plus the shared
``_common/``); :func:`materialize` assembles ``<cache>/<fingerprint>/<name>/build/torch-<backend>/``
(copies of every source file and a ``metadata.json`` with their ``digest``) on first use,
and on every use compares the whole cached copy with the repository computed from the
packaged sources, rebuilding it atomically when anything differs. The cache folders must
be the user's own and writable by no one else (see docs/loading.md).
"""

from __future__ import annotations

import base64
import functools
import hashlib
import json
import os
import shutil
import stat
import tempfile
from pathlib import Path

__all__ = ["BACKENDS", "CACHE_ENV", "SOURCE_DIR", "cache_root", "expected_files", "fingerprint",
           "kernel_info", "materialize", "source_files", "variant_id"]

#: Noarch backends the reference kernels are built for -> the ``python-depends`` each
#: variant declares (none: the kernels are plain PyTorch).
BACKENDS: dict[str, tuple[str, ...]] = {
    b: () for b in ("cpu", "cuda", "rocm", "xpu", "metal", "mlu", "musa", "npu", "neuron", "tpu")
}

#: Environment variable that overrides the cache folder.
CACHE_ENV = "KERNEL_PLUGINS_REFERENCE_CACHE"

#: Folder (inside each kernel) that holds the kernel's own sources.
SOURCE_DIR = "torch-ext"

_ROOT = Path(__file__).resolve().parent
_COMMON = _ROOT / "_common"
_LAYOUT_VERSION = "3"  # 3: checked against the packaged sources on every use


def kernel_info(name: str) -> dict[str, object]:
    """The ``kernel.json`` of reference kernel ``name``: name, version and license."""
    return json.loads((_ROOT / name / "kernel.json").read_text("utf-8"))  # type: ignore[no-any-return]


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
    """12 hex digits identifying the sources, metadata and backends of ``name`` (once per process)."""
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


@functools.cache
def expected_files(name: str, extra_backends: tuple[str, ...] = ()) -> dict[str, bytes]:
    """Relative POSIX path -> content of every file of the repository of ``name``, computed
    in this process from the packaged sources (``metadata.json`` and its digest included)."""
    info, fp = kernel_info(name), fingerprint(name, extra_backends)
    sources = {n: p.read_bytes() for n, p in source_files(name).items()}
    files: dict[str, bytes] = {}
    readme = _ROOT / name / "README.md"
    if readme.is_file():
        files["README.md"] = readme.read_bytes()
    digest = {n: base64.b64encode(hashlib.sha256(b).digest()).decode() for n, b in sources.items()}
    for backend, depends in _backends(extra_backends).items():
        metadata = {"name": info["name"], "id": variant_id(name, backend, fp), "version": info["version"],
                    "license": info["license"], "python-depends": list(depends), "backend": {"type": backend},
                    "digest": {"algorithm": "sha256", "files": dict(sorted(digest.items()))}}
        variant = f"build/torch-{backend}"
        files.update({f"{variant}/{n}": data for n, data in sources.items()})
        files[f"{variant}/metadata.json"] = (json.dumps(metadata, indent=2) + "\n").encode()
    return files


def cache_root() -> Path:
    """The cache: ``$KERNEL_PLUGINS_REFERENCE_CACHE``, else ``$XDG_CACHE_HOME/kernel-plugins/reference``
    (``~/.cache/...`` without XDG)."""
    if explicit := os.environ.get(CACHE_ENV):
        return Path(explicit).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg).expanduser() if xdg else Path.home() / ".cache") / "kernel-plugins" / "reference"


#: Open a cached file without following a link or blocking on a FIFO.
_READ_FLAGS = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0)


def _matches(repo: Path, expected: dict[str, bytes]) -> bool:
    """Whether ``repo`` holds exactly ``expected``: the same files, bytes and folders, no links."""
    found: set[str] = set()
    for folder, dirs, names in os.walk(repo):
        where = Path(folder)
        if any((where / d).is_symlink() for d in dirs):
            return False
        for file_name in names:
            path = where / file_name
            rel = path.relative_to(repo).as_posix()
            if rel not in expected or path.is_symlink():
                return False
            try:
                fd = os.open(path, _READ_FLAGS)
            except OSError:
                return False
            with os.fdopen(fd, "rb") as f:
                if f.read(len(expected[rel]) + 1) != expected[rel]:
                    return False
            found.add(rel)
    return found == set(expected)


def _private_dir(path: Path) -> None:
    """Create ``path`` (mode 0700) if missing; make sure only this user may write it (as for
    lock files: opened once, not through a link; its descriptor is checked and chmod'ed).
    :raises OSError: it is not a folder, or (POSIX) a link or another user's."""
    path.mkdir(mode=0o700, parents=True, exist_ok=True)  # FileExistsError: not a folder
    if not hasattr(os, "getuid"):
        return
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    except OSError as e:
        raise PermissionError(f"{path} is a symbolic link, not a folder of yours ({e.strerror})") from None
    try:
        st = os.fstat(fd)
        if st.st_uid != os.getuid():
            raise PermissionError(f"{path} belongs to another user (uid {st.st_uid}), who could change "
                                  "what runs as the reference kernel")
        if st.st_mode & 0o022:
            os.fchmod(fd, stat.S_IMODE(st.st_mode) & ~0o022)
    finally:
        os.close(fd)


def _materialize_in(root: Path, name: str, extra: tuple[str, ...]) -> Path:
    fp = fingerprint(name, extra)
    expected = expected_files(name, extra)
    folder = root / fp
    if not os.environ.get(CACHE_ENV):  # the default: ~/.cache/kernel-plugins is ours too
        _private_dir(root.parent)
    _private_dir(root)
    _private_dir(folder)
    repo = folder / name
    if _matches(repo, expected):
        return repo
    staging = Path(tempfile.mkdtemp(prefix=f".{name}-", dir=folder))
    trash = Path(tempfile.mkdtemp(prefix=f".{name}-old-", dir=folder))
    try:
        for rel, data in expected.items():
            (staging / rel).parent.mkdir(parents=True, exist_ok=True)
            (staging / rel).write_bytes(data)
        if repo.exists() or repo.is_symlink():  # damaged or changed: move it out of the way
            try:
                os.replace(repo, trash / name)
            except FileNotFoundError:
                pass  # another process moved it first
        try:
            os.replace(staging, repo)
        except OSError:
            if not _matches(repo, expected):  # not a concurrent winner: a real failure
                raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
        shutil.rmtree(trash, ignore_errors=True)
    return repo


def materialize(name: str, extra_backends: tuple[str, ...] = ()) -> Path:
    """The kernel repository of reference kernel ``name``, created or repaired as needed;
    ``extra_backends`` (third-party ones) get a ``torch-<backend>`` variant too.

    :raises OSError: the cache folder cannot be written or is not yours (naming :data:`CACHE_ENV`).
    """
    root = cache_root()
    try:
        # only the backends BACKENDS lacks, once each: the cached fingerprints are keyed on it
        extra = tuple(dict.fromkeys(b for b in extra_backends if b not in BACKENDS))
        return _materialize_in(root, name, extra)
    except OSError as e:
        raise OSError(f"cannot create the reference kernel {name!r} under {root} ({e}); set {CACHE_ENV} "
                      "to a folder that only you can write") from e
