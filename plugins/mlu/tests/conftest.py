"""Test set-up of the mlu plugin: its helper modules (mlu_kernel_repos, mlu_scenario).

They are imported by name; with ``--import-mode=importlib`` pytest does not put this
folder on ``sys.path`` itself, so it is added here.
"""

from __future__ import annotations

import sys
from pathlib import Path

_HERE = str(Path(__file__).resolve().parent)
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)
