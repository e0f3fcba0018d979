"""Advice that works where it is given (issue 27, section 3): each message names the step
that fixes the problem on this machine, and following it does what it says."""

from __future__ import annotations

import json
import re
import socket
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import torch  # noqa: F401  before the fake torch.backends entry points: torch loads them on import

from kernel_plugins import hub, plugins
from kernel_plugins.cli.main import main
from kernel_plugins.errors import HubError, MissingDependencyError
from kernel_plugins.torch_support import SUPPORTED_TORCH, torch_problem
from tests.support.threads import within


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def fake_distribution(root: Path, name: str, version: str, entry_points: str = "") -> None:
    """A distribution's metadata (no code) in ``root``, as pip leaves it in site-packages."""
    info = root / f"{name}-{version}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    if entry_points:
        (info / "entry_points.txt").write_text(entry_points)


@pytest.fixture
def installed_plugins(monkeypatch: pytest.MonkeyPatch) -> Iterator[plugins.PluginManager]:
    """The process-wide manager with this environment's plugin distributions."""
    monkeypatch.delenv("KERNEL_PLUGINS_STRICT", raising=False)
    pm = plugins.PluginManager()
    old = plugins.reset_manager(pm)
    yield pm
    plugins.reset_manager(old)


def test_a_known_plugin_is_advised_with_the_checkout_install_too(
    manager: object, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run(capsys, "variants", "org/name", "--device", "npu")
    assert code == 2
    assert ("install the plugin: pip install kernel-plugins-npu (from a checkout: pip install "
            "./plugins/npu)") in err
    # and that folder is the distribution the advice names
    assert 'name = "kernel-plugins-npu"' in Path("plugins/npu/pyproject.toml").read_text()


def test_a_vendor_stack_without_its_backend_is_named(
    manager: object, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    # torch_npu announces itself to torch in the torch.backends group; no import happens
    fake_distribution(tmp_path, "torch_npu", "2.1.0.post3",
                      "[torch.backends]\ntorch_npu = torch_npu:_autoload\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    advice = ("To use 'npu' devices, torch_npu (torch_npu 2.1.0.post3) is installed here; "
              "install the plugin: pip install kernel-plugins-npu")
    code, out, _ = run(capsys, "list-backends", "--wide")
    assert code == 0 and f"note: {advice}" in out
    code, _, err = run(capsys, "variants", "org/name", "--device", "npu")
    assert code == 2 and advice in err
    monkeypatch.undo()
    assert "torch_npu" not in run(capsys, "list-backends", "--wide")[1]


def test_a_plugin_left_out_by_kernel_plugins_load_names_the_variable(
    installed_plugins: plugins.PluginManager, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("KERNEL_PLUGINS_LOAD", "npu")
    code, _, err = run(capsys, "variants", "org/name", "--device", "mlu")
    assert code == 2
    assert ("The mlu plugin is installed, but KERNEL_PLUGINS_LOAD='npu' leaves it out: add mlu "
            "to KERNEL_PLUGINS_LOAD, or unset it.") in err
    assert "pip install" not in err


def test_gpu_suggests_cuda_and_lists_the_installed_backends(
    manager: object, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run(capsys, "variants", "org/name", "--device", "gpu")
    assert code == 2
    assert "did you mean 'cuda'? Installed backends: cpu, cuda, rocm (cuda), xpu, metal (mps)." in err


def test_torch_outside_the_range_names_the_range_and_the_vendors_torch(
    installed_plugins: plugins.PluginManager, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake_distribution(tmp_path, "torch_mlu", "1.22.0+torch2.4.0")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr("kernel_plugins.torch_support.torch_version_string", lambda: "2.4.0")
    import kernel_plugins

    with pytest.raises(MissingDependencyError) as info:
        kernel_plugins.load("./examples/relu", device="cpu")
    assert str(info.value) == (
        "the installed torch 2.4.0 is outside the releases kernel-plugins supports (torch >= 2.5, "
        "< 3); torch_mlu 1.22.0+torch2.4.0 was built for torch 2.4: upgrade the vendor extension "
        "together with its torch, as the vendor's instructions say (another torch alone breaks "
        "the stack)"
    )


def test_emulate_without_torch_says_how_to_install_it(
    installed_plugins: plugins.PluginManager, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    import kernel_plugins_testing

    monkeypatch.setattr("kernel_plugins.torch_support.torch_version_string", lambda: None)
    monkeypatch.setattr(kernel_plugins_testing, "emulate", lambda *a, **k: pytest.fail("emulated"))
    assert main(["--emulate", "mlu", "list-backends"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: loading a kernel needs torch") and "Traceback" not in err


def test_the_torch_range_is_one_constant_that_the_extra_states_too() -> None:
    low, high = SUPPORTED_TORCH
    text = Path("pyproject.toml").read_text()
    assert f'torch = ["torch>={low[0]}.{low[1]},<{high[0]}"]' in text
    assert torch_problem(f"{low[0]}.{low[1]}.0") is None
    assert torch_problem(f"{high[0]}.{high[1]}.0") is not None
    assert torch_problem(f"{low[0]}.{low[1] - 1}.1+cpu") is not None
    assert "pip install torch --index-url https://download.pytorch.org/whl/cpu" in str(
        torch_problem(None))


def _locked_project(hub: object, folder: Path, repo_id: str, variants: dict[str, dict[str, str]]) -> Path:
    from tests.support.hub import make_kernel_repo

    make_kernel_repo(hub, repo_id, variants=variants)  # type: ignore[arg-type]
    folder.mkdir()
    (folder / "pyproject.toml").write_text(
        f'[project]\nname = "demo"\n\n[tool.kernels.dependencies]\n"{repo_id}" = 1\n')
    assert main(["lock", str(folder)]) == 0
    return folder


def test_a_lock_without_a_variant_for_this_device_names_the_device(
    manager: object, hub_env: object, hf_cache: Path, tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    project = _locked_project(hub_env, tmp_path / "p", "kernels-community/advice-gpu-only",
                              {"torch-cuda": {"__init__.py": "CUDA = True\n"}})
    capsys.readouterr()
    code, out, _ = run(capsys, "download", str(project))
    assert code == 1
    assert "no variant in the lock fits this device (cpu): it pins torch-cuda; use --all-variants" in out
    code, out, _ = run(capsys, "download", str(project), "--all-variants")  # the advice works
    assert code == 0 and "torch-cuda: OK" in out and "1 checked, 0 failed" in out


def test_a_lock_whose_commit_offers_no_variants_fails_even_with_all_variants(
    manager: object, hub_env: object, hf_cache: Path, tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    repo_id = "kernels-community/advice-emptied"
    project = _locked_project(hub_env, tmp_path / "p", repo_id,
                              {"torch-cpu": {"__init__.py": "VALUE = 1\n"}})
    lock = json.loads((project / "kernels.lock").read_text())
    git = hub_env.repo(repo_id)  # type: ignore[attr-defined]
    git.remove("build/torch-cpu/__init__.py")  # a commit whose build/ holds no variant
    git.write("build/README.md", "builds moved elsewhere\n")
    lock[0]["lock"]["commit"] = git.commit("no builds")
    (project / "kernels.lock").write_text(json.dumps(lock))
    (project / "kernels.lock.variants").unlink()
    capsys.readouterr()
    for extra in ([], ["--all-variants"]):
        code, out, _ = run(capsys, "download", str(project), *extra)
        assert code == 1, out
        assert f"{repo_id} *: FAILED: {repo_id} (kernel) offers no build variants at commit " in out
        assert "0 checked" not in out


def test_a_malformed_hf_endpoint_is_named(hf_cache: Path) -> None:
    with pytest.raises(HubError) as info:
        hub.resolve("tests-org/multi", version=1, endpoint="notaurl")
    assert str(info.value).startswith(
        "HF_ENDPOINT is 'notaurl', not an http:// or https:// address: set it to the Hub's "
        "address (e.g. https://huggingface.co) or unset it.")
    assert "Try again" not in str(info.value)


@pytest.fixture
def silent_server() -> Iterator[str]:
    """An address on loopback that accepts connections and never answers."""
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(16)
        accepted: list[socket.socket] = []
        stop = threading.Event()

        def accept() -> None:
            server.settimeout(0.2)
            while not stop.is_set():
                try:
                    accepted.append(server.accept()[0])
                except OSError:
                    continue

        thread = threading.Thread(target=accept, daemon=True)
        thread.start()
        yield f"http://127.0.0.1:{server.getsockname()[1]}"
        stop.set()
        thread.join()
        for conn in accepted:
            conn.close()


def test_a_timeout_names_the_timeout_settings(
    hf_cache: Path, silent_server: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_ETAG_TIMEOUT", 0.3)
    start = time.monotonic()
    with pytest.raises(HubError) as info:  # a time limit: a broken timeout fails, never hangs
        within(30, lambda: hub.resolve("tests-org/multi", version=1, endpoint=silent_server))
    assert time.monotonic() - start < 30
    message = str(info.value)
    assert message.startswith(f"The Hub at {silent_server} did not answer in time while ")
    assert "Allow it more seconds with HF_HUB_ETAG_TIMEOUT (API requests) or " in message
    assert "broke off" not in message and "Try again" not in message


def test_the_offline_advice_is_a_command_that_downloads_one_repository(
    manager: object, hub_env: object, hf_cache: Path, hub_offline: Callable[[bool], None],
    capsys: pytest.CaptureFixture[str],
) -> None:
    import kernel_plugins
    from tests.lock.conftest import cpu_variant
    from tests.support.hub import make_kernel_repo

    repo_id = "kernels-community/advice-download"
    make_kernel_repo(hub_env, repo_id, variants={  # type: ignore[arg-type]
        "torch-cpu": cpu_variant("_advice_download_v1", 1),
        "torch-cuda": {"__init__.py": "CUDA = True\n"},
    })
    hub_offline(True)
    with pytest.raises(HubError) as info:
        kernel_plugins.load(repo_id, version=1, device="cpu")
    advised = re.search(r"kernel-plugins (download \S+ --version 1)\b", str(info.value))
    assert advised is not None, info.value  # the version asked for, not a placeholder
    argv = advised.group(1).split()

    hub_offline(False)
    code, out, _ = run(capsys, *argv)
    assert code == 0, out
    assert re.search(rf"^{repo_id} at [0-9a-f]{{12}} \(v1\) torch-cpu: OK ", out, re.M)
    assert "torch-cuda" not in out and out.rstrip().endswith("1 checked, 0 failed")
    hub_offline(True)
    assert kernel_plugins.load(repo_id, version=1, device="cpu").VALUE == 1  # from the cache

    hub_offline(False)
    code, out, _ = run(capsys, *argv, "--all-variants", "--json")
    assert code == 0
    assert [r["variant"] for r in json.loads(out)["variants"]] == ["torch-cpu", "torch-cuda"]


def test_download_with_a_version_takes_a_repository_never_a_folder(
    manager: object, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run(capsys, "download", "./examples/relu", "--version", "1")
    assert code == 1
    assert "relu is a local folder: --version 1 only applies to Hub repositories" in err
