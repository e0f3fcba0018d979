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
# no bytecode compiled at install (PIP_COMPILE=0 is --no-compile for every pip run below): each module is
# compiled on its first import (scripts/test.sh lets Python cache it), compiling all of torch and
# transformers up front costs ~40 s of CPU
export PIP_COMPILE=0
# uv (from PyPI, into .venv) installs what comes after torch with about a fifth of pip's CPU
# time; without it (no package index reachable for it), pip installs the same
step "1/3 .venv: torch, the core, the backend plugins, the tool distributions (scripts/install.sh) and the test and docs extras (pytest, pytest-xdist, hypothesis, ruff, mypy, mkdocs, transformers and the pinned HF kernels release the differential tests compare against)"
[ -x .venv/bin/python ] || "${PYTHON:-python3}" -m venv .venv
if .venv/bin/python -m pip install -q uv; then
  export KP_UV="$PWD/.venv/bin/uv"
else
  echo "setup: uv could not be installed: pip installs everything (slower, the same packages)" >&2
fi
KP_CORE_EXTRAS=test,docs bash scripts/install.sh
# shellcheck disable=SC1091
. .venv/bin/activate
step "2/3 .olah-venv: olah, the loopback Hub server of the end-to-end tests"
bash scripts/install-olah.sh
step "3/3 C and C++ compilers with Python's headers (native-extension and inductor tests)"
headers="$(python -c 'import sysconfig; print(sysconfig.get_paths()["include"])')/Python.h"
if ! command -v cc >/dev/null || ! command -v c++ >/dev/null || [ ! -f "$headers" ]; then
  if command -v apt-get >/dev/null && [ "$(id -u)" = 0 ]; then
    apt-get update -q && apt-get install -y -q gcc g++ python3-dev
  else
    echo "warning: no cc / c++ / $headers: the native-extension and inductor tests will skip" \
      "(and fail under CI); install gcc, g++ and the Python headers" >&2
  fi
fi
