#!/usr/bin/env bash
# Install everything from scratch (scripts/setup.sh) and run the whole test suite:
# the core's tests and every plugin's tests.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
# shellcheck disable=SC1091
. .venv/bin/activate
ruff check src plugins tests benchmarks
mypy
python -m pytest tests plugins/*/tests "$@"
