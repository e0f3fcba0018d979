"""kernel_plugins_testing.run_forked: a child forked from a process that imported torch runs its
code as ``python -c`` would."""

from __future__ import annotations

import json
import os
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from kernel_plugins_testing import run_forked, run_module_forked

pytestmark = pytest.mark.skipif(not hasattr(os, "pidfd_open"), reason="forks on Linux only")


def test_the_child_gets_the_environment_folder_path_and_a_main_of_its_own(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("KP_FORKED_KEEP", "kept")
    monkeypatch.setenv("KP_FORKED_DROP", "dropped")
    extra = tmp_path / "extra"
    extra.mkdir()
    (extra / "kp_forked_helper.py").write_text("VALUE = 7\n")
    code = (
        "import os, sys, json, kp_forked_helper\n"
        "print(json.dumps([os.environ['KP_FORKED_KEEP'], os.environ['KP_FORKED_NEW'],\n"
        "    'KP_FORKED_DROP' in os.environ, os.getcwd(), __name__, sys.argv,\n"
        "    'kernel_plugins' in sys.modules, 'torch' in sys.modules, kp_forked_helper.VALUE,\n"
        "    sorted(k for k in globals() if not k.startswith('__'))]))\n"
    )
    env = {"KP_FORKED_NEW": "new", "PYTHONPATH": str(extra)}
    proc = run_forked(code, env, cwd=tmp_path, drop=("KP_FORKED_DROP",))
    assert proc.returncode == 0, proc.stderr
    keep, new, dropped, cwd, name, argv, kp, torch, value, names = json.loads(proc.stdout)
    assert (keep, new, dropped, cwd, name, argv) == ("kept", "new", False, str(tmp_path), "__main__", ["-c"])
    assert (kp, torch, value) == (False, True, 7)  # nothing of ours was imported before
    assert names == ["json", "kp_forked_helper", "os", "sys"]  # none of the zygote's names


def test_exit_status_output_and_atexit_are_an_interpreters() -> None:
    done = run_forked("import atexit, sys\natexit.register(print, 'bye')\nprint('out')\n"
                      "print('err', file=sys.stderr)\nsys.exit(3)")
    assert (done.returncode, done.stdout, done.stderr) == (3, "out\nbye\n", "err\n")
    failed = run_forked("1 / 0")
    assert failed.returncode == 1
    assert 'File "<string>", line 1' in failed.stderr and failed.stderr.endswith("ZeroDivisionError: division by zero\n")


# each ends another way; a forked child skips the teardown of every module, not what it shows
ENDINGS = {
    "uncaught": "1 / 0",
    "chained": "try:\n    1 / 0\nexcept Exception as e:\n    raise ValueError('v') from e",
    "syntax": "def (:",
    "ctrl-c": "raise KeyboardInterrupt",
    "exit-message": "import sys\nsys.exit('a message')",
    "exit-negative": "import sys\nsys.exit(-1)",
    "exit-object": "import sys\nsys.exit(['a'])",
    "thread": "import threading, time\ndef late():\n    time.sleep(0.3)\n    print('thread')\n"
              "threading.Thread(target=late).start()\nprint('main')",
    "del": "class D:\n    def __del__(self):\n        print('freed')\nd = D()",
    "unclosed": "import sys\nf = open('unclosed.txt', 'w')\nf.write('kept')\nsys.stdout.write('no newline')",
    "stdout-unflushable": "import sys\nclass Out:\n    def write(self, s): return len(s)\n"
                          "    def flush(self): raise OSError(28, 'No space left on device')\n"
                          "sys.stdout = Out()\nprint('x')",
}


@pytest.mark.parametrize("code", ENDINGS.values(), ids=ENDINGS.keys())
def test_the_child_ends_as_python_dash_c_does(code: str, tmp_path: Path) -> None:
    import re
    import sys

    def ending(run) -> tuple:
        folder = tmp_path / run.__name__
        folder.mkdir()
        done = run(folder)
        left = {p.name: p.read_text() for p in folder.iterdir()}
        return done.returncode, done.stdout, re.sub(r"0x[0-9a-f]+", "0x.", done.stderr), left

    def spawned(folder: Path) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-c", code], cwd=folder, capture_output=True, text=True,
                              timeout=60, check=False)

    def forked(folder: Path) -> subprocess.CompletedProcess[str]:
        return run_forked(code, cwd=folder)

    assert ending(forked) == ending(spawned)


def test_a_child_past_its_time_is_killed() -> None:
    with pytest.raises(subprocess.TimeoutExpired):
        run_forked("import time\ntime.sleep(60)", timeout=1)
    assert run_forked("print('next')").stdout == "next\n"  # the zygote still serves


def test_children_run_side_by_side(tmp_path: Path) -> None:
    # each child waits until all four are running: one after the other, the first never ends
    code = ("import pathlib, sys, time\n"
            f"here = pathlib.Path({str(tmp_path)!r})\n"
            "(here / str(NUMBER)).touch()\n"
            "while len(list(here.iterdir())) < 4:\n"
            "    time.sleep(0.01)\n"
            "sys.exit(NUMBER)\n")
    with ThreadPoolExecutor(4) as pool:
        runs = pool.map(lambda i: run_forked(f"NUMBER = {i}\n" + code, timeout=60), range(4))
        assert [r.returncode for r in runs] == [0, 1, 2, 3]


@pytest.mark.parametrize("matters", [True, False])
def test_torch_was_imported_with_the_childs_backend_autoload_setting(matters: bool, monkeypatch) -> None:
    from kernel_plugins_testing import _forked

    # an installed torch.backends entry point makes the setting matter (torch calls it on import)
    monkeypatch.setattr(_forked, "_autoload_matters", lambda: matters)
    monkeypatch.setattr(_forked, "_ZYGOTES", {})
    code = "import os, json, torch\nprint(json.dumps([os.environ.get('TORCH_DEVICE_BACKEND_AUTOLOAD'), os.getppid()]))"
    try:
        off = json.loads(run_forked(code, {"TORCH_DEVICE_BACKEND_AUTOLOAD": "0"}).stdout)
        on = json.loads(run_forked(code, {"TORCH_DEVICE_BACKEND_AUTOLOAD": "1"}).stdout)
    finally:
        for zygote in _forked._ZYGOTES.values():
            zygote.close()
    assert off[0] == "0" and on[0] == "1"  # the child's own setting, either way
    assert (off[1] != on[1]) is matters  # two zygotes where torch read the setting differently


def test_a_torch_backends_entry_point_makes_the_setting_matter(tmp_path: Path, monkeypatch) -> None:
    from kernel_plugins_testing import _forked

    assert _forked._autoload_matters.__wrapped__() is False  # none is installed here
    info = tmp_path / "kp_autoload_probe-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: kp-autoload-probe\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[torch.backends]\nprobe = kp_autoload_probe:init\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert _forked._autoload_matters.__wrapped__() is True


def test_a_module_runs_as_python_dash_m() -> None:
    done = run_module_forked("kernel_plugins.cli", "--version")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip()


def test_without_pidfd_the_child_is_spawned_with_the_same_environment(tmp_path: Path, monkeypatch) -> None:
    from kernel_plugins_testing import _forked

    monkeypatch.setattr(_forked, "_can_fork", lambda: False)
    monkeypatch.setenv("KP_FORKED_DROP", "dropped")
    code = "import os, sys\nprint(os.environ['KP_FORKED_NEW'], 'KP_FORKED_DROP' in os.environ, os.getcwd(), 'torch' in sys.modules)"
    done = run_forked(code, {"KP_FORKED_NEW": "new"}, cwd=tmp_path, drop=("KP_FORKED_DROP",))
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["new", "False", str(tmp_path), "False"]  # a new interpreter: no torch yet
