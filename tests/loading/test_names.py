"""A name means one thing: one source decision for load, variants, check and verify."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import kernel_plugins
from kernel_plugins.cli.main import main
from kernel_plugins.errors import AmbiguousNameError, RepoIdError, SourceError
from kernel_plugins.hookspecs import hookimpl
from kernel_plugins.sources import find, parse_name
from tests.support.fakes import fake_backend, packaged
from tests.support.variant_dirs import write_variant


def shipper(locate):
    """A backend that ships kernels: ``locate(repo_id)`` -> folder or None."""

    @hookimpl
    def locate_kernel(repo_id, device):
        return locate(repo_id)

    return fake_backend("shipper", count=0, extra_hooks={"locate_kernel": locate_kernel})


@pytest.fixture
def in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("LOCAL_KERNELS", raising=False)
    return tmp_path


def test_repo_id_that_is_also_a_folder_is_refused_with_both_spellings(manager, in_tmp):
    write_variant(in_tmp / "examples" / "relu", {"__init__.py": "VALUE = 1\n"})
    with pytest.raises(AmbiguousNameError) as info:
        kernel_plugins.load("examples/relu", device="cpu")
    text = str(info.value)
    assert "'./examples/relu'" in text and "'hub:examples/relu'" in text
    assert "trust_remote_code" not in text  # never treated as remote code
    # each explicit spelling means exactly one thing
    assert kernel_plugins.load("./examples/relu", device="cpu").VALUE == 1
    assert find("hub:examples/relu").kind == "hub"


def test_short_name_that_is_also_a_folder_is_ambiguous(manager, in_tmp):
    write_variant(in_tmp / "activation", {"__init__.py": "VALUE = 1\n"})
    with pytest.raises(AmbiguousNameError, match="'./activation'.*'hub:activation'"):
        find("activation")
    assert find(Path("activation")).kind == "local"
    assert find("hub:activation").repo_id == "kernels-community/activation"


def test_names_that_are_only_one_thing(manager, in_tmp):
    assert parse_name("org/name").repo_id == "org/name"
    assert parse_name("activation").repo_id == "kernels-community/activation"
    (in_tmp / "not a repo").mkdir()
    assert parse_name("not a repo").path == (in_tmp / "not a repo").resolve()
    with pytest.raises(RepoIdError, match="no local folder named 'bad name!' exists either"):
        parse_name("bad name!")
    with pytest.raises(SourceError, match="does not exist"):
        parse_name("./missing")


def test_cli_commands_refuse_the_ambiguous_name_too(manager, in_tmp, capsys):
    write_variant(in_tmp / "examples" / "relu", {"__init__.py": "VALUE = 1\n"})
    for argv in (["variants", "examples/relu"], ["load", "examples/relu"],
                 ["check", "examples/relu"], ["verify", "examples/relu"]):
        assert main(argv) != 0, argv
        assert "ambiguous" in capsys.readouterr().err, argv


def test_variants_shows_the_plugin_shipped_kernel_that_load_uses(manager, tmp_path, capsys, monkeypatch):
    plugin = shipper(lambda repo_id: shipped if repo_id == "acme/shipped" else None)
    shipped = packaged(plugin, tmp_path / "pkg", monkeypatch) / "kernels" / "shipped"
    write_variant(shipped, {"__init__.py": "VALUE = 7\n"})

    manager.register(plugin, name="shipper")
    module = kernel_plugins.load("acme/shipped", device="cpu")  # no trust needed: installed code
    assert module.VALUE == 7 and module.__kernel_provenance__.source == "plugin"
    assert "trusted as installed" in module.__kernel_provenance__.notes[0]
    assert main(["variants", "acme/shipped", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["source_kind"] == "plugin" and out["best"] == "torch-cpu"


def test_a_revision_pin_skips_the_plugin_copy_and_says_so(manager, tmp_path, monkeypatch):
    plugin = shipper(lambda repo_id: shipped)
    shipped = packaged(plugin, tmp_path / "pkg", monkeypatch) / "shipped"
    write_variant(shipped, {"__init__.py": "VALUE = 7\n"})

    manager.register(plugin, name="shipper")
    info = kernel_plugins.get_device("cpu")
    source = find("acme/shipped", device=info, revision="v1")
    assert source.kind == "hub"
    assert "was not used: revision= pins a Hub commit" in source.notes[0]
    assert find("acme/shipped", device=info, version=1).kind == "plugin"


def test_a_plugin_answer_outside_its_own_files_is_loaded_like_local_kernels(manager, tmp_path, monkeypatch):
    """Issue: the hookspec says plugins serve kernels shipped inside their distribution, and
    nothing checked it: any folder skipped the trust check and the signature requirement."""
    from kernel_plugins import signatures
    from kernel_plugins.errors import SignatureError

    plugin = shipper(lambda repo_id: outside)
    packaged(plugin, tmp_path / "pkg", monkeypatch)
    outside = tmp_path / "downloads" / "shipped"  # say, a folder others can write
    write_variant(outside, {"__init__.py": "VALUE = 666\n"})
    manager.register(plugin, name="shipper")
    source = find("acme/shipped", device=kernel_plugins.get_device("cpu"))
    assert source.kind == "local-kernels" and source.path == outside
    assert f"plugin 'shipper' (unknown distribution ?) answered {outside}, outside its own files" in source.notes[0]
    with signatures.requiring(), pytest.raises(SignatureError, match="a signature is required: unsigned"):
        kernel_plugins.load("acme/shipped", device="cpu")
    module = kernel_plugins.load("acme/shipped", device="cpu")
    assert module.__kernel_provenance__.source == "local-kernels"
    assert "signatures apply" in module.__kernel_provenance__.notes[0]
    inside = tmp_path / "pkg" / "kernels" / "shipped"  # its own files: trusted as installed
    write_variant(inside, {"__init__.py": "VALUE = 8\n"})
    outside = inside
    with signatures.requiring():
        assert kernel_plugins.load("acme/shipped", device="cpu").VALUE == 8
