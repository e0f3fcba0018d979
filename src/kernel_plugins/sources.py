"""What a kernel name means: the one source decision, :func:`find`.

Every entry point (``load``, kernelize mappings, and the commands ``variants``, ``load``,
``check``, ``download``, ``verify`` and ``benchmark``) turns what the user typed into a
:class:`KernelSource` here, so they can never disagree about what a name means.

How a name is read (:func:`parse_name`):

- a :class:`~pathlib.Path`, or a string starting with ``/``, ``.`` or ``~``, or holding a
  backslash or more than one ``/``: a local folder;
- ``hub:org/name`` or ``hub:name``: explicitly a Hub repository;
- ``org/name``, or a short name (``activation`` means ``<default org>/activation``): a Hub
  repository, unless a folder of that name exists relative to the working directory, in
  which case the name is **ambiguous** and refused with both spellings (``./org/name`` for
  the folder, ``hub:org/name`` for the Hub). A name that is not a valid repository id but
  names an existing folder is that folder.

Where a Hub repository id is served from (:func:`find`), in order: a ``LOCAL_KERNELS``
override; a kernel repository a backend plugin ships (``locate_kernel``; not when
``revision`` or ``lockfile`` pin a Hub commit; a folder outside the plugin's own files is
loaded like a ``LOCAL_KERNELS`` path, to which signatures apply); else the Hub. The bundled reference
kernels are a fallback decided by the loader, never a first choice.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from ._record import record, replace
from .errors import AmbiguousNameError, RepoIdError, SourceError

if TYPE_CHECKING:
    from .device import DeviceInfo
    from .lock import Lockfile

__all__ = ["DEFAULT_ORG", "HUB_PREFIX", "SourceKind", "Name", "KernelSource", "LocalVariants",
           "default_org", "parse_name", "find", "hub_source", "parse_local_kernels",
           "local_variants"]

log = logging.getLogger("kernel_plugins")

DEFAULT_ORG = "kernels-community"
#: Prefix that makes a name explicitly a Hub repository.
HUB_PREFIX = "hub:"

SourceKind = Literal["local", "local-kernels", "plugin", "hub", "reference"]


def default_org() -> str:
    """``KERNEL_PLUGINS_DEFAULT_ORG`` or ``kernels-community``."""
    return os.environ.get("KERNEL_PLUGINS_DEFAULT_ORG", "").strip() or DEFAULT_ORG


@record
class Name:
    """What a name means before any source is consulted: a folder or a Hub repository id.

    Attributes: path (a resolved existing folder) or repo_id (``org/name``), and
    short_name (the kernel's name, e.g. ``activation``).
    """

    path: Path | None
    repo_id: str | None
    short_name: str


@record
class KernelSource:
    """Where a kernel lives, decided once (see :func:`find`).

    Attributes:
        kind: ``local`` (a folder the user named), ``local-kernels`` (a ``LOCAL_KERNELS``
            override), ``plugin`` (shipped by a backend plugin), ``hub`` or ``reference``.
        label: how messages and provenance name it (the repo id, or the folder).
        repo_id: ``org/name`` when the name was a repository id, else None.
        path: the local folder for every kind but ``hub``.
        short_name: the kernel's name (for reference fallbacks).
        revision, version, lockfile: the Hub pins asked for (the lock file read; with it,
            version or revision choose among its entries for the repository).
        repo_type: ``kernel``/``model`` or None (``kernel``).
        notes: why other sources were not used (e.g. a pin skipped a plugin's copy).
    """

    kind: SourceKind
    label: str
    repo_id: str | None
    path: Path | None
    short_name: str
    revision: str | None = None
    version: int | None = None
    lockfile: Lockfile | None = None
    repo_type: str | None = None
    notes: tuple[str, ...] = ()

    @property
    def exact_pin(self) -> bool:
        """Whether a revision or a lock file pins exact code (no reference may stand in)."""
        return self.revision is not None or self.lockfile is not None

    def describe(self) -> str:
        """``hub kernels-community/activation``, ``local /path``, for lists of sources."""
        if self.kind == "hub" or self.path is None or self.label == str(self.path):
            return f"{self.kind} {self.label}"
        return f"{self.kind} {self.label} ({self.path})"


def hub_source(repo_id: str, *, revision: str | None = None, version: int | None = None,
               lockfile: Lockfile | None = None, repo_type: str | None = None,
               notes: tuple[str, ...] = ()) -> KernelSource:
    """The Hub source of the repository id ``repo_id``, with its pins (no
    ``LOCAL_KERNELS`` override or plugin copy is considered: see :func:`find`)."""
    short = repo_id.rpartition("/")[2]
    return KernelSource("hub", repo_id, repo_id, None, short, revision, version, lockfile, repo_type, notes)


def _folder(path: Path) -> Path:
    p = path.expanduser()
    try:
        if not p.exists():
            raise SourceError(f"local kernel path {p} does not exist")
        if not p.is_dir():
            raise SourceError(f"local kernel path {p} is not a folder")
        return p.resolve()
    except OSError as e:  # ENAMETOOLONG and friends
        raise SourceError(f"local kernel path {str(p)[:200]!r} cannot be used: {e.strerror}") from None


def _existing_folder(text: str) -> Path | None:
    try:
        p = Path(text)
        return p if p.is_dir() else None
    except (OSError, ValueError):
        return None


def _repo_id_of_url(url: str) -> str:
    """``https://huggingface.co/org/name`` (a pasted Hub address) -> ``org/name``.

    :raises RepoIdError: another site, or an address of one revision or file (its
        revision must be asked for explicitly).
    """
    from urllib.parse import urlsplit

    from .hub import hub_endpoint

    parts = urlsplit(url)
    hosts = {"huggingface.co", "hf.co", urlsplit(hub_endpoint(None)).netloc.lower()}
    segments = [s for s in parts.path.split("/") if s]
    if parts.netloc.lower() not in hosts or len(segments) < 2:
        raise RepoIdError(f"{url!r} is not the address of a Hub repository: pass a repository id 'org/name' "
                          "(the Hub at huggingface.co or HF_ENDPOINT), a short name or a local folder")
    repo_id = "/".join(segments[:2])
    if len(segments) > 2:
        rev = f" with revision={segments[3]!r}" if segments[2] in ("tree", "blob") and len(segments) > 3 else ""
        raise RepoIdError(f"{url!r} is the address of a page inside the Hub repository {repo_id!r}: pass "
                          f"{repo_id!r}{rev} instead")
    return repo_id


def parse_name(name: object) -> Name:
    """Read what a user passed as a kernel name (see the module docs).

    :raises SourceError: empty name, a missing folder, or not a string or Path.
    :raises AmbiguousNameError: a repository id that also names a folder here.
    :raises RepoIdError: neither a valid repository id nor an existing folder.
    """
    from .hub import validate_repo_id

    if isinstance(name, os.PathLike) and not isinstance(name, str):
        p = _folder(Path(os.fspath(name)))
        return Name(p, None, p.name)
    if not isinstance(name, str):
        raise SourceError(f"kernel name must be a string or a Path, got {type(name).__name__}")
    text = name.strip()
    if not text:
        raise SourceError("kernel name is empty: pass 'org/name', a short name or a local path")
    explicit = text.startswith(HUB_PREFIX)
    if explicit:
        text = text[len(HUB_PREFIX):].strip()
    elif text.lower().startswith(("https://", "http://")):
        text, explicit = _repo_id_of_url(text), True
    elif text.startswith(("/", ".", "~")) or "\\" in text or text.count("/") > 1:  # a path's spelling
        p = _folder(Path(text))
        return Name(p, None, p.name)
    repo_id = text if "/" in text else f"{default_org()}/{text}"
    folder = None if explicit else _existing_folder(text)
    try:
        validate_repo_id(repo_id)
    except RepoIdError as e:
        if folder is not None:
            p = folder.resolve()
            return Name(p, None, p.name)
        if not explicit:
            e.args = (f"{e.args[0]} (no local folder named {text!r} exists either)",)
        raise
    if folder is not None:
        raise AmbiguousNameError(f"{text!r} is ambiguous: it is a Hub repository id ({repo_id}) and also a folder "
                                 f"here ({folder.resolve()}). Write './{text}' for the folder or "
                                 f"'{HUB_PREFIX}{text}' for the Hub repository (in Python, a pathlib.Path is always "
                                 "a folder).")
    return Name(None, repo_id, repo_id.split("/", 1)[1])


def find(name: object, *, device: DeviceInfo | None = None, revision: str | None = None,
         version: int | None = None, lockfile: str | os.PathLike[str] | None = None,
         repo_type: str | None = None) -> KernelSource:
    """Decide where the kernel ``name`` lives (see the module docs for the order).

    :param device: the device the kernel is for (plugins may ship kernels per device);
        None skips plugin-shipped kernels.
    :param revision, version, lockfile: Hub pins; given with a local folder they are an
        error, since a folder has no revisions.
    :raises SourceError: see :func:`parse_name`; pins given for a local folder; a
        malformed ``LOCAL_KERNELS``.
    """
    parsed = parse_name(name)
    pins = {"revision": revision, "version": version, "lockfile": lockfile}
    pinned = ", ".join(f"{k}={str(v) if k == 'lockfile' else v!r}" for k, v in pins.items() if v is not None)
    if parsed.path is not None:
        if pinned:
            raise SourceError(f"{parsed.path} is a local folder: {pinned} only applies to Hub repositories; "
                              "drop it, or load the repository by its id 'org/name'")
        return KernelSource("local", str(parsed.path), None, parsed.path, parsed.short_name)
    repo_id = parsed.repo_id
    assert repo_id is not None
    lock: Lockfile | None = None
    if lockfile is not None:  # the lock package is imported only for a lock
        from .lock import Lockfile, read_lockfile

        lock = lockfile if isinstance(lockfile, Lockfile) else read_lockfile(lockfile)
    hub = hub_source(repo_id, revision=revision, version=version, lockfile=lock, repo_type=repo_type)
    override = parse_local_kernels().get(repo_id)
    if override is not None:
        if pinned:
            log.info("LOCAL_KERNELS overrides %s with %s; %s is not used", repo_id, override, pinned)
        return KernelSource("local-kernels", repo_id, repo_id, override, parsed.short_name)
    from .plugins import get_manager

    found = None if device is None else get_manager().locate_kernel(repo_id, device)
    if found is None:
        return hub
    shipped, who, own = found
    if hub.exact_pin:
        why = "revision" if revision is not None else "lockfile"
        note = f"a copy shipped by a backend plugin ({shipped}) was not used: {why}= pins a Hub commit"
        return replace(hub, notes=(note,))
    if own:
        return KernelSource("plugin", repo_id, repo_id, shipped, parsed.short_name,
                            notes=(f"shipped in the files of {who}: trusted as installed, signatures not checked",))
    note = f"{who} answered {shipped}, outside its own files: loaded like a LOCAL_KERNELS path (signatures apply)"
    return KernelSource("local-kernels", repo_id, repo_id, shipped, parsed.short_name, notes=(note,))


def parse_local_kernels(value: str | None = None) -> dict[str, Path]:
    """Parse ``LOCAL_KERNELS``: ``org/name=/path`` entries separated by ``os.pathsep``.

    Raises :class:`SourceError` naming a malformed entry.
    """
    from .hub import validate_repo_id

    raw = os.environ.get("LOCAL_KERNELS", "") if value is None else value
    out: dict[str, Path] = {}
    for entry in raw.split(os.pathsep):
        entry = entry.strip()
        if not entry:
            continue
        repo, sep, path = entry.partition("=")
        if not sep or not repo.strip() or not path.strip():
            raise SourceError(f"LOCAL_KERNELS entry {entry!r} is malformed: expected 'org/name=/path' (entries "
                              f"separated by {os.pathsep!r})")
        try:
            repo_id = validate_repo_id(repo.strip())
        except SourceError as e:
            raise SourceError(f"LOCAL_KERNELS entry {entry!r}: {e}") from None
        out[repo_id] = Path(path.strip()).expanduser()
    return out


@record
class LocalVariants:
    """The variants a local folder offers: name -> variant folder."""

    root: Path
    variants: dict[str, Path]
    layout: str  # "repo" (has build/), "variants" (folder of variants), "variant" (one)


def local_variants(root: Path) -> LocalVariants:
    """List the variant folders under a local kernel path.

    Accepts a repository folder with ``build/``, a folder of variant folders, or one
    variant folder (it holds ``metadata.json``). A variant folder that is a link is
    refused (its files would come from elsewhere).
    """
    try:
        root = root.resolve(strict=True)
    except (OSError, RuntimeError) as e:
        raise SourceError(f"local kernel path {root} cannot be used: {e}") from None
    if not root.is_dir():
        raise SourceError(f"local kernel path {root} is not a folder")
    if (root / "metadata.json").is_file():
        return LocalVariants(root, {root.name: root}, "variant")
    build = root / "build"
    if build.is_symlink():
        raise SourceError(f"{build} is a link (to {build.resolve()}); refusing to load code from there. "
                          "Replace the link with the folder itself.")
    base, layout = (build, "repo") if build.is_dir() else (root, "variants")
    variants: dict[str, Path] = {}
    # scandir tells a link or a folder without a stat (closed once it is read to the end)
    for entry in sorted(os.scandir(base), key=lambda e: e.name) if base.is_dir() else []:
        if entry.name.startswith((".", "__")):
            continue
        child = base / entry.name
        if entry.is_symlink():
            target = child.resolve()
            where = "outside" if root not in target.parents else "elsewhere in"
            raise SourceError(f"variant folder {child} is a link that points {where} {root} (to {target}); "
                              "refusing to load code from there. Replace the link with the folder itself.")
        if entry.is_dir(follow_symlinks=False) and (layout == "repo" or (child / "metadata.json").is_file()):
            variants[child.name] = child
    if not variants:
        raise SourceError(f"{root} holds no build variants: expected build/<variant>/metadata.json, "
                          "<variant>/metadata.json or a single variant folder with metadata.json")
    return LocalVariants(root, variants, layout)
