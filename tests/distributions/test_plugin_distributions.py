"""The five plugin distributions, each installed alone next to the core.

Each distribution under ``plugins/`` is built and installed by pip (``--no-deps
--target``) into its own folder. Interpreters are then started on a *clean* view of
this environment: the site-packages folder mirrored by symbolic links, minus every
plugin distribution that happens to be installed in it (so an editable install of
the plugins in the development venv cannot leak in), plus the one target folder.
That gives "a fresh environment with the core and one plugin" without reinstalling
torch. The vendor stacks are absent, so each plugin must be listed as "no device",
never as an error.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import sysconfig
import textwrap
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from tests.support.forks import python_c

pytestmark = pytest.mark.plugin_install

ROOT = Path(__file__).resolve().parents[2]
PLUGINS = ("mlu", "musa", "npu", "neuron", "tpu")
#: Site-packages entries that belong to a plugin distribution (editable or not).
_PLUGIN_ENTRY = re.compile(r"kernel[_-]plugins[_-][a-z0-9_]+", re.IGNORECASE)

_CHILD = textwrap.dedent(
    """
    import contextlib, io, json, site, sys
    site.addsitedir(sys.argv[1])
    sys.path[:0] = [p for p in sys.argv[2:] if p]
    from kernel_plugins.cli import main

    def run(argv):
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(argv)
        return {"code": code, "out": out.getvalue(), "err": err.getvalue()}

    result = {
        "list": run(["list-backends", "--json"]),
        "foo": run(["load", "activation", "--device", "foo"]),
        "mlu": run(["load", "activation", "--device", "mlu"]),
    }
    print("RESULT:" + json.dumps(result))
    """
)


def _clean_site(dest: Path) -> Path:
    """Mirror this environment's site-packages without any plugin distribution."""
    dest.mkdir()
    seen: set[str] = set()
    for key in ("purelib", "platlib"):
        folder = Path(sysconfig.get_paths()[key])
        if str(folder) in seen or not folder.is_dir():
            continue
        seen.add(str(folder))
        for entry in folder.iterdir():
            link = dest / entry.name
            if _PLUGIN_ENTRY.search(entry.name) or link.exists():
                continue
            link.symlink_to(entry)
    return dest


def _pip_install(wheel: Path, target: Path) -> subprocess.CompletedProcess[str]:
    """``pip install --no-deps --target`` of one plugin's wheel (built once, by ``wheels``)."""
    cmd = [sys.executable, "-m", "pip", "install", "--no-deps", "--no-index", "--quiet",
           "--disable-pip-version-check", "--target", str(target), str(wheel)]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=300, check=False)


def _run_child(site_dir: Path, extra: list[Path]) -> dict[str, Any]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "KERNEL_PLUGINS"))}
    env.update(PYTHONNOUSERSITE="1", TORCH_DEVICE_BACKEND_AUTOLOAD="0", HF_HUB_OFFLINE="1")
    # ``python -S -c _CHILD SITE EXTRA...``, forked from a process that imported torch: the
    # child first cuts sys.path back to what -S leaves (no site-packages, no .pth entries)
    code = ("import sys\n"
            "sys.path[:] = [p for p in sys.path if p == '' or (p.startswith(sys.base_prefix) and 'site-packages' not in p)]\n"
            + _CHILD)
    proc = python_c(code, site_dir, *extra, env=env, cwd=site_dir.parent)
    lines = [line for line in proc.stdout.splitlines() if line.startswith("RESULT:")]
    assert proc.returncode == 0 and lines, (
        f"child failed (exit {proc.returncode})\nstdout:\n{proc.stdout}\nstderr:\n{proc.stderr}"
    )
    result = json.loads(lines[-1][len("RESULT:"):])
    listing = result["list"]
    assert listing["code"] == 0, listing
    result["rows"] = {row["name"]: row for row in json.loads(listing["out"])["backends"]}
    return result


@pytest.fixture(scope="module")
def environments(tmp_path_factory: pytest.TempPathFactory, wheels: dict[str, Path]) -> dict[str, dict[str, Any]]:
    """Install every plugin alone, then run the CLI with none, each one, and all five."""
    base = tmp_path_factory.mktemp("plugin-envs")
    site_dir = _clean_site(base / "site")
    targets = {name: base / f"target-{name}" for name in PLUGINS}
    with ThreadPoolExecutor(max_workers=len(PLUGINS)) as pool:
        procs = pool.map(lambda n: _pip_install(wheels[f"kernel_plugins_{n}-0.1.0-py3-none-any.whl"], targets[n]),
                         PLUGINS)
        installs = dict(zip(PLUGINS, procs, strict=True))
    for name, proc in installs.items():
        assert proc.returncode == 0, f"pip install of the {name} plugin's wheel failed:\n{proc.stderr}"
    runs: dict[str, list[Path]] = {"none": [], **{n: [targets[n]] for n in PLUGINS}}
    runs["all"] = list(targets.values())
    with ThreadPoolExecutor(max_workers=3) as pool:
        results = pool.map(lambda paths: _run_child(site_dir, paths), runs.values())
        return dict(zip(runs, results, strict=True))


def test_core_alone_has_no_plugin_backends(environments: dict[str, dict[str, Any]]) -> None:
    rows = environments["none"]["rows"]
    assert {"cpu", "cuda", "rocm", "xpu", "metal"} <= set(rows)
    assert not set(PLUGINS) & set(rows)


@pytest.mark.parametrize("plugin", PLUGINS)
def test_each_distribution_alone_is_listed_as_no_device(
    environments: dict[str, dict[str, Any]], plugin: str
) -> None:
    rows = environments[plugin]["rows"]
    assert set(PLUGINS) & set(rows) == {plugin}
    row = rows[plugin]
    assert row["status"] == "no device"
    assert row["error"] is None
    assert (row["distribution"], row["version"], row["builtin"]) == (
        f"kernel-plugins-{plugin}", "0.1.0", False,
    )
    assert row["device_type"] == plugin
    assert not [r for r in rows.values() if r["status"] == "error"]


def test_all_five_together(environments: dict[str, dict[str, Any]]) -> None:
    rows = environments["all"]["rows"]
    assert set(PLUGINS) <= set(rows)
    assert all(rows[p]["status"] == "no device" for p in PLUGINS)


def test_unknown_device_lists_the_installed_backends(
    environments: dict[str, dict[str, Any]],
) -> None:
    foo = environments["all"]["foo"]
    assert foo["code"] == 2  # a --device no backend provides is a usage error
    assert "unknown device type 'foo'" in foo["err"]
    listed = foo["err"].split("Installed backends:", 1)[1]
    for name in ("cpu", "cuda", *PLUGINS):
        assert re.search(rf"\b{name}\b", listed), (name, foo["err"])
    assert "Traceback" not in foo["err"]


def test_plugin_device_without_vendor_stack_is_no_device(
    environments: dict[str, dict[str, Any]],
) -> None:
    mlu = environments["mlu"]["mlu"]
    assert mlu["code"] == 1
    assert "no 'mlu' device is available" in mlu["err"]
    assert "kernel-plugins-mlu 0.1.0" in mlu["err"]


def test_uninstalled_plugin_device_suggests_the_distribution(
    environments: dict[str, dict[str, Any]],
) -> None:
    mlu = environments["none"]["mlu"]
    assert mlu["code"] == 2  # usage error: no installed backend provides it
    assert "unknown device type 'mlu'" in mlu["err"]
    assert "pip install kernel-plugins-mlu" in mlu["err"]
