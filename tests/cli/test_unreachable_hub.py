"""An unreachable Hub reads the same on every path: the endpoint, the cause, and what to do
(the network, HF_ENDPOINT, HF_HUB_OFFLINE=1 with a warm cache); a locked load offline is
advised to download the locked commit; a typo is answered with the name it is close to."""

from __future__ import annotations

import errno
import json
import re
import socket
from collections.abc import Callable
from pathlib import Path

import pytest

from kernel_plugins.cli.main import main
from kernel_plugins.errors import KernelPluginsError
from kernel_plugins.hub._errors import map_error

SHA = "0123456789abcdef" * 2 + "01234567"


def no_names(*args: object, **kwargs: object) -> object:
    raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")


def assert_unreachable_advice(message: str, repo_id: str) -> None:
    assert "Could not reach the Hub at http" in message, message
    assert f"for {repo_id} (" in message and re.search(r"\((\w*Error|gaierror): ", message)  # the cause
    assert "Check the network and HF_ENDPOINT" in message and "HF_HUB_OFFLINE=1" in message
    assert "Unexpected error" not in message


@pytest.mark.parametrize("exc", [
    socket.gaierror(socket.EAI_NONAME, "Name or service not known"),
    OSError(errno.ENETUNREACH, "Network is unreachable"),
    ConnectionRefusedError(errno.ECONNREFUSED, "Connection refused"),
])
def test_every_kind_of_unreachable_network_gets_one_wording(exc: OSError, hf_cache: Path) -> None:
    message = str(map_error(exc, "org/k", None, "https://hub.example", "looking up revisions"))
    assert message.startswith("Could not reach the Hub at https://hub.example while looking up revisions "
                              f"for org/k ({type(exc).__name__}: ")
    assert "kernel-plugins download org/k --version N" in message  # nothing cached: download first
    assert "Unexpected" not in message


@pytest.mark.parametrize("argv", [
    ["load", "activaton", "--no-fallback"], ["info", "activation"], ["versions", "activation"],
    ["variants", "kernels-community/activation"],
    ["download", "kernels-community/activation", "--version", "1"],
])
def test_each_command_gives_the_same_advice_when_names_do_not_resolve(
    argv: list[str], manager: object, hf_cache: Path, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setattr(socket, "getaddrinfo", no_names)
    assert main(argv) == 1
    err = capsys.readouterr().err
    repo = "kernels-community/activaton" if "activaton" in argv else "kernels-community/activation"
    assert_unreachable_advice(err, repo)


def test_a_locked_load_offline_is_advised_to_download_the_locked_commit(
    manager: object, hf_cache: Path, hub_offline: Callable[[bool], None], tmp_path: Path,
) -> None:
    import kernel_plugins

    lock = tmp_path / "kernels.lock"
    lock.write_text(json.dumps([{"repo_id": "kernels-community/activation", "sha": SHA, "variants": {}}]))
    hub_offline(True)
    with pytest.raises(KernelPluginsError) as info:
        kernel_plugins.load("kernels-community/activation", lockfile=lock, device="cpu")
    message = str(info.value)
    assert f"kernel-plugins download kernels-community/activation --revision {SHA}" in message
    assert "kernel-plugins download PROJECT" in message and "--version" not in message


def test_a_typo_is_answered_with_the_bundled_name_it_is_close_to(
    manager: object, hf_cache: Path, hub_offline: Callable[[bool], None],
    capsys: pytest.CaptureFixture[str],
) -> None:
    hub_offline(True)
    assert main(["load", "activaton"]) == 1
    assert "no kernel named 'activaton' is bundled or cached: did you mean 'activation'?" in capsys.readouterr().err
    assert main(["load", "zzzzqqq"]) == 1
    assert "did you mean" not in capsys.readouterr().err  # nothing close: no guess


def test_json_before_the_command_and_a_misspelt_option(manager: object, capsys: pytest.CaptureFixture[str],
                                                       tmp_path: Path) -> None:
    assert main(["--json", "list-backends"]) == 0
    assert json.loads(capsys.readouterr().out)["backends"][0]["name"] == "cpu"
    assert main(["--json", "completion", "bash"]) == 2
    assert "completion has no --json output" in capsys.readouterr().err
    assert main(["list-backends", "--jsn"]) == 2
    assert "unrecognized arguments: --jsn; did you mean '--json'?" in capsys.readouterr().err
    assert main(["lock", str(tmp_path)]) == 1
    assert f"the project folder {tmp_path} holds no pyproject.toml" in capsys.readouterr().err
