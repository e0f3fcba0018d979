#!/usr/bin/env bash
# A tour of kernel-plugins: install what it needs to run (scripts/install.sh, nothing
# test-only), show the installed backends, then resolve, load and benchmark the example
# kernel in examples/relu for this machine's device. DEMO_SKIP_INSTALL=1 skips the
# install step when .venv is ready (or, without .venv, uses the kernel-plugins on PATH).
set -euo pipefail
cd "$(dirname "$0")/.."

step() {
  printf '\n== %s ==\n' "$*"
}

if [ "${DEMO_SKIP_INSTALL:-0}" != 1 ]; then
  step "1. Install torch (CPU), kernel-plugins, its backend plugins and its tools into .venv"
  bash scripts/install.sh
fi
if [ -f .venv/bin/activate ]; then
  # shellcheck disable=SC1091
  . .venv/bin/activate
elif ! command -v kernel-plugins >/dev/null; then
  echo "error: no .venv here and no kernel-plugins on PATH; run: bash scripts/install.sh" >&2
  exit 1
fi

step "2. Installed backends, and why each has a device or not"
kernel-plugins list-backends

step "3. Which build variants of examples/relu fit this device, and why the others do not"
kernel-plugins variants ./examples/relu

step "4. Load the best variant; where it came from and what it offers"
kernel-plugins load ./examples/relu

step "5. Time it (median) against its reference, plain torch.relu from the kernel's __benchmark__ (ref median), and check every output"
kernel-plugins benchmark ./examples/relu --iterations 20 --no-progress

step "6. The same listing with an MLU emulated on the CPU (labelled EMULATED: not hardware)"
kernel-plugins --emulate mlu list-backends
