"""Error types of kernel-plugins.

Every error the library raises on purpose derives from :class:`KernelPluginsError`.
Messages say what was wrong, the values involved and how to fix it; the command
line prints them without a traceback unless ``--debug`` is given.
"""

from __future__ import annotations

__all__ = [
    "KernelPluginsError", "PluginError", "DeviceError", "UnknownDeviceError", "NoDeviceError", "VariantNameError",
    "NoCompatibleVariantError", "MetadataError", "MissingDependencyError", "KernelsVersionError",
    "KernelImportError", "KernelDependencyError", "SourceError", "RepoIdError", "RevisionError",
    "VersionNotFoundError", "HubError", "OfflineError", "LocalDiskError", "AmbiguousNameError", "IntegrityError",
    "SignatureError", "TrustError", "LockfileError", "LayerError", "ContractError", "FallbackError",
    "BuildConfigError",
]


class KernelPluginsError(Exception):
    """Base class of every error kernel-plugins raises on purpose."""


class PluginError(KernelPluginsError):
    """A backend plugin failed: its import, a hook, or what a hook returned.

    The message names the plugin, its distribution and version, and the original error.
    """


class DeviceError(KernelPluginsError, ValueError):
    """A device string or device request cannot be satisfied."""


class UnknownDeviceError(DeviceError):
    """No installed backend provides the requested device type."""


class NoDeviceError(DeviceError):
    """The backend is installed but no device of that type is present."""


class VariantNameError(KernelPluginsError, ValueError):
    """A build-variant name does not follow any known form."""


class NoCompatibleVariantError(KernelPluginsError):
    """No build variant of a kernel fits the device; the message lists each with its reason."""

    def __init__(self, message: str, *, resolution: object | None = None) -> None:
        super().__init__(message)
        self.resolution = resolution


class MetadataError(KernelPluginsError, ValueError):
    """A ``metadata.json`` file is missing, malformed or invalid."""


class MissingDependencyError(KernelPluginsError, ImportError):
    """A kernel declares a ``python-depends`` package that is not installed."""


class KernelsVersionError(KernelPluginsError, RuntimeError):
    """A kernel needs a newer ``kernels`` format (``kernels-minver``) than this one reads."""


class KernelImportError(KernelPluginsError, ImportError):
    """Importing a kernel variant's Python module failed."""


class KernelDependencyError(KernelPluginsError, RuntimeError):
    """A kernel's ``kernel-depends`` cannot be loaded (the message names the chain from the
    kernel loaded), form a cycle, or ``get_kernel_dep`` was called outside kernel loading."""


class SourceError(KernelPluginsError):
    """A kernel source (local path, LOCAL_KERNELS entry, Hub repo) cannot be used."""


class RepoIdError(SourceError, ValueError):
    """A repository id is malformed."""


class RevisionError(SourceError):
    """A revision (branch, tag, sha) or version request is invalid or does not exist."""


class VersionNotFoundError(RevisionError):
    """The requested kernel version has no ``v<N>`` branch; lists the versions that exist."""


class HubError(SourceError):
    """The Hub could not be reached or answered with an error."""


class OfflineError(HubError):
    """``HF_HUB_OFFLINE=1`` is set and what was asked for is not in the local cache."""


class LocalDiskError(KernelPluginsError):
    """The local disk failed (disk full, read-only cache, permission denied).

    Never a Hub error and never a reason to fall back to a reference kernel: the message
    names the path and the system's error.
    """


class AmbiguousNameError(SourceError, ValueError):
    """A kernel name could mean a local folder and a Hub repository; both spellings are shown."""


class IntegrityError(KernelPluginsError):
    """Files of a variant do not match their pinned hash or metadata digest."""


class SignatureError(IntegrityError):
    """A build's sigstore signature is missing where required, broken, does not verify, or
    names a signer the policy does not allow (see ``docs/signatures.md``)."""


class TrustError(KernelPluginsError, PermissionError):
    """Loading code from an organisation that is not trusted was refused."""


class LockfileError(KernelPluginsError, ValueError):
    """A ``kernels.lock`` file or a project's kernel dependency table is invalid."""


class LayerError(KernelPluginsError):
    """A kernel layer or kernel mapping is invalid, or kernelize found no kernel."""


class ContractError(LayerError):
    """No candidate kernel declares a property the caller requires."""


class FallbackError(KernelPluginsError):
    """A reference fallback was needed but refused (``fallback="error"`` or strict mode)."""


class BuildConfigError(KernelPluginsError, ValueError):
    """A ``build.toml`` file is malformed or invalid."""
