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
# the core and everything under plugins/, in one install run; KP_CORE_EXTRAS=a,b adds those
# extras of the core to it, KP_UV=PATH has that uv install it instead of pip (scripts/setup.sh)
editables=(-e ".${KP_CORE_EXTRAS:+[$KP_CORE_EXTRAS]}")
for plugin in plugins/*/; do
  if [ -f "$plugin/pyproject.toml" ]; then
    editables+=(-e "$plugin")
  fi
done
if [ -n "${KP_UV:-}" ]; then
  "$KP_UV" pip install -q --python "$(command -v python)" "${editables[@]}"
else
  # built by the hatchling installed here first: an isolated build environment per
  # distribution costs ~40 s of CPU for nine
  python -m pip install -q "hatchling>=1.18" editables
  python -m pip install -q --no-build-isolation "${editables[@]}"
fi
