"""``kernels.lock`` parsing against the pinned HF ``kernels`` release (``KernelLocks.from_json``,
in this process): on generated valid and invalid lock files both accept or both refuse, and
what both accept pins the same repositories, versions or revisions, and commits.

Where kernel-plugins refuses on purpose what kernels accepts (or reads more), the case is
tagged with a difference listed in docs/differences.md ("kernels.lock" section); a tag not
listed there, or a listed one no case shows, fails.
"""

from __future__ import annotations

import json
import random
import re
from pathlib import Path
from typing import Any

import pytest

from kernel_plugins.errors import LockfileError
from kernel_plugins.jsonfile import JSONFileError, parse_json
from kernel_plugins.lock import parse_lock

DOCS = Path(__file__).resolve().parents[2] / "docs" / "differences.md"
C40, C64 = "0123456789abcdef" * 2 + "01234567", "fedcba9876543210" * 4

Case = tuple[str, str, str | None]  # (what, JSON text, intended difference or None)


def entry(repo: object = "kernels-community/activation", commit: object = C40, **spec: object) -> dict[str, Any]:
    return {"dependency": {"repo-id": repo, **(spec or {"version": 1})}, "lock": {"commit": commit}}


def _values() -> list[tuple[str, dict[str, Any] | list[Any] | object, str | None]]:
    """One-entry mutations of a valid lock: (what, the lock, intended difference)."""
    out: list[tuple[str, Any, str | None]] = []
    commits = [C40, C64, C40.upper(), C64.upper(), "aB" * 20, C40[:-1], C40 + "0", C64[:-1], C64 + "0",
               "g" * 40, "", " " + C40, C40 + "\n", 5, None, [C40], "a" * 50]
    out += [(f"commit {c!r}", [entry(commit=c)], None) for c in commits]
    versions = [0, 1, 7, 2**63, 2**64 - 1, 2**64, -1, 1.0, 1.5, True, "1", None, [1]]
    out += [(f"version {v!r}", [entry(version=v)], None) for v in versions]
    revisions = ["main", "", "v1", "refs/pr/1", "ü", C40, 5, None, False]
    out += [(f"revision {r!r}", [entry(revision=r)], None) for r in revisions]
    out += [("version and revision", [entry(version=1, revision="main")], None),
            ("neither", [{"dependency": {"repo-id": "a/b"}, "lock": {"commit": C40}}], None)]
    for where in ("", "dependency", "lock"):
        e = entry()
        (e[where] if where else e)["extra"] = 1
        out.append((f"extra key in {where or 'entry'}", [e], None))
    for key, obj in (("dependency", None), ("lock", None), ("repo-id", "dependency"), ("commit", "lock"),
                     ("version", "dependency")):
        e = entry()
        del (e[obj] if obj else e)[key]
        out.append((f"no {key}", [e], None))
    for bad in ([], "x", None, 1):
        out += [(f"dependency {bad!r}", [{"dependency": bad, "lock": {"commit": C40}}], None),
                (f"lock {bad!r}", [{"dependency": {"repo-id": "a/b", "version": 1}, "lock": bad}], None),
                (f"entry {bad!r}", [bad], None)]
    out += [(f"top level {t!r}", t, None) for t in ({}, "x", 1, None, [], {"dependency": {}})]
    out += [("one dependency twice", [entry(), entry()], None),
            ("one dependency, two commits", [entry(), entry(commit=C64)], None),
            ("two versions of a repository", [entry(), entry(version=2, commit=C64)], None),
            ("version 1 and revision v1", [entry(), entry(revision="v1")], None),
            ("two repositories, one commit", [entry(), entry("acme/x")], None),
            ("a revision and the same revision", [entry(revision="main"), entry(revision="main", commit=C64)], None)]
    for repo in ("a/b", "Org-1/name.x_y", "kernels-community/activation"):
        out.append((f"repo-id {repo!r}", [entry(repo)], None))
    for repo in ("ab", "a/b/c", "", "a/../b", "a//b", "/a", "a/b.git", "-a/b", "a/b ", "a b/c", 5):
        out.append((f"repo-id {repo!r}", [entry(repo)], None if isinstance(repo, int) else "lock-repo-id"))
    earlier = {"repo_id": "a/b", "sha": C40, "variants": {}}
    out += [("the earlier format", [earlier], "lock-earlier-format"),
            ("earlier format after kernels'", [entry(), earlier], None),
            ("kernels' format after the earlier", [earlier, entry()], None)]
    return out


def cases() -> list[Case]:
    """Every mutation above, generated combinations of them, and JSON-level cases."""
    out: list[Case] = [(what, json.dumps(lock), diff) for what, lock, diff in _values()]
    valid = [entry(f"org{i}/k{i}", C40 if i % 2 else C64, **({"version": i} if i % 3 else {"revision": f"r{i}"}))
             for i in range(6)]
    singles = [(w, lock[0], d) for w, lock, d in _values() if isinstance(lock, list) and len(lock) == 1]
    rng = random.Random(1933)
    for n in range(200):  # a valid lock with up to two entries replaced by mutated ones
        lock, diffs, whats = list(rng.sample(valid, rng.randint(1, 5))), set(), []
        for _ in range(rng.choice((0, 1, 1, 2))):
            what, bad, diff = rng.choice(singles)
            lock.insert(rng.randint(0, len(lock)), bad)
            whats.append(what)
            diffs.add(diff)
        diffs.discard(None)
        # an earlier-format entry is read as such only first; elsewhere both refuse it
        if "lock-earlier-format" in diffs and "repo_id" not in lock[0]:
            diffs.discard("lock-earlier-format")
        out.append((f"generated {n}: {', '.join(whats) or 'valid'}", json.dumps(lock),
                    diffs.pop() if len(diffs) == 1 else None if not diffs else "skip"))
    text = json.dumps([entry()])
    out += [("duplicate key in lock", text.replace('"commit"', f'"commit": "{C64}", "commit"'), None),
            ("duplicate key in dependency", text.replace('"version": 1', '"version": 1, "version": 2'), None),
            ("duplicate key in entry", text[:-2] + ', "lock": {"commit": "' + C40 + '"}}]', None),
            ("trailing comma", text[:-1] + ",]", None),
            ("NaN version", text.replace('"version": 1', '"version": NaN'), None),
            ("version of 5,000 digits", text.replace('"version": 1', '"version": ' + "9" * 5000), None),
            ("not JSON", "[{", None), ("empty text", "", None), ("BOM", "\ufeff" + text, None)]
    return [c for c in out if c[2] != "skip"]


def theirs(text: str) -> Any:
    """kernels' reading: the pins, or the error."""
    from kernels._rust import KernelLocks

    try:
        locks = KernelLocks.from_json(text)
    except ValueError as e:
        return f"refused: {e}"
    pins = []
    for dep, lock in locks.items():
        spec = dep.version
        spec = ("version", spec.version) if hasattr(spec, "version") else ("revision", spec.revision)
        pins.append((dep.repo_id, spec, str(lock.commit)))
    return sorted(pins)


def ours(text: str) -> Any:
    try:
        locks = parse_lock(parse_json(text.encode("utf-8"), where="kernels.lock", max_bytes=1 << 20))
    except (LockfileError, JSONFileError) as e:
        return f"refused: {e}"
    return sorted((e.repo_id, ("version", e.version) if e.version is not None else ("revision", e.revision), e.sha)
                  for e in locks if e.spec)  # the earlier format pins no version (a listed difference)


def listed_differences() -> set[str]:
    """The ids of the ``kernels.lock`` rows of docs/differences.md (``| lock-... |``)."""
    return set(re.findall(r"^\|\s*`?(lock-[a-z0-9-]+)`?\s*\|", DOCS.read_text(encoding="utf-8"), re.M))


def test_kernels_lock_parsing_agrees_with_the_pinned_kernels_release() -> None:
    pytest.importorskip("kernels._rust", reason="the pinned kernels release is not installed (pip install -e '.[test]')")
    all_cases = cases()
    assert len(all_cases) > 280
    wrong, shown = [], set()
    for what, text, diff in all_cases:
        k, o = theirs(text), ours(text)
        k_ok, o_ok = not isinstance(k, str), not isinstance(o, str)
        if k_ok == o_ok and (not k_ok or k == o):  # both refuse (each with its own words), or the same pins
            continue
        # the listed differences, each in its one direction: kernels takes any string as a
        # repository id, we refuse what is no Hub id; kernels refuses the earlier format, we read it
        if (diff, k_ok, o_ok) in (("lock-repo-id", True, False), ("lock-earlier-format", False, True)):
            shown.add(diff)
        else:
            wrong.append(f"{what} ({diff or 'no listed difference'}): kernels {k!r}; kernel-plugins {o!r}")
    assert not wrong, "\n".join(wrong)
    assert shown == listed_differences(), "docs/differences.md's kernels.lock rows and the differences shown differ"


def test_refusals_name_the_entry_and_key() -> None:
    """Where both refuse, ours says which entry and which key (kernels names a column)."""
    for text, says in ((json.dumps([entry(), entry(commit="x" * 40)]), "entry 1 (kernels-community/activation): key 'lock.commit'"),
                       (json.dumps([entry(version=-1)]), "key 'dependency.version' must be a kernel version"),
                       (json.dumps([entry(), entry()]), "listed twice"),
                       (json.dumps([entry()]).replace('"version": 1', '"version": 1, "version": 1'), "'version' appears twice")):
        result = ours(text)
        assert isinstance(result, str) and says in result, (says, result)
        assert isinstance(theirs(text), str)
