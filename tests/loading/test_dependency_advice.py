"""Issue 37, item 2: a local kernel whose dependency cannot be found is told where it was looked
for and how to provide it locally, and following that advice loads it (the Hub is unreachable
here, as for a newcomer offline: ``no_real_hub`` points it at a closed port)."""

from __future__ import annotations

from pathlib import Path

import pytest

from kernel_plugins.cli.main import main
from tests.support.kernels import make_variant


def test_a_missing_dependency_names_where_it_was_looked_for_and_local_kernels_works(
    tmp_path: Path, manager: object, monkeypatch: pytest.MonkeyPatch, hf_cache: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.delenv("LOCAL_KERNELS", raising=False)
    make_variant(tmp_path / "base", "torch-cpu", name="base", code="VALUE = 41\n")
    make_variant(tmp_path / "top", "torch-cpu", name="top",
                 code="from kernel_plugins import get_kernel_dep\nVALUE = get_kernel_dep('myorg/base').VALUE + 1\n",
                 metadata={"kernel-depends": [{"repo-id": "myorg/base", "version": 1}]})
    top = str(tmp_path / "top")
    for trust in ([], ["--trust-remote-code"]):  # not trusted; trusted, then the Hub cannot answer
        assert main(["load", top, "--device", "cpu", *trust]) != 0
        err = " ".join(capsys.readouterr().err.split())
        assert "depends on myorg/base (version 1)" in err, err
        assert ("Looked for myorg/base in LOCAL_KERNELS (no entry), the installed backend plugins (none "
                "ships it for cpu), then the Hub (and its download cache)") in err, err
        assert "LOCAL_KERNELS=myorg/base=PATH" in err, err
        assert ("is not trusted" in err) == (not trust), err
    monkeypatch.setenv("LOCAL_KERNELS", f"myorg/base={tmp_path / 'base'}")  # the advice, followed
    assert main(["load", top, "--device", "cpu"]) == 0, capsys.readouterr().err
    assert "myorg/base" in capsys.readouterr().out
