"""Trusted kernel publishers: the Hub's ``trustedKernelPublisher`` flag, asked as kernels
0.17.2 asks it, remembered on disk, never read from a failure, and never from a file
someone else could have written. The organisation API runs on loopback in front of olah
(``tests.support.orgs``); its requests are counted with the others."""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path

import pytest

import kernel_plugins
from kernel_plugins import hub
from kernel_plugins.errors import RepoIdError, TrustError
from kernel_plugins.hub._publishers import answer_path
from kernel_plugins.trust import check_trusted
from tests.hub.test_hub_load import variant_files
from tests.support.hub import HubServer, make_kernel_repo
from tests.support.owners import give_to_another_user

OVERVIEW = "/api/organizations/{}/overview"
DOCS = Path(__file__).resolve().parents[2] / "docs" / "loading.md"


@pytest.fixture(scope="module")
def pub_repo(hub_server: HubServer) -> str:
    repo_id = "pub-org/pub-kernel"
    make_kernel_repo(hub_server, repo_id, branches=("v1",), variants={
        "torch-cpu": variant_files("pub-kernel", "_pub_kernel_cpu", "cpu", 5)})
    return repo_id


def overviews(server: HubServer) -> list[str]:
    return [p for p in server.paths() if p.startswith("/api/organizations/")]


def test_a_trusted_publisher_loads_and_the_answer_is_remembered(
    manager: object, hub_env: HubServer, hub_offline, pub_repo: str, hf_cache: Path
) -> None:
    hub_env.organisations.set("pub-org", True)
    assert kernel_plugins.load(pub_repo, version=1, device="cpu").VALUE == 5
    assert overviews(hub_env) == [OVERVIEW.format("pub-org")]
    path = answer_path("pub-org", hub_env.endpoint)
    assert path.is_relative_to(hf_cache) and (path.stat().st_mode & 0o777, path.parent.stat().st_mode & 0o777) == (0o600, 0o700)
    assert json.loads(path.read_text())["trusted"] is True
    hub_env.clear_requests()
    check_trusted("PUB-ORG/another")  # warm: the Hub is not asked again, in any spelling
    assert hub_env.requests == []
    hub_offline(True)
    again = kernel_plugins.load(pub_repo, version=1, device="cpu")
    assert again.VALUE == 5 and hub_env.requests == []


@pytest.mark.parametrize("answer", [
    {"trusted": False}, {}, {"trusted": "true"}, {"trusted": 1},  # the Hub says no
    {"status": 404}, {"status": 500}, {"status": 503},  # an error
    {"body": b"{not json"}, {"body": b"[true]"}, {"body": b'"trustedKernelPublisher"'},  # garbage
], ids=["false", "absent", "string", "number", "404", "500", "503", "malformed", "list", "string-body"])
def test_anything_but_a_json_true_is_not_trusted(
    manager: object, hub_env: HubServer, pub_repo: str, answer: dict
) -> None:
    hub_env.organisations.set("pub-org", answer.get("trusted"), status=answer.get("status", 200),
                              body=answer.get("body"))
    with pytest.raises(TrustError) as info:
        kernel_plugins.load(pub_repo, version=1, device="cpu")
    message = str(info.value)
    assert "the organisation 'pub-org' is not trusted (trusted: kernels-community), and " in message
    said_no = answer.get("status", 200) == 200 and "body" not in answer
    assert ("does not mark it as a trusted kernel publisher" if said_no else "could not be checked") in message
    assert hub_env.paths() == [OVERVIEW.format("pub-org")]  # refused before anything else
    hub_env.organisations.set("pub-org", True)
    if said_no:  # the Hub's "no" is remembered: refused again without asking
        with pytest.raises(TrustError):
            kernel_plugins.load(pub_repo, version=1, device="cpu")
        assert len(overviews(hub_env)) == 1
    else:  # a failure is not remembered: asked again, and trusted now
        assert kernel_plugins.load(pub_repo, version=1, device="cpu").VALUE == 5
        assert len(overviews(hub_env)) == 2


def test_a_hub_that_does_not_answer_in_time_is_not_trusted(
    hub_env: HubServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_ETAG_TIMEOUT", 0.3)
    hub_env.organisations.set("slow-org", True, delay=2.0)
    with pytest.raises(TrustError, match="could not be checked.*Timeout"):
        check_trusted("slow-org/kernel")
    assert not answer_path("slow-org", hub_env.endpoint).exists()


def test_offline_with_nothing_remembered_applies_the_list_and_says_so(
    hub_env: HubServer, hub_offline
) -> None:
    hub_env.organisations.set("pub-org", True)
    hub_offline(True)
    with pytest.raises(TrustError) as info:
        check_trusted("pub-org/pub-kernel")
    assert "'pub-org/pub-kernel'" in str(info.value)
    assert "HF_HUB_OFFLINE=1 is set and no answer of the Hub about 'pub-org' is cached, so only " \
           "that list applies" in str(info.value)
    assert hub_env.requests == []


def documented_ttl_s() -> int:
    """How long docs/loading.md says an answer is remembered (in hours there), in seconds."""
    found = re.search(r"remembered for (\d+) hours \(`ANSWER_TTL_S`\)", " ".join(DOCS.read_text().split()))
    assert found, "docs/loading.md no longer says how long an answer of the Hub is remembered"
    return int(found.group(1)) * 3600


def test_an_old_answer_is_asked_again_online_and_used_offline(hub_env: HubServer, hub_offline) -> None:
    hub_env.organisations.set("pub-org", True)
    check_trusted("pub-org/x")
    path = answer_path("pub-org", hub_env.endpoint)
    doc = json.loads(path.read_text())
    hub_env.organisations.set("pub-org", False)  # the flag was withdrawn meanwhile
    path.write_text(json.dumps({**doc, "checked": doc["checked"] - documented_ttl_s() + 60}))
    check_trusted("pub-org/x")  # online, an answer younger than documented is used as it is
    assert len(overviews(hub_env)) == 1
    path.write_text(json.dumps({**doc, "checked": doc["checked"] - documented_ttl_s() - 60}))
    hub_offline(True)
    check_trusted("pub-org/x")  # offline an answer of any age counts
    assert hub_env.requests[1:] == []
    hub_offline(False)
    with pytest.raises(TrustError, match="does not mark it"):
        check_trusted("pub-org/x")  # online the old answer is asked again
    assert len(overviews(hub_env)) == 2


def forge(path: Path, endpoint: str, org: str = "evil-org", trusted: bool = True) -> None:
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    path.write_text(json.dumps({"endpoint": endpoint, "org": org, "trusted": trusted, "checked": 9e18}))
    path.chmod(0o600)


@pytest.mark.parametrize("attack", ["group-writable file", "world-writable folder", "link", "linked folder",
                                    "other endpoint", "other org", "another user's file", "fifo"])
def test_a_remembered_answer_nobody_but_us_could_have_written_is_the_only_one_believed(
    hub_env: HubServer, hub_offline, attack: str, tmp_path: Path
) -> None:
    path = answer_path("evil-org", hub_env.endpoint)
    if attack == "linked folder":  # a private folder elsewhere, with a forged answer, linked in
        forge(tmp_path / "elsewhere" / path.name, hub_env.endpoint)
        path.parent.parent.mkdir(parents=True, exist_ok=True)
        path.parent.symlink_to(tmp_path / "elsewhere", target_is_directory=True)
    elif attack == "link":
        forge(tmp_path / "elsewhere.json", hub_env.endpoint)
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        path.symlink_to(tmp_path / "elsewhere.json")
    elif attack == "fifo":
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        os.mkfifo(path)
    else:
        forge(path, "http://other.invalid" if attack == "other endpoint" else hub_env.endpoint,
              org="pub-org" if attack == "other org" else "evil-org")
    if attack == "group-writable file":
        path.chmod(0o620)
    elif attack == "world-writable folder":
        path.parent.chmod(0o777)
    elif attack == "another user's file":
        give_to_another_user(path)
    forge(path.with_name("control.json"), hub_env.endpoint)  # not read: another name
    hub_offline(True)
    with pytest.raises(TrustError, match="no answer of the Hub about 'evil-org' is cached"):
        check_trusted("evil-org/kernel")
    hub_offline(False)
    with pytest.raises(TrustError, match="could not be checked.*404"):
        check_trusted("evil-org/kernel")  # asked the Hub instead, which knows no evil-org


def test_the_trusted_list_is_checked_first_and_names_are_validated(hub_env: HubServer) -> None:
    check_trusted("kernels-community/anything")
    check_trusted("acme/anything", trust_remote_code=True)
    assert hub_env.requests == []
    with pytest.raises(RepoIdError):
        hub.trusted_publisher("../../etc")
    assert "kernel_plugins.hub._publishers" in sys.modules
