#!/usr/bin/env bash
# Everything the tests need: the runtime install (scripts/install.sh), the core's test
# extra (pytest, hypothesis, ruff, mypy, hatchling...), olah (the loopback Hub server
# the end-to-end tests use) in its own virtual environment, and C and C++ compilers with
# Python's headers (the native-extension safety tests build a C extension, the inductor
# tests compile C++; under CI they fail without them).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install.sh
# shellcheck disable=SC1091
. .venv/bin/activate
python -m pip install -q -e ".[test,docs]"
bash scripts/install-olah.sh
headers="$(python -c 'import sysconfig; print(sysconfig.get_paths()["include"])')/Python.h"
if ! command -v cc >/dev/null || ! command -v c++ >/dev/null || [ ! -f "$headers" ]; then
  if command -v apt-get >/dev/null && [ "$(id -u)" = 0 ]; then
    apt-get update -q && apt-get install -y -q gcc g++ python3-dev
  else
    echo "warning: no cc / c++ / $headers: the native-extension and inductor tests will skip" \
      "(and fail under CI); install gcc, g++ and the Python headers" >&2
  fi
fi
