#!/usr/bin/env bash
# torch for the active environment, as the README's Install section says. An installed torch
# (a vendor's build, say) is kept, whatever its version: nothing here replaces it. Otherwise
# the CPU build from the PyTorch CPU index; when that index cannot be reached within a few
# seconds (a machine that has only a local package index), what the configured indexes offer.
set -euo pipefail
TORCH=${KP_TORCH:-torch==2.13.0}
INDEX=${KP_TORCH_CPU_INDEX:-https://download.pytorch.org/whl/cpu}
if python -c 'import importlib.util, sys; sys.exit(importlib.util.find_spec("torch") is None)'; then
  echo "torch $(python -c 'import torch; print(torch.__version__)') is installed: kept as it is"
elif python - "$INDEX" <<'PROBE'
import sys, urllib.request
try:
    urllib.request.urlopen(sys.argv[1].rstrip("/") + "/torch/", timeout=3).close()
except Exception:
    sys.exit(1)
PROBE
then
  echo "installing $TORCH, the CPU build, from $INDEX"
  python -m pip install -q "$TORCH" --index-url "$INDEX"
else
  echo "the PyTorch CPU index $INDEX cannot be reached: installing $TORCH from the configured package index"
  python -m pip install -q "$TORCH"
fi
