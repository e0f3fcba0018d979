"""Cost of a signature check per load.

Builds a small signed local kernel (a private Sigstore instance made on the spot, as the
test suite does: no network), then times, in this process, the best of ``--runs`` rounds:

* ``load``: ``kernel_plugins.load(folder)`` of an unsigned copy (no signature work at all);
* ``load, bundle present``: a signed copy with no trust root available, as for most users
  (the bundle is noticed and left unchecked);
* ``load, signature required``: ``require_signature=True`` with the trust-root file
  (bundle, certificate chain, SCT, log entry and signer checked on every load);
* ``check_bundle``: the signature check alone;
* ``first check``: the first check in a fresh process, which imports sigstore.

Every load imports the kernel again (the identical build is returned from the registry,
after the verification that is being timed).

    python benchmarks/signature_cost.py [--runs 20]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def _best(fn: object, runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()  # type: ignore[operator]
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> int:
    """Print one line per figure (milliseconds) and the JSON document."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    args = parser.parse_args()

    import kernel_plugins
    from kernel_plugins import signatures
    from tests.signatures.conftest import KC, kernel, sign_variant
    from tests.signatures.instance import Instance

    tmp = Path(tempfile.mkdtemp(prefix="kp-sigcost-"))
    inst = Instance("bench")
    root = inst.write_root(tmp / "trusted_root.json")
    sign_variant(kernel(tmp / "plain"), None)
    raw = sign_variant(kernel(tmp / "signed"), inst)
    bundle = (tmp / "signed/build/torch-cpu" / signatures.BUNDLE_NAME).read_bytes()
    cold = subprocess.run(
        [sys.executable, "-c", "import sys, time; sys.path.insert(0, sys.argv[1]); "
         "from kernel_plugins import signatures as s; b = open(sys.argv[2], 'rb').read(); "
         "m = open(sys.argv[3], 'rb').read(); t = time.perf_counter(); "
         "r = s.check_bundle(m, b, variant='v', org=None, trusted_root=sys.argv[4]); "
         "assert r.ok, r; print(time.perf_counter() - t)",
         str(ROOT), str(tmp / "signed/build/torch-cpu" / signatures.BUNDLE_NAME),
         str(tmp / "signed/build/torch-cpu/metadata.json"), str(root)],
        capture_output=True, text=True, check=True,
    )
    figures = {
        "load": _best(lambda: kernel_plugins.load(tmp / "plain", device="cpu"), args.runs),
        "load, bundle present": _best(lambda: kernel_plugins.load(tmp / "signed", device="cpu"), args.runs),
        "load, signature required": _best(lambda: kernel_plugins.load(
            tmp / "signed", device="cpu", require_signature=True, trusted_root=root), args.runs),
        "check_bundle": _best(lambda: signatures.check_bundle(
            raw, bundle, variant="v", org=None, trusted_root=root), args.runs),
        "first check": float(cold.stdout.strip()),
    }
    assert signatures.check_bundle(raw, bundle, variant="v", org=None, trusted_root=root).signer.startswith(KC)
    for name, seconds in figures.items():
        print(f"{name:28} {seconds * 1000:8.2f} ms")
    print(json.dumps({"schema": "signature-cost/1", "seconds": figures}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
