"""The opt-in pytest plugin of kernel-plugins-testing (no ``pytest11`` entry point).

A project enables it with ``-p kernel_plugins_testing.pytest_plugin`` (``addopts``) or
``pytest_plugins = ["kernel_plugins_testing.pytest_plugin"]`` in its top ``conftest.py``;
installing the distribution adds nothing to other projects' pytest runs.

* ``--emulate-device NAME`` emulates the accelerator ``NAME`` on the CPU for the whole
  run (:func:`kernel_plugins_testing.emulate`); one name per run, since PyTorch allows
  one PrivateUse1 name per process.
* A ``<backend>_only`` marker for every installed backend (``cuda_only``,
  ``mlu_only``...): such a test is skipped unless that device is detected (an
  emulated device counts as detected).

The plugin never makes pytest fail by itself: when the plugin manager or device
detection is unavailable or broken, it registers no markers or skips with the
reason. Importing this module does not import torch.
"""

from __future__ import annotations

from typing import Any

import pytest

__all__ = [
    "pytest_addoption",
    "pytest_configure",
    "pytest_collection_modifyitems",
    "pytest_report_header",
]

_BACKENDS = pytest.StashKey[dict[str, str]]()  # backend name -> device type
_DETECTED = pytest.StashKey[dict[str, "str | None"]]()  # backend -> skip reason (None: present)
_SUFFIX = "_only"


def pytest_addoption(parser: pytest.Parser) -> None:
    """Add ``--emulate-device NAME``."""
    group = parser.getgroup("kernel_plugins", "kernel-plugins")
    group.addoption(
        "--emulate-device",
        action="store",
        default=None,
        metavar="NAME",
        help=(
            "emulate the accelerator NAME (e.g. mlu) on the CPU for this run; "
            "not real hardware. One name per run."
        ),
    )


def _installed_backends() -> dict[str, str]:
    """Installed backend names -> device types; empty when the plugin manager fails."""
    try:
        from kernel_plugins.plugins import get_manager

        records = get_manager().backends()
        result = {}
        for name, record in records.items():
            spec = getattr(record, "spec", None)
            result[str(name)] = str(getattr(spec, "device_type", name))
        return result
    except Exception:
        return {}


def pytest_configure(config: pytest.Config) -> None:
    """Emulate the requested device, then register one ``<backend>_only`` marker per backend."""
    name = config.getoption("--emulate-device", default=None)
    if name:
        try:
            from kernel_plugins_testing import emulate

            emulate(name)
        except Exception as e:
            raise pytest.UsageError(f"--emulate-device {name}: {e}") from e
    backends = _installed_backends()
    config.stash[_BACKENDS] = backends
    config.stash[_DETECTED] = {}
    for backend in backends:
        config.addinivalue_line(
            "markers",
            f"{backend}{_SUFFIX}: run only when a {backend} device is detected "
            "(an emulated one counts)",
        )


def _skip_reason(backend: str, device_type: str) -> str | None:
    """None when ``backend``'s device is present, else why the test is skipped."""
    try:
        import kernel_plugins
        from kernel_plugins.errors import DeviceError, UnknownDeviceError
    except Exception as e:  # pragma: no cover - broken installation
        return f"{backend} device detection unavailable: {e}"
    get_device = getattr(kernel_plugins, "get_device", None)
    if get_device is None:
        return f"{backend} device detection unavailable (kernel_plugins.get_device missing)"
    candidates = [backend] if device_type == backend else [backend, device_type]
    last: Exception | None = None
    for candidate in candidates:
        try:
            get_device(candidate)
            return None
        except UnknownDeviceError as e:
            last = e
        except DeviceError as e:
            return f"no {backend} device: {e}"
        except Exception as e:
            return f"{backend} device detection failed: {type(e).__name__}: {e}"
    return f"no {backend} device: {last}"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Skip ``<backend>_only`` tests whose device is not detected (detected once per backend)."""
    backends = config.stash.get(_BACKENDS, {})
    detected = config.stash.get(_DETECTED, {})
    if not backends:
        return
    for item in items:
        for marker in item.iter_markers():
            if not marker.name.endswith(_SUFFIX):
                continue
            backend = marker.name[: -len(_SUFFIX)]
            if backend not in backends:
                continue
            if backend not in detected:
                detected[backend] = _skip_reason(backend, backends[backend])
            reason = detected[backend]
            if reason is not None:
                item.add_marker(pytest.mark.skip(reason=f"{marker.name}: {reason}"))
                break


def pytest_report_header(config: pytest.Config) -> Any:
    """Say in the header which device is emulated, so no one mistakes it for hardware."""
    name = config.getoption("--emulate-device", default=None)
    if not name:
        return None
    return f"kernel-plugins: device {name!r} is EMULATED on CPU (not real hardware)"
