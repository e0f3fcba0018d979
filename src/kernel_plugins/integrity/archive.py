"""The package archive of the ``zip`` build layout (``build/<variant>/<id>.zip``, its
``__init__.py`` at the root, native extensions beside it): one file of the variant, read once
and checked like every other, then opened in memory from those bytes (never read again) by
:func:`archive_view`, which refuses hostile members (see docs/loading.md, "ZIP builds").
"""

from __future__ import annotations

import io
import os
import stat
import zipfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..errors import IntegrityError
from ._hash import hash_bytes
from ._walk import MAX_FILES, is_bytecode
from .digest import _safe_relpath
from .snapshot import SnapshotFile, VariantSnapshot, read_small_file

__all__ = ["archive_view", "read_archive", "MAX_ARCHIVE_BYTES"]

#: A package archive, and all its members unpacked, may hold at most this many bytes.
MAX_ARCHIVE_BYTES = 256 << 20


def read_archive(folder: Path, metadata: Any, link_roots: Sequence[Path]) -> dict[str, bytes]:
    """``{"<id>.zip": its bytes}`` of a ``zip`` layout variant, read with the checks of every
    variant file; else (or missing: the import says so) nothing. :raises IntegrityError: refused."""
    name = f"{metadata.id}.zip" if metadata is not None and metadata.build_layout == "zip" else ""
    if not name or not os.path.lexists(folder / name):
        return {}
    data = read_small_file(folder / name, max_bytes=MAX_ARCHIVE_BYTES, roots=(folder, *link_roots))
    if len(data) > MAX_ARCHIVE_BYTES:
        raise IntegrityError(f"{folder / name}: larger than {MAX_ARCHIVE_BYTES} bytes, the most a kernel archive holds")
    return {name: data}


def archive_view(snapshot: VariantSnapshot, name: str) -> VariantSnapshot:
    """The verified ``snapshot`` with its archive ``name`` replaced by the archive's members.
    :raises IntegrityError: naming the member: a path that leaves the archive, a name given twice
        (a file beside the archive included), a link or encrypted member, too many or too large."""
    where = snapshot.root / name
    held = snapshot.files.get(name)
    if held is None or held.data is None:
        raise IntegrityError(f"{where}: missing; metadata.json says \"build-layout\": \"zip\", so the "
                             "package must be this archive. Rebuild the kernel or fix the layout.")
    files = {rel: f for rel, f in snapshot.files.items() if rel != name}
    total = 0
    try:
        with zipfile.ZipFile(io.BytesIO(held.data)) as archive:
            members = archive.infolist()
            if len(members) > MAX_FILES:
                raise IntegrityError(f"{where}: more than {MAX_FILES} members; not a kernel archive")
            for info in members:
                rel, bad = _safe_relpath(info.filename.rstrip("/") or "/"), ""
                if rel is None:
                    bad = "its path is not a plain relative path (absolute, '..', empty parts or '\\')"
                elif stat.S_ISLNK(info.external_attr >> 16):
                    bad = "it is a link"
                elif info.flag_bits & 1:
                    bad = "it is encrypted"
                elif rel in files:
                    bad = "the name is given twice (in the archive, or as a file beside it)"
                elif (total := total + info.file_size) > MAX_ARCHIVE_BYTES:
                    bad = f"the members unpack to more than {MAX_ARCHIVE_BYTES} bytes"
                if bad or rel is None:
                    raise IntegrityError(f"{where}: member {info.filename!r} is refused: {bad}. "
                                         "Rebuild the kernel with kernel-builder.")
                if info.is_dir() or is_bytecode(rel):
                    continue
                data = archive.read(info)
                files[rel] = SnapshotFile(rel, where / rel, len(data), hash_bytes(data, ("sha256",)), data)
    except IntegrityError:
        raise
    except Exception as e:  # noqa: BLE001 - whatever a malformed archive makes zipfile raise
        raise IntegrityError(f"{where}: not a usable ZIP archive ({e}); rebuild the kernel") from None
    return VariantSnapshot(snapshot.root, files, snapshot.bytecode)
