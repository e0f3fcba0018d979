"""Files of another user, for the tests of the rule that such files are never trusted.

Giving a file away needs root; elsewhere the test is skipped, except under CI (``CI`` set),
where a skipped safety test fails instead.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

#: The user id the planted files get (no account needs to exist for it).
OTHER_UID = 4321


def give_to_another_user(*paths: Path) -> None:
    """Make each of ``paths`` (itself, not a link's target) another user's (none: only check
    that this process may)."""
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        message = "planting a file of another user needs root"
        if os.environ.get("CI"):
            pytest.fail(f"CI is set, so this safety test must not be skipped: {message}", pytrace=False)
        pytest.skip(message)
    for path in paths:
        os.lchown(path, OTHER_UID, OTHER_UID)
