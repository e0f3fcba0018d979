#!/usr/bin/env bash
# Install everything from scratch (scripts/setup.sh) and run the whole test suite:
# the core's tests and every plugin's tests. KP_SKIP_SETUP=1 reuses the installed .venv
# (to rerun the tests after a change; ignored where CI is set: CI installs from scratch). Arguments go to
# pytest: KP_SKIP_SETUP=1 bash scripts/test.sh -x -k cli
set -euo pipefail
cd "$(dirname "$0")/.."
step() { echo "[$((SECONDS / 60))m$((SECONDS % 60))s] $*"; }  # one line per step, timed
# no pip run here compiles bytecode up front (pip's --no-compile; the tests' own pip installs too)
export PIP_COMPILE=0
if [ "${KP_SKIP_SETUP:-0}" = 1 ] && [ -z "${CI:-}" ] && [ -x .venv/bin/python ]; then
  echo "KP_SKIP_SETUP=1: using the installed .venv, nothing is installed"
else
  bash scripts/setup.sh
fi
# shellcheck disable=SC1091
. .venv/bin/activate
# Python caches each module's bytecode on its first import (nothing is compiled at install):
# where PYTHONDONTWRITEBYTECODE is set, every fresh interpreter of the suite (a few hundred)
# would compile torch, transformers and the project again
unset PYTHONDONTWRITEBYTECODE
step "check: ruff"
ruff check src plugins tests benchmarks
step "check: mypy"
mypy
step "check: the docs site (mkdocs build --strict)"
# the docs site (mkdocs.yml): every page builds, links and API references resolve
NO_MKDOCS_2_WARNING=1 python -m mkdocs build --strict --quiet
# two workers: the machine has two cores (pytest-xdist, from the test extra); an idle worker
# takes tests queued for the other (worksteal), so one long test does not leave a core idle
step "tests: pytest on 2 workers"
python -m pytest -n 2 --dist worksteal --durations=20 tests plugins/*/tests "$@"
echo "scripts/test.sh: passed in $((SECONDS / 60)) min $((SECONDS % 60)) s"
