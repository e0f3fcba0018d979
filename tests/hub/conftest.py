"""Make the Hub fixtures available to tests/hub even when tests/conftest.py does not load them.

tests/conftest.py is expected to list ``"tests.support.fixtures_hub"`` in ``pytest_plugins``;
registering the same module again under the same name is skipped, so fixtures are defined once.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from tests.support.hub import HubServer, make_kernel_repo

_PLUGIN = "tests.support.fixtures_hub"


def pytest_configure(config: pytest.Config) -> None:
    """Register the Hub fixtures plugin unless it is registered already."""
    if not config.pluginmanager.has_plugin(_PLUGIN):
        config.pluginmanager.import_plugin(_PLUGIN)


@dataclass(frozen=True)
class HubRepos:
    """Repositories served by the session's Hub server, with the shas tests expect.

    ``multi`` (kernel): commit ``v1`` (branch v1, tag release-1), ``v2``, ``v10`` on their
    branches, and ``main`` one commit ahead of v10 with no version branch. Variants:
    ``torch-cpu`` (nested files), ``torch-cpu-extra`` (a name sharing the prefix) and
    ``torch-cuda``. ``legacy`` (model type): branches v1 and v2. ``plain`` (kernel): only
    ``main``. ``big`` (kernel, v1): ``torch-cpu/blob.bin`` of ``BIG_SIZE`` bytes.
    """

    multi: str
    multi_shas: dict[str, str]
    legacy: str
    legacy_shas: dict[str, str]
    plain: str
    plain_main: str
    big: str
    big_blob: bytes = field(repr=False)


BIG_SIZE = 256 * 1024
CPU_FILES = ("__init__.py", "metadata.json", "sub/deep/helper.py")


def _cpu_files(version: int) -> dict[str, str]:
    return {
        "__init__.py": f"VERSION = {version}\n",
        "metadata.json": '{"name": "multi", "id": "_multi_cpu", "version": 1}\n',
        "sub/deep/helper.py": "HELPER = True\n",
    }


@pytest.fixture(scope="session")
def hub_repos(hub_server: HubServer) -> HubRepos:
    """Build the shared repositories once per session (see :class:`HubRepos`)."""
    multi = make_kernel_repo(
        hub_server,
        "tests-org/multi",
        variants={
            "torch-cpu": _cpu_files(1),
            "torch-cpu-extra": {"__init__.py": "EXTRA = True\n"},
            "torch-cuda": {"__init__.py": "CUDA = True\n"},
        },
        branches=["v1"],
        tags=["release-1"],
    )
    shas = {"v1": multi.head()}
    for n in (2, 10, 11):
        multi.write_files(_cpu_files(n), prefix="build/torch-cpu/")
        shas[f"v{n}"] = multi.commit(f"version {n}")
        if n != 11:
            multi.branch(f"v{n}")
    shas["main"] = shas.pop("v11")

    legacy = make_kernel_repo(hub_server, "tests-org/legacy", repo_type="model", branches=["v1"])
    legacy_shas = {"v1": legacy.head()}
    legacy.write("build/torch-cpu/__init__.py", "VALUE = 2\n")
    legacy_shas["v2"] = legacy.commit("v2")
    legacy.branch("v2")

    plain = make_kernel_repo(hub_server, "tests-org/plain", branches=())

    blob = bytes((i * 7 + i // 251) % 256 for i in range(BIG_SIZE))
    make_kernel_repo(hub_server, "tests-org/big", variants={"torch-cpu": {"blob.bin": blob}})
    return HubRepos(
        multi="tests-org/multi",
        multi_shas=shas,
        legacy="tests-org/legacy",
        legacy_shas=legacy_shas,
        plain="tests-org/plain",
        plain_main=plain.head(),
        big="tests-org/big",
        big_blob=blob,
    )

