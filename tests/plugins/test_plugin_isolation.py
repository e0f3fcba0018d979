"""Plugins cannot break the core: SystemExit and wrong answers are that plugin's error."""

from __future__ import annotations

import importlib.metadata
import json
import signal
import threading
import time

import pytest

import kernel_plugins
from kernel_plugins import plugins
from kernel_plugins.cli.main import main
from kernel_plugins.hookspecs import hookimpl
from tests.support.fakes import FakeEntryPoint, fake_backend
from tests.support.variant_dirs import write_variant


def exits(*args, **kwargs):
    raise SystemExit(3)


class Odd(BaseException):
    """A BaseException that is neither Exception, SystemExit nor KeyboardInterrupt."""


@pytest.fixture
def installed(monkeypatch):
    """Install fake entry points: ``installed(name=loader, ...)``; returns the manager."""

    def install(**loaders):
        eps = [FakeEntryPoint(name, loader) for name, loader in loaders.items()]
        monkeypatch.setattr(importlib.metadata, "entry_points",
                            lambda group=None: [e for e in eps if group == "kernel_plugins"])
        monkeypatch.delenv("KERNEL_PLUGINS_STRICT", raising=False)
        monkeypatch.delenv("KERNEL_PLUGINS_LOAD", raising=False)
        pm = plugins.PluginManager()
        old = plugins.reset_manager(pm)
        request_cleanup.append(old)
        return pm

    request_cleanup: list = []
    yield install
    for old in request_cleanup:
        plugins.reset_manager(old)


def test_systemexit_on_import_is_isolated_and_reported(installed, capsys):
    pm = installed(exiting=lambda: exits(), odd=lambda: (_ for _ in ()).throw(Odd("odd")))
    failures = {f.name: f for f in pm.failures()}
    assert failures["exiting"].stage == "import" and "SystemExit: 3" in failures["exiting"].message
    assert "Odd: odd" in failures["odd"].message
    assert main(["list-backends", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert "exiting" in json.dumps(out)


@pytest.mark.parametrize("hook", ["detect_device", "list_variants", "locate_kernel"])
def test_systemexit_in_a_hook_is_that_plugins_error(installed, tmp_path, hook):
    kwargs = {}
    if hook == "locate_kernel":
        kwargs["extra_hooks"] = {"locate_kernel": hookimpl(lambda repo_id, device: exits())}
        module = fake_backend("exiter", **kwargs)
    elif hook == "detect_device":
        module = fake_backend("exiter", detect=exits)
    else:
        module = fake_backend("exiter", variants=exits)
    pm = installed(exiter=lambda: module)
    assert main(["list-backends"]) == 0  # still works
    write_variant(tmp_path / "k", {"__init__.py": "VALUE = 1\n"})
    assert kernel_plugins.load(tmp_path / "k", device="cpu").VALUE == 1
    if hook == "locate_kernel":
        from kernel_plugins.sources import find

        assert find("acme/x", device=kernel_plugins.get_device("cpu")).kind == "hub"
        assert any(f.stage == "locate_kernel" and "SystemExit" in f.message for f in pm.failures())
    if hook == "detect_device":
        assert "SystemExit" in pm.detect("exiter").error


def test_locate_kernel_returning_the_wrong_type_is_the_plugins_error(installed):
    module = fake_backend("shipper", extra_hooks={
        "locate_kernel": hookimpl(lambda repo_id, device: 12345)})
    pm = installed(shipper=lambda: module)
    from kernel_plugins.sources import find

    assert find("acme/x", device=kernel_plugins.get_device("cpu")).kind == "hub"
    (failure,) = [f for f in pm.failures() if f.stage == "locate_kernel"]
    assert failure.name == "shipper" and "returned int (12345)" in failure.message


def _ctrl_c():
    """What Ctrl-C does: a real SIGINT, which Python's handler turns into KeyboardInterrupt."""
    signal.raise_signal(signal.SIGINT)
    time.sleep(5)  # the handler raises before this ends


main_thread_only = pytest.mark.skipif(threading.current_thread() is not threading.main_thread(),
                                      reason="signals reach the main thread only")


@pytest.fixture
def ctrl_c_raises():
    """Python's own SIGINT handler for the test: a suite started in the background (``&``,
    nohup) inherits an ignored SIGINT, which no Ctrl-C reaches."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


@main_thread_only
def test_a_real_ctrl_c_is_not_swallowed(installed, ctrl_c_raises):
    with pytest.raises(KeyboardInterrupt):
        installed(ctrl_c=_ctrl_c).backends()
    with pytest.raises(KeyboardInterrupt):
        installed(later=lambda: fake_backend("later", detect=_ctrl_c)).detect("later")
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # left as it was


@main_thread_only
def test_a_plugins_own_keyboard_interrupt_is_that_plugins_failure(installed, capsys):
    """Issue: a hook raising KeyboardInterrupt itself was taken for Ctrl-C: the CLI exited 130
    and the host program got the exception on every call."""
    def raises():
        raise KeyboardInterrupt

    pm = installed(importer=raises, detector=lambda: fake_backend("detector", detect=raises))
    (failure,) = [f for f in pm.failures() if f.name == "importer"]
    assert failure.stage == "import" and failure.message == "KeyboardInterrupt: "
    assert "KeyboardInterrupt" in pm.detect("detector").error
    assert main(["list-backends"]) == 0
    assert "KeyboardInterrupt" in capsys.readouterr().out


@pytest.mark.parametrize("ours", [True, False])
def test_a_load_kernel_failure_keeps_its_cause(installed, tmp_path, ours):
    """The error raised for a failing ``load_kernel`` is chained to what really failed: the
    plugin's own error keeps its cause (never itself), any other error becomes a
    PluginError caused by it."""
    from kernel_plugins.errors import KernelImportError, PluginError

    def load_kernel(device, load):
        try:
            import a_vendor_module_that_is_not_there  # noqa: F401
        except ImportError as e:
            if ours:
                raise KernelImportError("the vendor package failed to import") from e
            raise
        return None

    module = fake_backend("chainer", extra_hooks={"load_kernel": hookimpl(load_kernel)})
    installed(chainer=lambda: module)
    write_variant(tmp_path / "k", {"__init__.py": "VALUE = 1\n"}, variant="torch-chainer")
    with pytest.raises(KernelImportError if ours else PluginError) as caught:
        kernel_plugins.load(tmp_path / "k", device="chainer")
    cause = caught.value.__cause__
    assert cause is not caught.value
    assert isinstance(cause, ImportError) and "a_vendor_module_that_is_not_there" in str(cause)
