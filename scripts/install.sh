#!/usr/bin/env bash
# Install kernel-plugins into .venv as the README's Install section does: torch (the one
# installed, else the CPU build: scripts/install-torch.sh), the core, every backend plugin
# and the three tool distributions under plugins/ (testing: --emulate; check; benchmark),
# all editable. Nothing test-only: scripts/setup.sh
# adds the test tools and the loopback Hub server on top of this.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PYTHON" -m venv .venv
fi
# shellcheck disable=SC1091
. .venv/bin/activate
# torch first: an installed one is kept, else the CPU build (the core does not require torch,
# so nothing below installs or replaces it)
bash scripts/install-torch.sh
# the core and everything under plugins/, in one pip run
editables=(-e .)
for plugin in plugins/*/; do
  if [ -f "$plugin/pyproject.toml" ]; then
    editables+=(-e "$plugin")
  fi
done
python -m pip install -q "${editables[@]}"
