#!/usr/bin/env bash
# Everything the tests need: the runtime install (scripts/install.sh), the core's test
# extra (pytest, hypothesis, ruff, mypy, hatchling, transformers and the pinned HF kernels
# release...), olah (the loopback Hub server the end-to-end tests use) in its own virtual
# environment, and C and C++ compilers with
# Python's headers (the native-extension safety tests build a C extension, the inductor
# tests compile C++; under CI they fail without them).
# One line per step, with the time since the start and what is being installed.
set -euo pipefail
cd "$(dirname "$0")/.."
step() { echo "[$((SECONDS / 60))m$((SECONDS % 60))s] setup: $*"; }
step "1/4 .venv: torch, the core, the backend plugins and the tool distributions (scripts/install.sh)"
bash scripts/install.sh
# shellcheck disable=SC1091
. .venv/bin/activate
step "2/4 .venv: the test and docs extras (pytest, pytest-xdist, hypothesis, ruff, mypy, mkdocs, transformers and the pinned HF kernels release the differential tests compare against)"
python -m pip install -q --no-compile -e ".[test,docs]"  # no bytecode compiled up front: the
# modules the tests import are compiled on first use (compiling all of transformers costs ~12 s of CPU)
step "3/4 .olah-venv: olah, the loopback Hub server of the end-to-end tests"
bash scripts/install-olah.sh
step "4/4 C and C++ compilers with Python's headers (native-extension and inductor tests)"
headers="$(python -c 'import sysconfig; print(sysconfig.get_paths()["include"])')/Python.h"
if ! command -v cc >/dev/null || ! command -v c++ >/dev/null || [ ! -f "$headers" ]; then
  if command -v apt-get >/dev/null && [ "$(id -u)" = 0 ]; then
    apt-get update -q && apt-get install -y -q gcc g++ python3-dev
  else
    echo "warning: no cc / c++ / $headers: the native-extension and inductor tests will skip" \
      "(and fail under CI); install gcc, g++ and the Python headers" >&2
  fi
fi
