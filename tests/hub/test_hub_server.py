"""The test Hub server itself: olah availability handling, the proxy log, stop and restart."""

from __future__ import annotations

from pathlib import Path

import pytest

from kernel_plugins import hub
from kernel_plugins.errors import HubError
from tests.hub.conftest import HubRepos
from tests.support import fixtures_hub
from tests.support.hub import HubServer, RecordedRequest, olah_cli


@pytest.fixture
def no_olah(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KERNEL_PLUGINS_OLAH_VENV", str(tmp_path / "empty-venv"))


def test_missing_olah_skips_outside_ci(no_olah: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CI", raising=False)
    assert olah_cli() is None
    with pytest.raises(pytest.skip.Exception, match="scripts/install-olah.sh"):
        fixtures_hub.require_olah()


def test_missing_olah_fails_in_ci(no_olah: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="scripts/install-olah.sh"):
        fixtures_hub.require_olah()


def test_server_refuses_to_start_without_olah(no_olah: None, tmp_path: Path) -> None:
    with pytest.raises(RuntimeError, match="scripts/install-olah.sh"):
        HubServer(tmp_path / "srv")


def test_proxy_records_method_path_and_status(hub_env: HubServer, hub_repos: HubRepos) -> None:
    hub.resolve(hub_repos.multi, version=1)
    with pytest.raises(HubError):
        hub.resolve("tests-org/absent", repo_type="kernel")
    assert hub_env.requests == [
        RecordedRequest("GET", f"/api/kernels/{hub_repos.multi}/refs", 200),
        RecordedRequest("GET", "/api/kernels/tests-org/absent/refs", 404),
    ]


def test_stopped_server_is_a_hub_error_and_restart_serves_again(
    hub_env: HubServer, hub_repos: HubRepos
) -> None:
    hub_env.stop()
    assert not hub_env.running
    with pytest.raises(HubError, match="502"):
        hub.resolve(hub_repos.multi, version=1)
    hub_env.restart()
    assert hub_env.running
    assert hub.resolve(hub_repos.multi, version=1).sha == hub_repos.multi_shas["v1"]
