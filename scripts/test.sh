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
# tests/reference/test_hf_kernels_compat.py runs the reference kernels under HF kernels
# 0.17.2 in a second environment (benchmarks/.work/venv-kernels, created once, reused)
KERNEL_PLUGINS_TEST_HF_KERNELS_PYTHON="$(python -c 'import sys; sys.path.insert(0, "benchmarks")
from harness.envs import ensure_kernels_env
print(ensure_kernels_env(say=lambda m: print(m, file=sys.stderr)).python)')"
export KERNEL_PLUGINS_TEST_HF_KERNELS_PYTHON
python -m pytest tests plugins/*/tests "$@"
