"""kernel_plugins.distributed without a process group, and its error sharing (no server)."""

from __future__ import annotations

import pytest

from kernel_plugins import distributed
from kernel_plugins.errors import HubError, KernelPluginsError


def test_without_a_group_work_runs_locally(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(distributed.DISABLE_ENV, raising=False)
    assert not distributed.is_active()
    assert distributed.share_from_rank0(lambda: 41 + 1) == 42
    assert distributed.once_per_node(lambda: "done") == "done"
    assert distributed.is_node_leader()


def test_disabled_by_environment_even_with_a_group(monkeypatch: pytest.MonkeyPatch) -> None:
    class FakeDist:
        def is_available(self) -> bool:
            return True

        def is_initialized(self) -> bool:
            return True

        def get_world_size(self) -> int:
            return 4

    monkeypatch.setattr(distributed, "_dist", lambda: FakeDist())
    monkeypatch.delenv(distributed.DISABLE_ENV, raising=False)
    assert distributed.is_active()
    monkeypatch.setenv(distributed.DISABLE_ENV, "0")
    assert not distributed.is_active()


def test_errors_travel_between_ranks() -> None:
    same = distributed._portable(HubError("the Hub is down"))
    assert type(same) is HubError and str(same) == "the Hub is down"

    class Local(Exception):  # defined in a function: cannot be pickled
        pass

    wrapped = distributed._portable(Local("odd"))
    assert isinstance(wrapped, KernelPluginsError)
    assert "Local: odd" in str(wrapped)
