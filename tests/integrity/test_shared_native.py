"""A native extension of the Hub cache is imported from the cached file itself, through the
descriptor whose bytes were verified, when only this user can change it; else from a private copy."""

from __future__ import annotations

import json
import logging
import os
import sys
import sysconfig
from pathlib import Path

import pytest

import kernel_plugins
from tests.integrity.test_verified_import import build_extension
from tests.support.hub import HubServer, make_kernel_repo
from tests.support.variant_dirs import metadata, unique_id

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc/self/fd is Linux's")
EXT = sysconfig.get_config_var("EXT_SUFFIX")


def native_repo(server: HubServer, tmp_path: Path, name: str) -> str:
    """A kernels-community repository whose torch-cpu variant imports the extension ``name``."""
    repo_id = f"kernels-community/native-{name.strip('_')}"
    files = {"__init__.py": f"from . import {name}\n", f"{name}{EXT}": build_extension(tmp_path, name, "verified")
             .read_bytes(), "metadata.json": json.dumps(metadata(unique_id("nat"), name="native-probe"))}
    make_kernel_repo(server, repo_id, variants={"torch-cpu": files})
    return repo_id


def test_native_extensions_share_the_cached_file_only_when_nobody_else_can_change_it(
        manager, hub_env, hf_cache, tmp_path, caplog, monkeypatch):
    first = native_repo(hub_env, tmp_path, "_shared_a")
    second = native_repo(hub_env, tmp_path, "_shared_b")
    blobs = hf_cache.resolve()

    def replace_blobs_then_import(device, load):  # a new file put in place after verification
        for link in Path(load.path).glob(f"*{EXT}"):
            target = link.resolve()
            swapped = target.with_name("swapped")
            swapped.write_bytes(b"\0not an extension")
            os.replace(swapped, target)
        return original(device, load)

    original = manager.load_kernel
    monkeypatch.setattr(manager, "load_kernel", replace_blobs_then_import)
    native = kernel_plugins.load(first, version=1, device="cpu")._shared_a
    assert native.WHO == "verified"
    assert native.__file__.startswith("/proc/self/fd/")
    opened = os.readlink(native.__file__)  # the cached file itself (no longer linked), not a memfd
    assert opened.startswith(str(blobs)) and "/blobs/" in opened

    hf_cache.chmod(0o777)  # the cache root: anyone may now rename what is below it
    with caplog.at_level(logging.DEBUG, logger="kernel_plugins"):
        native = kernel_plugins.load(second, version=1, device="cpu")._shared_b
    assert native.WHO == "verified"
    assert os.readlink(native.__file__).startswith("/memfd:")  # the private copy
    assert f"imported from a private copy: {blobs}: group or others may write it" in caplog.text
