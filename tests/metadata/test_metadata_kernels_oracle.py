"""``metadata.json`` acceptance against the pinned HF ``kernels`` release (``Metadata.from_bytes``,
in this process): on generated documents (every key replaced by good and bad values, removed,
misspelt; the 0.19 keys ``build-layout`` and ``kernels-minver`` included) both accept or both
refuse, and what both accept has the same values.

Where kernel-plugins differs on purpose, the case's disagreement is explained by a difference
listed in docs/differences.md ("metadata.json" section, rows ``metadata-...``); a disagreement
no listed difference explains, or a listed one no case shows, fails.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from kernel_plugins.errors import MetadataError
from kernel_plugins.metadata import KernelMetadata, parse_metadata_bytes

DOCS = Path(__file__).resolve().parents[2] / "docs" / "differences.md"
C40 = "0123456789abcdef" * 2 + "01234567"

VALID: dict[str, Any] = {
    "name": "relu-two", "id": "_relu_two_0a1b2c", "version": 2, "license": "Apache-2.0",
    "upstream": "https://github.com/org/relu", "source": "https://github.com/org/relu",
    "python-depends": ["einops"], "backend": {"type": "cuda", "archs": ["8.0", "9.0a"]},
    "kernel-depends": [{"repo-id": "kernels-community/act", "version": 1},
                       {"repo-id": "kernels-community/norm", "revision": "main"}],
    "digest": {"algorithm": "sha256", "files": {"__init__.py": "AAAA", "sub/x.py": "BBBB"}},
    "provenance": {"kernel-builder": {"version": "0.19.1", "git": {"commit": C40, "dirty": False}},
                   "kernel": {"commit": C40, "dirty": True}},
    "kernels-minver": "0.19.1", "build-layout": "zip",
}

# values tried at every place: (value, the difference that may explain a disagreement there)
ANY: list[object] = [None, True, 0, 1, -1, 2**63, 2**64, 1.0, 1.5, "", "x", "relu", "a" * 65, [], ["x"], [1], {}, {"x": 1}]
AT: dict[str, list[object]] = {
    "name": ["a", "ab", "a-b", "a-", "-a", "A", "relu_two", "relu--two", "1ab", "rélu"],
    "id": ["relu", "_x", "1x", "a.b", "a-b", "class", "__x", "é", "x" * 200, "ok_id"],
    "version": [2**64 - 1, 10**30],
    "upstream": ["git@github.com:a/b.git", "http://x", "file:///x", "a/b", "/abs"],
    "python-depends": [["einops", "einops"], ["not-known-anywhere"], [None]],
    "backend.type": ["cpu", "rocm", "xpu", "metal", "npu", "cann", "neuron", "tpu", "mlu", "CUDA"],
    "backend.archs": [["8.0"], [""], ["8.0", None]],
    "kernel-depends.0.repo-id": ["ab", "a/b/c", "/a", "a/"],
    "kernel-depends.0.revision": ["main", C40],
    "digest.algorithm": ["sha512", "sha1", "SHA256", "blake3"],
    "digest.files": [{"a": "!!"}, {"../a": "AAAA"}, {"a": None}],
    "provenance.kernel-builder.version": ["1"],
    "provenance.kernel-builder.git.commit": ["abc", C40.upper()],
    "provenance.kernel.dirty": [False],
    "kernels-minver": ["0.17.2", "0.20.0", " 0.18.0\t", "+1.0.0", "0.018.0", "0.18", "0.17.2.1", "v0.18.0",
                       "0.18.0-rc1", "18446744073709551616.0.0", "1" * 4400 + ".0.0", "1.0.0\x1c", "\u20001.0.0"],
    "build-layout": ["files", "zip", "ZIP", "Zip", "tar", " zip", "zip\n"],
}


def places(doc: Any, prefix: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """Every place in a document: the keys (list items: indexes) leading to it."""
    items = doc.items() if isinstance(doc, dict) else enumerate(doc) if isinstance(doc, list) else ()
    for key, value in items:
        yield (*prefix, key)
        yield from places(value, (*prefix, key))


def edited(where: tuple[Any, ...], how: Callable[[Any, Any], None]) -> dict[str, Any]:
    """A copy of VALID with ``how(parent, key)`` applied at the place ``where``."""
    doc = copy.deepcopy(VALID)
    parent: Any = doc
    for part in where[:-1]:
        parent = parent[part]
    how(parent, where[-1])
    return doc


Case = tuple[str, dict[str, Any], tuple[Any, ...]]  # (what, document, the place changed)


def cases() -> list[Case]:
    """Generated documents."""
    out: list[Case] = [("valid", copy.deepcopy(VALID), ()),
                       ("minimal", {k: VALID[k] for k in ("name", "id", "version", "license", "python-depends",
                                                          "backend")}, ())]
    for where in places(VALID):
        name = ".".join(map(str, where))
        for value in ANY + AT.get(name, []):
            out.append((f"{name}={value!r:.40}", edited(where, lambda p, k, v=value: p.__setitem__(k, v)), where))
        if isinstance(where[-1], str):
            out.append((f"no {name}", edited(where, lambda p, k: p.pop(k)), where))
            if "_" in (snake := where[-1].replace("-", "_")) and "." not in snake:
                out.append((f"{name} as {snake}", edited(where, lambda p, k, s=snake: p.__setitem__(s, p.pop(k))), where))
        out.append((f"extra key beside {name}", edited(where, lambda p, k: p.__setitem__("zz-extra", 1)
                                                        if isinstance(p, dict) else p.append(p[0])), where))
    return out


def theirs(raw: bytes) -> object:
    """What kernels reads (a tuple of values), or the text of its refusal."""
    from kernels._rust import Metadata

    try:
        m = Metadata.from_bytes(raw)
    except ValueError as e:
        return f"refused: {e}"
    digest = None if m.digest is None else (str(m.digest.algorithm).lower(), dict(m.digest.files))
    return (str(m.name), m.id, m.version, m.license, list(m.python_depends), m.backend.archs or [],
            [d.repo_id for d in m.kernel_depends], digest, None if m.kernels_minver is None else str(m.kernels_minver),
            str(m.build_layout).lower())


def ours(raw: bytes) -> object:
    try:
        m: KernelMetadata = parse_metadata_bytes(raw, where="metadata.json")
    except MetadataError as e:
        return f"refused: {e}"
    digest = None if m.digest is None else (m.digest.algorithm, m.digest.files)
    return (m.name, m.id, m.version, m.license, list(m.python_depends), list(m.backend.archs),
            [d.repo_id for d in m.kernel_depends], digest, m.kernels_minver, m.build_layout)


def at(doc: Any, where: tuple[Any, ...]) -> Any:
    """The value at a place of a document (None when it is not there)."""
    for part in where:
        try:
            doc = doc[part]
        except (KeyError, IndexError, TypeError):
            return None
    return doc


def explained(what: str, doc: dict[str, Any], where: tuple[Any, ...], k_ok: bool, o_ok: bool) -> str | None:
    """The listed difference that explains a disagreement, in the one direction it goes."""
    key = ".".join(map(str, where))
    if k_ok and not o_ok:  # kernels accepts, kernel-plugins refuses
        if key in ("id", "backend.type") or re.fullmatch(r"kernel-depends\.[0-9]+\.repo-id", key):
            return {"id": "metadata-id", "backend.type": "metadata-backend-type"}.get(key, "metadata-repo-id")
        if isinstance(at(doc, where), list) and isinstance(at(VALID, where), dict):
            return "metadata-object-as-array"
    if not k_ok and o_ok and key in ("upstream", "source"):  # kernels refuses, kernel-plugins accepts
        return "metadata-git-url"
    return None


def archs_only(doc: dict[str, Any], k: Any, o: Any) -> str | None:
    """Both accept, and only ``backend.archs`` differs: kernels keeps it for cuda and rocm only."""
    same = k[:5] + k[6:] == o[:5] + o[6:] and k[5] == [] != o[5]
    return "metadata-archs-kept" if same and doc["backend"]["type"] not in ("cuda", "rocm") else None


def listed_differences() -> set[str]:
    """The ids of the ``metadata.json`` rows of docs/differences.md (``| metadata-... |``)."""
    return set(re.findall(r"^\|\s*`?(metadata-[a-z0-9-]+)`?\s*\|", DOCS.read_text(encoding="utf-8"), re.M))


def test_metadata_acceptance_agrees_with_the_pinned_kernels_release() -> None:
    pytest.importorskip("kernels._rust", reason="the pinned kernels release is not installed (pip install -e '.[test]')")
    all_cases = cases()
    assert len(all_cases) > 600
    wrong, shown, agreed = [], set(), 0
    for what, doc, where in all_cases:
        raw = json.dumps(doc).encode()
        k, o = theirs(raw), ours(raw)
        k_ok, o_ok = not isinstance(k, str), not isinstance(o, str)
        if k_ok == o_ok and (not k_ok or k == o):  # both refuse (each in its own words), or the same values
            agreed += 1
            continue
        diff = explained(what, doc, where, k_ok, o_ok) if k_ok != o_ok else archs_only(doc, k, o)
        if diff is None:
            wrong.append(f"{what}: kernels {str(k)[:150]!r}; kernel-plugins {str(o)[:150]!r}")
        else:
            shown.add(diff)
    assert not wrong, f"{len(wrong)} unexplained:\n" + "\n".join(wrong)
    assert agreed > 500
    assert shown == listed_differences(), "docs/differences.md's metadata.json rows and the differences shown differ"
