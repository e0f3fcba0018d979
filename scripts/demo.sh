#!/usr/bin/env bash
# Install everything (scripts/setup.sh), then show the installed backends and load
# the example kernel shipped in examples/relu for this machine's device.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
# shellcheck disable=SC1091
. .venv/bin/activate
kernel-plugins list-backends
kernel-plugins variants ./examples/relu
kernel-plugins load ./examples/relu
# Time it against its reference and check every output.
kernel-plugins benchmark ./examples/relu --iterations 20 --no-progress
# The same listing with an MLU device emulated on the CPU (labelled EMULATED: not hardware).
kernel-plugins list-backends --emulate mlu
