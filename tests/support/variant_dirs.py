"""Small builders for the loading tests."""

from __future__ import annotations

import base64
import hashlib
import itertools
import json
from pathlib import Path

from tests.support import inputs

_ids = itertools.count()


def unique_id(stem: str = "ld") -> str:
    """A kernel id no other test uses."""
    return f"_{stem}_{next(_ids)}_{hashlib.sha1(stem.encode()).hexdigest()[:6]}"


def metadata(kernel_id: str, **extra: object) -> dict[str, object]:
    """A valid metadata.json for a cpu variant (``extra`` replaces keys, kebab-case)."""
    return inputs.metadata(**{"name": "loadtest", "id": kernel_id, **extra})


def digest_of(files: dict[str, bytes]) -> dict[str, object]:
    """A sha256 metadata digest of ``files``."""
    return {
        "algorithm": "sha256",
        "files": {k: base64.b64encode(hashlib.sha256(v).digest()).decode() for k, v in files.items()},
    }


def write_variant(
    repo: Path, files: dict[str, str | bytes], *, kernel_id: str | None = None,
    variant: str = "torch-cpu", digest: bool = False, **meta: object,
) -> Path:
    """Write ``repo/build/<variant>/`` with ``files`` and a metadata.json; return the folder."""
    folder = repo / "build" / variant
    folder.mkdir(parents=True, exist_ok=True)
    raw = {k: v.encode() if isinstance(v, str) else v for k, v in files.items()}
    for rel, content in raw.items():
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        (folder / rel).write_bytes(content)
    extra = dict(meta)
    if digest:
        extra["digest"] = digest_of(raw)
    (folder / "metadata.json").write_text(json.dumps(metadata(kernel_id or unique_id(), **extra)))
    return folder
