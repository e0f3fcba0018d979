"""Metadata digests as kernels computes them (the pinned release's own hasher)."""

from __future__ import annotations

from pathlib import Path


def kernels_digest(folder: Path, algorithm: str = "sha256") -> dict[str, str]:
    """Relative path -> base64 hash of every file of a variant folder that a ``metadata.json``
    digest covers, as HF kernels' ``Digest.hash_variant`` writes it (kernel-builder's digests)."""
    from kernels._rust import Digest, DigestAlgorithm

    return dict(Digest.hash_variant(getattr(DigestAlgorithm, algorithm.upper()), folder).files)
