#!/usr/bin/env bash
# Create .venv and install everything: torch (CPU wheel), the core with its test
# extras, every backend plugin under plugins/, and olah (the loopback Hub server
# the end-to-end tests use) in its own virtual environment.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PYTHON" -m venv .venv
fi
# shellcheck disable=SC1091
. .venv/bin/activate
python -m pip install -q --upgrade pip
# torch first, pinned: an unpinned torch requirement would pull a multi-GB CUDA build.
python -m pip install -q torch==2.13.0
python -m pip install -q -e ".[test]"
for plugin in plugins/*/; do
  if [ -f "$plugin/pyproject.toml" ]; then
    python -m pip install -q -e "$plugin"
  fi
done
bash scripts/install-olah.sh
