#!/usr/bin/env bash
# Everything the tests need: the runtime install (scripts/install.sh), the core's test
# extra (pytest, hypothesis, ruff, mypy, hatchling...) and olah (the loopback Hub server
# the end-to-end tests use) in its own virtual environment.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install.sh
# shellcheck disable=SC1091
. .venv/bin/activate
python -m pip install -q -e ".[test]"
bash scripts/install-olah.sh
