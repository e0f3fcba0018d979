"""The tpu plugin against the conformance suite, with the Google TPU facts of conformance.toml.

The suite (:mod:`kernel_plugins_testing.conformance`) runs every standard check with
these facts. The TPU-specific detection (``torch.backends.tpu`` is what ``torch_tpu``
sets on import, with or without TPU chips; ``torch.tpu`` exists only with them) and the
libtpu version (0.x, from the distribution metadata) are checked by the methods below.
"""

from __future__ import annotations

import sys
import types
from pathlib import Path

import pytest
import torch
from kernel_plugins.device import DeviceInfo
from kernel_plugins_testing.conformance import declared_suites

from kernel_plugins_tpu.hooks import TPU, parse_libtpu_version, read_libtpu_version

SUITES = declared_suites(TPU, Path(__file__).with_name("conformance.toml"))


def _distribution(site: Path, name: str, version: str) -> None:
    """``<name>-<version>.dist-info/METADATA`` in ``site`` (a distribution's metadata only)."""
    info = site / f"{name.replace('-', '_')}-{version}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Name: {name}\nVersion: {version}\n", encoding="utf-8")


class TestTpuPlugin(SUITES.plugin):  # type: ignore[name-defined,misc]
    """Hook-level checks of the tpu plugin, and its torch_tpu detection."""

    def _stand_ins(self, monkeypatch: pytest.MonkeyPatch, count: int = 2, **facts: object) -> None:
        self.plugin.hide(monkeypatch)
        self.plugin.put_in_place(monkeypatch, self.plugin.stand_ins(count, **facts))

    def test_torch_tpu_loaded_without_tpu_chips_is_no_device(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """torch.backends.tpu is set on any host; torch.tpu only on hosts with TPU chips."""
        self._stand_ins(monkeypatch)
        monkeypatch.delattr(torch, "tpu")
        assert hasattr(torch.backends, "tpu")
        assert TPU.detect_device() is None
        outcome = self.plugin.manager().detect("tpu")
        assert (outcome.status, outcome.error) == ("no device", None)
        assert "torch.tpu does not exist" in str(outcome.reason)
        assert "only on hosts with TPU devices" in str(outcome.reason)

    def test_a_torch_tpu_that_sets_no_torch_backends_tpu_is_not_detected(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """torch.tpu alone is not Google's stack: kernels 0.17.2 asks for torch.backends.tpu."""
        self._stand_ins(monkeypatch)
        monkeypatch.delattr(torch.backends, "tpu")
        assert TPU.detect_device() is None
        reason = self.plugin.manager().detect("tpu").reason
        assert "torch.backends.tpu is not set" in str(reason), reason

    def test_torch_accelerator_naming_tpu_is_detected_without_torch_backends_tpu(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """kernels 0.19 asks torch.accelerator for the current accelerator: so does detection."""
        self._stand_ins(monkeypatch)
        monkeypatch.delattr(torch.backends, "tpu")
        current = types.SimpleNamespace(type="tpu")
        accelerator = types.SimpleNamespace(current_accelerator=lambda: current)
        monkeypatch.setattr(torch, "accelerator", accelerator)
        info = TPU.detect_device()
        assert info is not None and info.count == 2
        current.type = "cuda"  # another accelerator: not Google's stack
        assert TPU.detect_device() is None

    def test_importing_torch_tpu_sets_torch_backends_tpu(
        self, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
    ) -> None:
        """Without device-backend autoload, detection imports torch_tpu, which registers itself."""
        self.plugin.hide(monkeypatch)
        package = tmp_path / "site" / "torch_tpu"
        package.mkdir(parents=True)
        (package / "__init__.py").write_text(
            "import types, torch\n"
            "__version__ = '0.2.0'\n"
            "torch.backends.tpu = types.ModuleType('torch.backends.tpu')\n"
            "torch.tpu = types.SimpleNamespace(is_available=lambda: True,\n"
            "                                  device_count=lambda: 8)\n",
            encoding="utf-8",
        )
        _distribution(tmp_path / "site", "libtpu", "0.0.49")
        monkeypatch.syspath_prepend(str(tmp_path / "site"))
        try:
            info = TPU.detect_device()
        finally:
            for owner, name in ((torch.backends, "tpu"), (torch, "tpu")):
                if hasattr(owner, name):
                    delattr(owner, name)
        assert "torch_tpu" in sys.modules
        assert info is not None
        assert (info.count, info.extension_version, info.runtime_version) == (8, "0.2.0", "0.0.49")
        assert (info.name, info.capability, info.emulated) == (None, None, False)

    def test_libtpu_version_comes_from_the_distribution_metadata(
        self, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
    ) -> None:
        _distribution(tmp_path / "nightly", "libtpu-nightly", "0.1.dev20240610")
        monkeypatch.syspath_prepend(str(tmp_path / "nightly"))
        assert read_libtpu_version().text == "0.1.dev20240610"
        _distribution(tmp_path / "release", "libtpu", "0.0.51")
        monkeypatch.syspath_prepend(str(tmp_path / "release"))
        reading = read_libtpu_version()
        assert (reading.text, reading.note) == ("0.0.51", None)  # libtpu first

    @pytest.mark.parametrize(
        ("text", "version"),
        [("0.0.51", (0, 0, 51)), ("0.1.dev20240610", (0, 1)), ("0.0.17.post1", (0, 0, 17)),
         ("nightly", None), ("", None), (None, None), (51, None)],
    )
    def test_parse_libtpu_version(self, text: object, version: object) -> None:
        assert parse_libtpu_version(text) == version

    def test_libtpu_is_not_imported_to_read_its_version(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        self._stand_ins(monkeypatch)
        monkeypatch.setitem(sys.modules, "libtpu", None)  # importing it would fail
        info = TPU.detect_device()
        assert info is not None and info.runtime_version == "0.0.51"

    def test_synchronize_without_torch_tpu_synchronize_uses_torch_accelerator(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """torch.tpu.synchronize is unverified: torch.accelerator.synchronize stands in."""
        self.plugin.hide(monkeypatch)
        calls: list[object] = []
        accelerator = types.SimpleNamespace(synchronize=lambda index=None: calls.append(index))
        monkeypatch.setattr(torch, "accelerator", accelerator)
        monkeypatch.setattr(torch, "tpu", types.SimpleNamespace(), raising=False)
        info = DeviceInfo(backend="tpu", device_type="tpu", count=1, index=0)
        assert TPU.synchronize(info) is True
        assert calls == [0]
