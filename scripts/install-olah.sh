#!/usr/bin/env bash
# Install olah (a self-hosted Hugging Face Hub mirror) into its own virtual environment.
#
# The Hub tests (tests/hub/) start olah on 127.0.0.1 to exercise the real download path.
# olah pins its own huggingface_hub range, so it lives in a venv separate from the project's.
#
# Usage: scripts/install-olah.sh [VENV_DIR]
#   VENV_DIR defaults to $KERNEL_PLUGINS_OLAH_VENV, else <repo>/.olah-venv.
#   PYTHON selects the interpreter used to create the venv (default: python3).
# Idempotent: does nothing when the pinned olah is already installed there.
set -euo pipefail

OLAH_VERSION="0.5.4"
repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="${1:-${KERNEL_PLUGINS_OLAH_VENV:-$repo_root/.olah-venv}}"
python="${PYTHON:-python3}"

installed_version() {
    "$venv/bin/python" - <<'PY' 2>/dev/null || true
from importlib.metadata import version
print(version("olah"))
PY
}

if [ -x "$venv/bin/olah-cli" ] && [ "$(installed_version)" = "$OLAH_VERSION" ]; then
    echo "olah $OLAH_VERSION already installed in $venv"
    exit 0
fi

if [ ! -x "$venv/bin/python" ]; then
    echo "creating virtual environment $venv"
    "$python" -m venv --without-pip "$venv"
fi
# uv (KP_UV, scripts/setup.sh) or the pip of $python (pip >= 22.3: --python) installs into it:
# no pip of its own (~6 s of CPU)
if [ -n "${KP_UV:-}" ]; then
    "$KP_UV" pip install --quiet --python "$venv/bin/python" "olah==$OLAH_VERSION"
else
    "$python" -m pip --python "$venv/bin/python" install --quiet --no-compile "olah==$OLAH_VERSION"
fi
if [ ! -x "$venv/bin/olah-cli" ]; then
    echo "error: olah-cli not found in $venv/bin after installing olah==$OLAH_VERSION" >&2
    exit 1
fi
echo "olah $OLAH_VERSION installed in $venv (olah-cli: $venv/bin/olah-cli)"
