"""Fixtures for the lock file / integrity / trust / concurrency tests against olah.

Each test builds its own repositories (unique names and kernel ids) on the session's Hub
server, so tests never share a cache or an imported module.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import re
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.support.hub import GitRepo, HubServer, make_kernel_repo
from tests.support.variant_dirs import digest_of, metadata

_counter = itertools.count()

#: Size of ``data.bin`` in the test kernels (big enough to be cut mid-transfer).
DATA_SIZE = 200 * 1024


@dataclass
class KernelRepo:
    """A kernel repository built for one test."""

    repo_id: str
    git: GitRepo
    kernel_id: str
    sha: str
    cpu_files: dict[str, bytes] = field(repr=False)

    @property
    def short(self) -> str:
        """The repository name without the organisation."""
        return self.repo_id.split("/")[1]


def cpu_variant(kernel_id: str, value: int, *, digest: bool = False) -> dict[str, bytes]:
    """Files of a pure-Python ``torch-cpu`` variant that imports every one of its files."""
    data = bytes((i * 31 + value) % 251 for i in range(DATA_SIZE))
    files: dict[str, bytes] = {
        "__init__.py": (
            "from pathlib import Path as _Path\n"
            "from .sub.helper import HELPER\n"
            f"VALUE = {value}\n"
            "DATA_SIZE = (_Path(__file__).parent / 'data.bin').stat().st_size\n"
        ).encode(),
        "sub/__init__.py": b"# helpers\n",
        "sub/helper.py": b"HELPER = 'helper'\n",
        "data.bin": data,
    }
    name = kernel_id.strip("_").split("_v")[0].replace("_", "-")
    meta = metadata(kernel_id, name=name)
    if digest:
        meta["digest"] = digest_of(files)
    files["metadata.json"] = json.dumps(meta).encode()
    return files


@pytest.fixture
def kernel_repo(hub_server: HubServer, request: pytest.FixtureRequest) -> Callable[..., KernelRepo]:
    """Build a kernel repository ``<org>/lk-<test>-<n>`` with ``torch-cpu`` and ``torch-cuda``.

    Call ``kernel_repo(org="acme", value=1, digest=False)``; branch ``v1`` points at the
    commit. Kernel ids are unique per call.
    """

    def make(org: str = "acme", *, value: int = 1, digest: bool = False) -> KernelRepo:
        slug = re.sub(r"[^a-z0-9]+", "-", request.node.name.lower())[:40].strip("-")
        n = next(_counter)
        repo_id = f"{org}/lk-{slug}-{n}"
        kernel_id = f"_lk_{n}_{hashlib.sha1(repo_id.encode()).hexdigest()[:8]}_v{value}"
        files = cpu_variant(kernel_id, value, digest=digest)
        git = make_kernel_repo(
            hub_server, repo_id,
            variants={"torch-cpu": files, "torch-cuda": {"__init__.py": "CUDA = True\n"}},
            branches=("v1",),
        )
        return KernelRepo(repo_id, git, kernel_id, git.head(), files)

    return make


@pytest.fixture(autouse=True)
def forget_kernel_modules() -> Iterator[None]:
    """Drop the kernel modules a test imported, so ids never clash across tests."""
    from kernel_plugins import registry

    with registry._lock:
        kernels = set(registry._kernels)
    yield
    with registry._lock:
        # the bundled reference kernels stay: their torch.library ops outlive their modules,
        # so a second import would run with ops bound to the first one's functions
        new = {k for k in set(registry._kernels) - kernels if "_reference_" not in k}
        for key in new:
            del registry._kernels[key]
    for name in [n for n in sys.modules if any(n == k or n.startswith(k + ".") for k in new)]:
        del sys.modules[name]


def write_pyproject(folder: Path, deps: dict[str, object] | str) -> Path:
    """Write ``folder/pyproject.toml`` with ``[tool.kernels.dependencies]`` (or raw text)."""
    folder.mkdir(parents=True, exist_ok=True)
    if isinstance(deps, str):
        text = deps
    else:
        lines = ["[project]", 'name = "demo"', "", "[tool.kernels.dependencies]"]
        lines += [f"{json.dumps(k)} = {json.dumps(v)}" for k, v in deps.items()]
        text = "\n".join(lines) + "\n"
    (folder / "pyproject.toml").write_text(text)
    return folder


def resolve_gets(server: HubServer) -> list[str]:
    """Paths of the file downloads (``GET .../resolve/...``) the server saw."""
    return [p for p in server.paths("GET") if "/resolve/" in p]


def snapshot_variant(cache: Path, repo: KernelRepo, variant: str = "torch-cpu") -> Path:
    """The cached folder of a variant of ``repo`` at its commit."""
    org, name = repo.repo_id.split("/")
    return cache / f"kernels--{org}--{name}" / "snapshots" / repo.sha / "build" / variant


def locked_download(
    kernel_repo: Callable[..., KernelRepo], folder: Path, cache: Path
) -> tuple[KernelRepo, Path, Path]:
    """A trusted kernel repository, locked by ``kernel-plugins lock`` in a project under
    ``folder`` and fetched by ``download``: (repo, project folder, cached variant folder)."""
    from kernel_plugins.cli import main

    repo = kernel_repo(org="kernels-community")
    project = write_pyproject(folder / "proj", {repo.repo_id: 1})
    assert main(["lock", str(project)]) == 0
    assert main(["download", str(project)]) == 0
    return repo, project, snapshot_variant(cache, repo)
