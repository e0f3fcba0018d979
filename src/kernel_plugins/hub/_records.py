"""Records of verified variants, kept beside huggingface_hub's cache of a repository.

After a cached variant first passes its check, the hashes of its files are written to ``<repo
cache>/kernel-plugins/<sha>/<variant>.json``. Later checks compare with that record when no file listing of the
commit is cached, so a file that disappears or changes is named precisely instead of being quietly fetched again.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from pathlib import Path

from kernel_plugins.errors import KernelPluginsError
from kernel_plugins.integrity.varianthash import FileHash
from kernel_plugins.jsonfile import write_atomic

from ._cache import read_private, storage_folder
from ._values import HubRef

logger = logging.getLogger("kernel_plugins")

#: Records larger than this are ignored.
MAX_RECORD_BYTES = 16 << 20


def record_path(ref: HubRef, variant: str) -> Path:
    """Where the record of ``variant`` at ``ref.sha`` lives."""
    return storage_folder(ref.repo_id, ref.repo_type) / "kernel-plugins" / ref.sha / f"{variant}.json"


def read_record(ref: HubRef, variant: str) -> dict[str, FileHash] | None:
    """The files recorded when the variant was last verified, or None (none, or unusable)."""
    from kernel_plugins.jsonfile import JSONFileError, parse_json

    path = record_path(ref, variant)
    try:
        data = parse_json(read_private(path, MAX_RECORD_BYTES), where=str(path), max_bytes=MAX_RECORD_BYTES)
        files = {str(rel): FileHash(item["kind"], item["hex"], item.get("size"))
                 for rel, item in data["files"].items()}  # type: ignore[index]
    except FileNotFoundError:
        return None
    except (OSError, JSONFileError, KeyError, TypeError, AttributeError) as exc:
        if isinstance(exc, KernelPluginsError):  # refused: not trusted, never ignored
            raise
        logger.warning("Ignoring the record of verified files %s: %s", path, exc)
        return None
    if any(fh.kind not in ("git", "lfs") or not isinstance(fh.hex, str) for fh in files.values()):
        return None
    return files


def write_record(ref: HubRef, variant: str, variant_hash: str, files: Mapping[str, FileHash]) -> None:
    """Record a verified variant's files (atomically; best effort, a failure is logged)."""
    path = record_path(ref, variant)
    data = {"repo_id": ref.repo_id, "sha": ref.sha, "variant": variant, "hash": variant_hash,
            "files": {rel: {"kind": fh.kind, "hex": fh.hex, "size": fh.size} for rel, fh in sorted(files.items())}}
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(path, json.dumps(data, indent=1))
    except OSError as exc:
        logger.debug("Could not record the verified files of %s %s: %s", ref, variant, exc)
